"""A standalone OpenStack Placement service."""

"""placement-apply: provider trees described in a file (nova's
provider.yaml, extended), applied over the REST API (placement.cmd.apply).
"""

"""JSON schemas for request bodies and query strings, one module per resource."""

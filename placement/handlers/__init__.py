"""HTTP handlers: one module per API resource, falcon resource classes."""

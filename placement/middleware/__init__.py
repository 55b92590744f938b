"""Cross-cutting request handling: WSGI wrappers and falcon middleware."""

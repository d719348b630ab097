"""API tests: notebook."""

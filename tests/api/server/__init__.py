"""API tests: server."""

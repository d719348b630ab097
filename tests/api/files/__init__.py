"""API tests: files."""

"""API tests: runs."""

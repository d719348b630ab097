"""API tests: python."""

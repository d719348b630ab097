"""API tests: inplace."""

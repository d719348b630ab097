"""API tests: artifact."""

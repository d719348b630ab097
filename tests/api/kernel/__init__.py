"""API tests: kernel."""

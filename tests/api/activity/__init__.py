"""API tests: activity."""

"""API tests: mcp."""

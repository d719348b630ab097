"""Unit tests of ``jupyter_xcsh.mcp``."""

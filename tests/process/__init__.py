"""Tests that start programs of their own (child Pythons, other servers)."""

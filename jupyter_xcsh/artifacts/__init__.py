"""Artifacts: files kept for callers to read later."""

"""The artifact tool: the files kept for callers to read later."""

"""Checks of the repository itself: its documents, its benchmark scripts."""

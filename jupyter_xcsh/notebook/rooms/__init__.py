"""Collaboration rooms: a notebook's live shared document, its undo, the agent's presence."""

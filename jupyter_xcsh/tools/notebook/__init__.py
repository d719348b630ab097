"""The notebook tool: read, find, change, create, changes, undo."""

"""The notebook tool: a pure cell-edit core, a read view, and the store that saves notebooks."""

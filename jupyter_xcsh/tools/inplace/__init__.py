"""The run-in-place tool: a notebook's cells run in the notebook's own kernel."""

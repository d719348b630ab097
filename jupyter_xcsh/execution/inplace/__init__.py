"""The in-place engine: a notebook's cells run in its own kernel, outputs written back into it."""

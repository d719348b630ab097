"""The edit core: a request's changes applied to cells (pure)."""

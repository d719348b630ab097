"""Background runs: calls that run code, in a task the requests that follow them find by id."""

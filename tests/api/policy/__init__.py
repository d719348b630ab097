"""API tests: policy (agent policies, approvals, ask-before-run cells)."""

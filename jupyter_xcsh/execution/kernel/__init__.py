"""The kernel core both engines share: connections, messages, one cell run, stdin, cancellation."""

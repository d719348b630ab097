"""The server's events: the tools' activity, their schemas (``schemas/``), emission, validation."""

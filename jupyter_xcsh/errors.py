"""Domain errors of jupyter-xcsh; handlers alone turn them into HTTP statuses."""

from __future__ import annotations


class XcshError(Exception):
    """Base of every error a caller can cause; ``message`` is shown to the caller verbatim."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(XcshError):
    """The request itself is wrong: a bad field, a missing field, an index out of range."""


class NotFoundError(XcshError):
    """The thing asked for does not exist (or may not be revealed)."""


class RefusedError(XcshError):
    """The request would leave the contents root or break the server's policy."""


class InvalidDocumentError(XcshError):
    """The stored document cannot be used: not JSON, or not a notebook."""

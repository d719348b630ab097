"""Domain errors of jupyter-xcsh; one place (``status_for``, here) turns them into HTTP statuses.

The tools raise these whoever calls them (REST, MCP, the lab); each transport maps them once:
REST to a status and a JSON body, MCP to a tool result with ``isError``.
"""

from __future__ import annotations

from typing import Any


class XcshError(Exception):
    """Base of every error a caller can cause; ``message`` is shown to the caller verbatim.

    ``reason`` (a short machine-readable word) and ``details`` (a JSON object) travel with the
    message in the error body when set.
    """

    def __init__(
        self, message: str, *, reason: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.details = details

    def body(self) -> dict[str, Any]:
        """The error as Jupyter's JSON error body ``{"message", "reason"}`` (+ ``details``)."""
        body: dict[str, Any] = {"message": self.message, "reason": self.reason}
        if self.details is not None:
            body["details"] = self.details
        return body


class InvalidRequestError(XcshError):
    """The request itself is wrong: a bad field, a missing field, an index out of range."""


class NotFoundError(XcshError):
    """The thing asked for does not exist (or may not be revealed)."""


class RefusedError(XcshError):
    """The request would leave the contents root or break the server's policy."""


class ForbiddenError(RefusedError):
    """The server's authorizer does not allow the caller this action."""


class ConflictError(XcshError):
    """The request met a state it cannot act on now: a stale read, a session waiting for input."""


class InvalidDocumentError(XcshError):
    """The stored document cannot be used: not JSON, or not a notebook."""


def forbidden(action: str, resource: str) -> ForbiddenError:
    """The error of a caller the authorizer refuses (jupyter_server's own wording)."""
    return ForbiddenError(f"User is not authorized to {action} on resource: {resource}.")


#: HTTP status for each domain error; anything not listed is a server fault (500).
ERROR_STATUS: dict[type[XcshError], int] = {
    InvalidRequestError: 400,
    RefusedError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    InvalidDocumentError: 422,
}


def status_for(error: XcshError) -> int:
    """Return the HTTP status a domain error maps to."""
    for cls in type(error).__mro__:
        if cls in ERROR_STATUS:
            return ERROR_STATUS[cls]
    return 500

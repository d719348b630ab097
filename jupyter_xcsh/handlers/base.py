"""Shared behaviour of every xcsh REST handler: services, the caller, JSON bodies, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.client import responses
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..errors import (
    ConflictError,
    InvalidDocumentError,
    InvalidRequestError,
    NotFoundError,
    RefusedError,
    XcshError,
)
from ..services import XcshServices
from ..tools.caller import Caller

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


class DomainHTTPError(web.HTTPError):
    """A domain error on its way to the client: its status, and its body written verbatim."""

    def __init__(self, error: XcshError) -> None:
        super().__init__(status_for(error), "%s", error.message)
        self.body = error.body()


class XcshAPIHandler(APIHandler):
    """An ``APIHandler`` receiving the extension's services through ``initialize``."""

    services: XcshServices

    def initialize(self, services: XcshServices) -> None:
        """Keep the services the extension app built once for every request."""
        self.services = services

    @property
    def caller(self) -> Caller:
        """The current user, with the server's authorizer asked on their behalf."""

        async def authorize(action: str, resource: str) -> bool:
            allowed = self.authorizer.is_authorized(self, self.current_user, action, resource)
            return bool(await ensure_async(allowed))

        return Caller(user=self.current_user, authorize=authorize)

    def json_body(self) -> dict[str, Any]:
        """Parse the request body as a JSON object, or fail with a 400 that says why."""
        raw = self.request.body
        if not raw:
            raise web.HTTPError(400, "Request body is empty; expected a JSON object")
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as e:
            raise web.HTTPError(400, f"Request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "Request body must be a JSON object")
        return body

    @contextmanager
    def domain_errors(self) -> Iterator[None]:
        """Turn the domain errors raised inside the block into HTTP errors with their body."""
        try:
            yield
        except XcshError as e:
            raise DomainHTTPError(e) from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Write an error as JSON with its exact message (and a domain error's whole body).

        jupyter_server writes ``HTTPError.log_message``, which tornado returns with every ``%``
        doubled when the error has no format arguments; the message is written as raised here.
        """
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if not isinstance(error, web.HTTPError):
            super().write_error(status_code, **kwargs)
            return
        if isinstance(error, DomainHTTPError):
            body = error.body
        else:
            # tornado < 6.5 has no get_message(); its log_message is then the plain text.
            get_message = getattr(error, "get_message", None)
            message = get_message() if get_message is not None else error.log_message
            body = {
                "message": message or responses.get(status_code, "Unknown HTTP Error"),
                "reason": error.reason,
            }
        self.set_header("Content-Type", "application/json")
        self.log.warning("wrote error: %r", body["message"])
        self.finish(json.dumps(body))

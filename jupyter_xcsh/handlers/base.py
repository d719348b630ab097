"""Shared behaviour of every xcsh REST handler."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..errors import (
    InvalidDocumentError,
    InvalidRequestError,
    NotFoundError,
    RefusedError,
    XcshError,
)

#: HTTP status for each domain error; anything not listed is a server fault (500).
ERROR_STATUS: dict[type[XcshError], int] = {
    InvalidRequestError: 400,
    RefusedError: 403,
    NotFoundError: 404,
    InvalidDocumentError: 422,
}


def status_for(error: XcshError) -> int:
    """Return the HTTP status a domain error maps to."""
    for cls in type(error).__mro__:
        if cls in ERROR_STATUS:
            return ERROR_STATUS[cls]
    return 500


class XcshAPIHandler(APIHandler):
    """An ``APIHandler`` receiving its services through ``initialize`` and speaking JSON errors."""

    services: dict[str, Any]

    def initialize(self, **services: Any) -> None:
        """Keep the services the extension app built once for every request."""
        self.services = services

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
        """Turn the domain errors raised inside the block into HTTP errors with their message."""
        try:
            yield
        except XcshError as e:
            raise web.HTTPError(status_for(e), e.message) from None

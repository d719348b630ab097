"""``GET /api/xcsh/activity``: the calls the activity history kept (docs/contract.md §13)."""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..errors import InvalidRequestError, NotFoundError
from ..services import XcshServices
from .base import XcshAPIHandler

#: Most entries one page holds (and the default).
MAX_LIMIT = 1000
DEFAULT_LIMIT = 200

_DIGITS = re.compile(r"\A[0-9]{1,18}\Z")

HISTORY_OFF = (
    "The activity history is turned off on this server (c.XcshSettings.activity_history = False)"
)


class ActivityHandler(XcshAPIHandler):
    """``GET``: the kept calls, oldest first (200 ``{entries, cursor, more}``; 404 when off).

    ``?path=`` keeps the calls on one notebook, ``?since=<cursor>`` the calls after a page
    already read, ``?limit=`` bounds the page (1 to 1000, default 200).
    """

    auth_resource = "contents"

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """Answer a page of the activity history."""
        with self.domain_errors():
            history = self.services.activity.history
            path = self._argument("path")
            since = self._number("since", None, 0)
            limit = self._number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
            if history is None:
                raise NotFoundError(HISTORY_OFF)
            if path is not None:
                path = path.strip("/")
            page = await history.query(path, since, limit or DEFAULT_LIMIT)
            page["entries"] = [e for e in page["entries"] if self._visible(e.get("path"))]
        self.finish(json.dumps(page))

    def _argument(self, name: str) -> str | None:
        values = self.request.query_arguments.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise InvalidRequestError(f"{name} must be given once")
        return self.decode_argument(values[0], name=name)

    def _number(self, name: str, default: int | None, low: int, high: int = 2**62) -> int | None:
        value = self._argument(name)
        if value is None:
            return default
        if not _DIGITS.match(value) or not low <= int(value) <= high:
            bound = f"from {low} to {high}" if high < 2**62 else f"at least {low}"
            raise InvalidRequestError(f"{name} must be a whole number {bound}: {value!r}")
        return int(value)

    def _visible(self, path: Any) -> bool:
        """Whether the server shows ``path`` (a hidden file's calls are left out)."""
        if not isinstance(path, str):
            return True
        manager = self.contents_manager
        if getattr(manager, "allow_hidden", True):
            return True
        return not any(part.startswith(".") for part in path.split("/"))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the activity history's route."""
    return [(r"/api/xcsh/activity", ActivityHandler, {"services": services})]

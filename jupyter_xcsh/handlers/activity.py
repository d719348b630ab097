"""``GET /api/xcsh/activity``: the activity history's calls (docs/developers/contract.md §13)."""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.events.activity import CALL_ID
from jupyter_xcsh.events.history import REVIEW_STATES
from jupyter_xcsh.fields import known_fields
from jupyter_xcsh.handlers.base import XcshAPIHandler
from jupyter_xcsh.services import XcshServices

#: Most entries one page holds (and the default).
MAX_LIMIT = 1000
DEFAULT_LIMIT = 200

_DIGITS = re.compile(r"\A[0-9]{1,18}\Z")

#: Most calls one review names, and the longest cell id it takes.
MAX_REVIEW_CALLS = 1000
MAX_CELL_ID = 1024

#: The fields of a review's body and their JSON types.
REVIEW_FIELDS: dict[str, type] = {"path": str, "call_ids": list, "cell_id": str, "state": str}

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
            path = self.query_argument("path")
            since = self._number("since", None, 0)
            limit = self._number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
            if history is None:
                raise NotFoundError(HISTORY_OFF)
            if path is not None:
                path = path.strip("/")
            page = await history.query(path, since, limit or DEFAULT_LIMIT)
            page["entries"] = [e for e in page["entries"] if self._visible(e.get("path"))]
        self.finish(json.dumps(page))

    def _number(self, name: str, default: int | None, low: int, high: int = 2**62) -> int | None:
        value = self.query_argument(name)
        if value is None:
            return default
        if not _DIGITS.match(value) or not low <= int(value) <= high:
            bound = f"from {low} to {high}" if high < 2**62 else f"at least {low}"
            raise InvalidRequestError(f"{name} must be a whole number {bound}: {value!r}")
        return int(value)

    def _visible(self, path: Any) -> bool:
        """Whether the server shows ``path`` (a hidden file's calls are left out)."""
        return shown(self.contents_manager, path)


def shown(manager: Any, path: Any) -> bool:
    """Whether the contents manager shows ``path`` (hidden files are not, unless allowed)."""
    if not isinstance(path, str):
        return True
    if getattr(manager, "allow_hidden", True):
        return True
    return not any(part.startswith(".") for part in path.split("/"))


class ActivityReviewHandler(XcshAPIHandler):
    """``POST``: keep the person's review of calls (kept, undone, or theirs) in the history.

    Body ``{"path", "call_ids", "cell_id", "state"}``: the calls on the notebook ``path`` (or
    only their change to the cell ``cell_id``) are ``kept`` or ``undone``. ``GET
    /api/xcsh/activity`` then gives each entry's ``review``, so that a reloaded lab shows only
    the changes still to review. 200 ``{"reviewed": n}`` (the calls the history holds on that
    notebook); 404 when the history is off.
    """

    auth_resource = "contents"

    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        """Keep one review state."""
        with self.domain_errors():
            path, call_ids, cell_id, state = review_request(self.json_body())
            history = self.services.activity.history
            if history is None:
                raise NotFoundError(HISTORY_OFF)
            if not shown(self.contents_manager, path):
                raise NotFoundError(f"No such notebook: {path}")
            reviewed = await history.review(path, call_ids, cell_id, state)
        self.finish(json.dumps({"reviewed": reviewed}))


def review_request(body: dict[str, Any]) -> tuple[str, list[str], str | None, str]:
    """The fields of a review's body, checked: ``(path, call_ids, cell_id, state)``; else a 400."""
    given = known_fields(body, REVIEW_FIELDS, required=("path", "call_ids", "state"))
    path = given["path"].strip("/")
    if not path or any(part in ("", ".", "..") for part in path.split("/")):
        raise InvalidRequestError(f"path must be a notebook path of the contents root: {path!r}")
    call_ids = given["call_ids"]
    if not 1 <= len(call_ids) <= MAX_REVIEW_CALLS:
        raise InvalidRequestError(f"call_ids must hold 1 to {MAX_REVIEW_CALLS} call ids")
    for k, call_id in enumerate(call_ids):
        if not isinstance(call_id, str) or not CALL_ID.fullmatch(call_id):
            raise InvalidRequestError(f"call_ids[{k}] must be a call id (32 hex digits)")
    cell_id = given.get("cell_id")
    if cell_id is not None and not 1 <= len(cell_id) <= MAX_CELL_ID:
        raise InvalidRequestError(f"cell_id must be 1 to {MAX_CELL_ID} characters")
    state = given["state"]
    if state not in REVIEW_STATES:
        raise InvalidRequestError(f"state must be kept, undone or yours, got {state!r}")
    return path, list(dict.fromkeys(call_ids)), cell_id, state


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the activity history's routes."""
    return [
        (r"/api/xcsh/activity", ActivityHandler, {"services": services}),
        (r"/api/xcsh/activity/review", ActivityReviewHandler, {"services": services}),
    ]

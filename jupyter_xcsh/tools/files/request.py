"""A files tool request: the body's fields checked and typed. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.fields import action_fields
from jupyter_xcsh.notebook.edit.request import MAX_PATTERN_CHARS

ACTIONS = ("list", "read", "write", "mkdir", "rename", "delete", "search")
#: The actions that change the contents root (``write`` on ``contents``); the others read.
CHANGE_ACTIONS = ("write", "mkdir", "rename", "delete")

#: Every field of a request body, and its JSON type.
FIELDS: dict[str, type] = {
    "action": str,
    "path": str,
    "new_path": str,
    "glob": str,
    "limit": int,
    "start_line": int,
    "end_line": int,
    "max_chars": int,
    "content": str,
    "expected_hash": str,
    "old_content": str,
    "pattern": str,
    "regex": bool,
    "max_files": int,
}
# Which optional fields each action accepts; anything else is a caller's mistake worth a 400.
_ACCEPTED = {
    "list": {"glob", "limit"},
    "read": {"start_line", "end_line", "max_chars"},
    "write": {"content", "expected_hash", "old_content"},
    "mkdir": set(),
    "rename": {"new_path", "expected_hash"},
    "delete": {"expected_hash"},
    "search": {"pattern", "regex", "glob", "limit", "max_files", "max_chars"},
}
#: Actions whose ``path`` may be left out (the contents root).
_ROOT_BY_DEFAULT = ("list", "search")
#: A file's ``hash`` as ``read`` answers it.
_HASH = re.compile(r"[0-9a-f]{16}")
#: Longest ``glob``, in characters.
MAX_GLOB_CHARS = 1000


@dataclass(frozen=True)
class FilesRequest:
    """A validated files tool request (fields not given are None)."""

    action: str
    path: str = ""
    new_path: str | None = None
    glob: str | None = None
    limit: int | None = None
    start_line: int | None = None
    end_line: int | None = None
    max_chars: int | None = None
    content: str | None = None
    expected_hash: str | None = None
    old_content: str | None = None
    pattern: str | None = None
    regex: bool | None = None
    max_files: int | None = None

    @property
    def changes(self) -> bool:
        """Whether the request changes the contents root (needs ``write`` on ``contents``)."""
        return self.action in CHANGE_ACTIONS


def parse_request(body: dict[str, Any]) -> FilesRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    action, body = action_fields(body, FIELDS, _ACCEPTED, always=("action", "path"))
    if body.get("path", "") == "" and action not in _ROOT_BY_DEFAULT:
        raise InvalidRequestError(f"path is required for {action} action")
    for name in ("limit", "start_line", "end_line", "max_chars", "max_files"):
        if name in body and body[name] < 1:
            raise InvalidRequestError(f"{name} must be at least 1, got {body[name]}")
    if "start_line" in body and "end_line" in body and body["end_line"] < body["start_line"]:
        raise InvalidRequestError(
            f"end_line ({body['end_line']}) is before start_line ({body['start_line']})"
        )
    if "expected_hash" in body and not _HASH.fullmatch(body["expected_hash"]):
        raise InvalidRequestError(
            "expected_hash must be 16 lowercase hex digits (the hash read returns), "
            f"got {body['expected_hash']!r}"
        )
    if action == "write" and "content" not in body:
        raise InvalidRequestError("content is required for write action")
    if body.get("old_content") == "":
        raise InvalidRequestError("old_content must not be empty")
    if action == "rename" and not body.get("new_path"):
        raise InvalidRequestError("new_path is required for rename action")
    if action == "search":
        pattern = body.get("pattern")
        if pattern is None:
            raise InvalidRequestError("pattern is required for search action")
        if pattern == "":
            raise InvalidRequestError("pattern must not be empty")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise InvalidRequestError(
                f"pattern must be at most {MAX_PATTERN_CHARS} characters, got {len(pattern)}"
            )
    glob = body.get("glob")
    if glob is not None and not 0 < len(glob) <= MAX_GLOB_CHARS:
        raise InvalidRequestError(f"glob must be 1 to {MAX_GLOB_CHARS} characters")
    return FilesRequest(**body)

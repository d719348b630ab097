"""A notebook tool request: its fields checked and typed (docs/developers/contract.md §2, §3). Pure.

And the request's stale-edit protection: "only if the cell is still what I read" (§3). A request
may say which state it expects — the addressed cell's ``sourceHash``, the notebook's
``revision``, or a snippet (``old_content``) that must occur exactly once in the cell. The
checks run on the state the change is applied to, in the same step (under the notebook's lock,
or synchronously before one transaction on the live document), so check and change are atomic.
A 409 carries the cell as it is now, so the caller can retry without another read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_xcsh.errors import ConflictError, InvalidRequestError
from jupyter_xcsh.fields import action_fields
from jupyter_xcsh.notebook.counts import check_execution_count
from jupyter_xcsh.notebook.model import CellDocument, notebook_revision, revision_of, source_hash

ACTIONS = ("edit", "insert", "delete", "move", "read", "find", "create")
CHANGE_ACTIONS = ("edit", "insert", "delete", "move")
#: The tool's actions served before a request is parsed here (``tools/notebook/tool.py``): an
#: invalid action's message lists them with the others.
OTHER_ACTIONS = ("changes",)
CELL_TYPES = ("code", "markdown", "raw")

#: Every field of a request body, and its JSON type (``changes`` only as null: see batch.py).
FIELDS = {
    "action": str,
    "notebook_path": str,
    "cell_index": int,
    "cell_id": str,
    "content": str,
    "cell_type": str,
    "to_index": int,
    "end_index": int,
    "max_chars": int,
    "expected_source_hash": str,
    "expected_revision": str,
    "old_content": str,
    "cell": dict,
    "after_cell_id": str,
    "before_cell_id": str,
    "to_after_cell_id": str,
    "to_before_cell_id": str,
    "pattern": str,
    "regex": bool,
    "changes": list,
    "since_revision": str,  # the changes action's (tools/notebook/tool.py), null elsewhere
    "execution_count": int,
    "kernel_name": str,  # create's
    "images": bool,  # read's
}
_STALE_CHECKS = {"expected_source_hash", "expected_revision"}
#: A ``sourceHash`` or ``revision`` as responses carry them.
_HASH = re.compile(r"[0-9a-f]{16}")
# Which optional fields each action accepts; anything else is a caller's mistake worth a 400.
# An insert by index addresses no existing cell, so only the notebook's revision (or a whole
# cell's own id, see ``guarded``) can guard it; next to a cell id, that cell's source hash can.
_ACCEPTED = {
    "edit": {
        "cell_index",
        "cell_id",
        "execution_count",
        "content",
        "cell_type",
        "old_content",
        "cell",
        *_STALE_CHECKS,
    },
    "insert": {
        "cell_index",
        "after_cell_id",
        "before_cell_id",
        "content",
        "cell_type",
        "cell",
        *_STALE_CHECKS,
    },
    "delete": {"cell_index", "cell_id", *_STALE_CHECKS},
    "move": {
        "cell_index",
        "cell_id",
        "to_index",
        "to_after_cell_id",
        "to_before_cell_id",
        *_STALE_CHECKS,
    },
    "read": {"cell_index", "cell_id", "execution_count", "end_index", "max_chars", "images"},
    "find": {"pattern", "regex", "cell_type", "cell_index", "end_index", "max_chars"},
    "create": {"kernel_name"},
}
#: Where an insert goes, and where a move takes its cell: exactly one of each is given.
INSERT_PLACES = ("cell_index", "after_cell_id", "before_cell_id")
MOVE_PLACES = ("to_index", "to_after_cell_id", "to_before_cell_id")
#: The fields that name a cell by its id. An empty id names no cell: it is refused (400) like
#: any other malformed value, never read as "not given".
ID_FIELDS = ("cell_id", "after_cell_id", "before_cell_id", "to_after_cell_id", "to_before_cell_id")
#: Longest ``pattern`` of a find, in characters.
MAX_PATTERN_CHARS = 1000


def is_batch(body: dict[str, Any]) -> bool:
    """Whether a request body is a batch (it has ``changes``: ``batch.py``)."""
    return body.get("changes") is not None


@dataclass(frozen=True)
class NotebookRequest:
    """A validated notebook tool request."""

    action: str
    notebook_path: str
    cell_index: int | None = None
    cell_id: str | None = None
    content: str | None = None
    cell_type: str | None = None
    to_index: int | None = None
    end_index: int | None = None
    max_chars: int | None = None
    expected_source_hash: str | None = None
    expected_revision: str | None = None
    old_content: str | None = None
    #: A whole cell to write instead of ``content``/``cell_type`` (a revert puts one back).
    cell: dict[str, Any] | None = None
    #: insert: next to the cell with this id, instead of at ``cell_index``.
    after_cell_id: str | None = None
    before_cell_id: str | None = None
    #: move: next to the cell with this id, instead of to ``to_index``.
    to_after_cell_id: str | None = None
    to_before_cell_id: str | None = None
    #: find: what to look for in cell sources, literally or as a Python regex.
    pattern: str | None = None
    regex: bool | None = None
    #: edit, read: the code cell whose execution count (``[12]``) this is.
    execution_count: int | None = None
    #: create: the kernel spec the new notebook names (default: the server's default).
    kernel_name: str | None = None
    #: read: the image outputs of the cells read come back as images (within the budget).
    images: bool | None = None

    @property
    def changes(self) -> bool:
        """Whether the request modifies the notebook (a write) rather than reading it."""
        return self.action in CHANGE_ACTIONS

    @property
    def anchor(self) -> str | None:
        """insert: the id of the cell it goes next to (``after_cell_id``/``before_cell_id``)."""
        return self.after_cell_id if self.after_cell_id is not None else self.before_cell_id

    @property
    def move_anchor(self) -> str | None:
        """move: the id of the cell it goes next to (``to_after_cell_id``/``to_before_cell_id``)."""
        if self.to_after_cell_id is not None:
            return self.to_after_cell_id
        return self.to_before_cell_id

    @property
    def guarded(self) -> bool:
        """Whether the request says which state it expects.

        A source hash or a revision; or, for an insert of a whole cell with an id (a revert of a
        delete), that no cell has that id (a 409 when one has).
        """
        if self.expected_source_hash is not None or self.expected_revision is not None:
            return True
        return self.action == "insert" and isinstance((self.cell or {}).get("id"), str)


def check_expected(name: str, value: str) -> None:
    """Refuse an ``expected_source_hash``/``expected_revision`` that no response could carry."""
    if not _HASH.fullmatch(value):
        kind = "a sourceHash" if name == "expected_source_hash" else "a revision"
        raise InvalidRequestError(
            f"{name} must be 16 lowercase hex digits ({kind} from an earlier response), "
            f"got {value!r}"
        )


def _insert_next_to(action: str, body: dict[str, Any]) -> None:
    if action == "insert" and "cell_id" in body:
        raise InvalidRequestError("Use after_cell_id or before_cell_id to insert next to a cell")


def parse_request(body: dict[str, Any]) -> NotebookRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    action, body = action_fields(
        body,
        FIELDS,
        _ACCEPTED,
        always=("action", "notebook_path"),
        first=_insert_next_to,
        more_actions=OTHER_ACTIONS,
    )
    path = body.get("notebook_path")
    if path is None or path == "":
        raise InvalidRequestError("notebook_path is required")
    for name in ("cell_index", "to_index", "end_index"):
        if name in body and body[name] < 0:
            raise InvalidRequestError(f"{name} must not be negative, got {body[name]}")
    if "max_chars" in body and body["max_chars"] < 1:
        raise InvalidRequestError(f"max_chars must be positive, got {body['max_chars']}")
    for name in sorted(_STALE_CHECKS & body.keys()):
        check_expected(name, body[name])
    for name in ("old_content", "kernel_name", *ID_FIELDS):
        if body.get(name) == "":
            raise InvalidRequestError(f"{name} must not be empty")
    cell_type = body.get("cell_type")
    if cell_type is not None and cell_type not in CELL_TYPES:
        raise InvalidRequestError(
            f"Invalid cell_type: {cell_type} (expected one of code, markdown, raw)"
        )
    if "cell" in body and body.keys() & {"content", "cell_type", "old_content"}:
        raise InvalidRequestError("cell cannot be combined with content, cell_type or old_content")
    if action in ("edit", "insert") and "content" not in body and "cell" not in body:
        raise InvalidRequestError(f"Content is required for {action} action")
    if "execution_count" in body:
        check_execution_count(body["execution_count"])
        if "cell_index" in body or "cell_id" in body:
            raise InvalidRequestError(
                "Give one of cell_index, cell_id or execution_count to address a cell"
            )
    elif action == "edit" and "cell_index" not in body and "cell_id" not in body:
        raise InvalidRequestError("cell_index, cell_id or execution_count is required for edit")
    if action in ("delete", "move") and "cell_index" not in body and "cell_id" not in body:
        raise InvalidRequestError(f"cell_index or cell_id is required for {action} action")
    if action == "insert":
        _one_place(body, action, INSERT_PLACES)
        if "expected_source_hash" in body and "cell_index" in body:
            raise InvalidRequestError(
                "expected_source_hash on an insert guards the cell it goes next to: "
                "give after_cell_id or before_cell_id"
            )
    if action == "move":
        _one_place(body, action, MOVE_PLACES)
    if action == "find":
        _check_pattern(body.get("pattern"))
    return NotebookRequest(**body)


def _one_place(body: dict[str, Any], action: str, places: tuple[str, ...]) -> None:
    """Refuse (400) a request giving none, or more than one, of ``places``."""
    given = [name for name in places if name in body]
    if len(given) == 1:
        return
    if not given:
        raise InvalidRequestError(
            f"{places[0]}, {places[1]} or {places[2]} is required for {action} action"
        )
    raise InvalidRequestError(
        f"Give one of {places[0]}, {places[1]} or {places[2]} for {action} action"
    )


def _check_pattern(pattern: str | None) -> None:
    if pattern is None:
        raise InvalidRequestError("pattern is required for find action")
    if pattern == "":
        raise InvalidRequestError("pattern must not be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidRequestError(
            f"pattern must be at most {MAX_PATTERN_CHARS} characters, got {len(pattern)}"
        )


#: Values of ``XcshSettings.require_preconditions``.
POLICIES = ("never", "index", "always")


class Expectations(Protocol):
    """What a request expects of the notebook: a notebook tool change, or a run in place."""

    @property
    def notebook_path(self) -> str:
        """The notebook as the caller named it (for messages)."""

    @property
    def expected_source_hash(self) -> str | None:
        """The ``sourceHash`` the addressed cell must still have."""

    @property
    def expected_revision(self) -> str | None:
        """The ``revision`` the notebook must still have."""


def current_cell(document: CellDocument, index: int | None) -> dict[str, Any]:
    """The addressed cell as it is now, for a 409 body (cell fields null when there is none)."""
    keys = document.cell_keys()
    details: dict[str, Any] = {
        "cellIndex": None,
        "cellId": None,
        "cellType": None,
        "cellSource": None,
        "sourceHash": None,
        "revision": notebook_revision(keys),
        "totalCells": len(keys),
    }
    if index is not None and 0 <= index < len(keys):
        cell = document.cells[index]
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        details.update(
            cellIndex=index,
            cellId=keys[index].cell_id,
            cellType=keys[index].cell_type,
            cellSource=source if isinstance(source, (str, list)) else "",
            sourceHash=source_hash(keys[index].source),
        )
    return details


def check_revision(document: CellDocument, request: Expectations, index: int | None) -> None:
    """Raise a 409 ``stale_notebook`` unless the notebook has the revision the caller expects."""
    check_notebook_revision(document, request.expected_revision, request.notebook_path, index)


def check_notebook_revision(
    document: CellDocument, expected: str | None, path: str, index: int | None = None
) -> None:
    """Raise a 409 ``stale_notebook`` unless the notebook's revision is ``expected`` (if given).

    ``index`` is the cell the 409's ``details`` describe (none: only the notebook's state).
    """
    if expected is None:
        return
    found = revision_of(document)
    if found != expected:
        raise _stale(
            document,
            index,
            "stale_notebook",
            f"Notebook changed since it was read (expected revision {expected}, found {found}): "
            f"{path}",
        )


def check_source(document: CellDocument, request: Expectations, index: int) -> None:
    """Raise a 409 ``stale_cell`` unless cell ``index`` has the source hash the caller expects."""
    expected = request.expected_source_hash
    if expected is None:
        return
    found = source_hash(document.cell_keys()[index].source)
    if found != expected:
        raise _stale(
            document,
            index,
            "stale_cell",
            f"Cell {index} changed since it was read (expected source hash {expected}, "
            f"found {found}) in {request.notebook_path}",
        )


def _stale(document: CellDocument, index: int | None, reason: str, message: str) -> ConflictError:
    """A 409 ``reason`` whose details are the addressed cell as it is now."""
    return ConflictError(message, reason=reason, details=current_cell(document, index))


def _occurrences(text: str, snippet: str) -> int:
    """How many times ``snippet`` occurs in ``text``, overlapping occurrences included."""
    count, start = 0, text.find(snippet)
    while start != -1:
        count += 1
        start = text.find(snippet, start + 1)
    return count


def replace_once(document: CellDocument, request: NotebookRequest, index: int) -> str:
    """Cell ``index``'s source with the one occurrence of ``old_content`` replaced by ``content``.

    Absent: 409 ``stale_cell`` (the cell no longer holds what the caller read); more than once:
    400 (the caller must quote more of the cell).
    """
    snippet, content = request.old_content, request.content
    assert snippet is not None and content is not None  # parse_request guarantees both
    source = document.cell_keys()[index].source
    count = _occurrences(source, snippet)
    path = request.notebook_path
    if count == 0:
        raise ConflictError(
            f"old_content not found in cell {index} of {path}",
            reason="stale_cell",
            details=current_cell(document, index),
        )
    if count > 1:
        raise InvalidRequestError(f"old_content occurs {count} times in cell {index} of {path}")
    return source.replace(snippet, content, 1)


def require_preconditions(request: NotebookRequest, policy: str) -> None:
    """Refuse (400) a change without a precondition where the server's policy asks for one.

    ``policy`` is ``XcshSettings.require_preconditions``: ``never``, ``index`` (changes
    addressed by index — an insert is, unless it goes next to a cell id) or ``always``.
    """
    if not request.changes or request.guarded or policy == "never":
        return
    by_id = request.anchor if request.action == "insert" else request.cell_id
    if policy == "index" and by_id is not None:
        return
    # An insert by index addresses no cell: only the notebook's revision can guard it.
    needs = (
        "expected_revision"
        if request.action == "insert" and request.anchor is None
        else "expected_source_hash or expected_revision"
    )
    scope = "Changes addressed by cell_index need" if policy == "index" else "Changes need"
    raise InvalidRequestError(
        f'{scope} {needs} (require_preconditions is "{policy}"): {request.notebook_path}'
    )

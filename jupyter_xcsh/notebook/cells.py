"""The notebook tool's pure core: validate a request and apply it to a notebook document.

No I/O here: JSON in, JSON out. The store loads the document, calls :func:`apply_change`, and
saves the text only when the change succeeded, so a failed request never touches the file.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRequestError, NotFoundError
from .document import NotebookDocument

ACTIONS = ("edit", "insert", "delete", "move", "read")
CHANGE_ACTIONS = ("edit", "insert", "delete", "move")
CELL_TYPES = ("code", "markdown", "raw")

_FIELDS = {
    "action": str,
    "notebook_path": str,
    "cell_index": int,
    "cell_id": str,
    "content": str,
    "cell_type": str,
    "to_index": int,
    "end_index": int,
    "max_chars": int,
}
# Which optional fields each action accepts; anything else is a caller's mistake worth a 400.
_ACCEPTED = {
    "edit": {"cell_index", "cell_id", "content", "cell_type"},
    "insert": {"cell_index", "content", "cell_type"},
    "delete": {"cell_index", "cell_id"},
    "move": {"cell_index", "cell_id", "to_index"},
    "read": {"cell_index", "cell_id", "end_index", "max_chars"},
}


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

    @property
    def changes(self) -> bool:
        """Whether the request modifies the notebook (a write) rather than reading it."""
        return self.action in CHANGE_ACTIONS


@dataclass(frozen=True)
class ChangeResult:
    """What a successful change did: the caller's text and the structured details."""

    text: str
    details: dict[str, Any]
    changed: bool = True


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def as_integer(value: Any) -> Any:
    """Return a JSON number with no fraction (``1.0``) as the ``int`` it is; anything else as is.

    JSON has one number type: ``1.0`` and ``1`` are the same number, and JSON Schema counts both
    as an integer. ``1.5``, ``"1"`` and ``true`` stay what they are (and are refused).
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def parse_request(body: dict[str, Any]) -> NotebookRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    unknown = next((name for name in body if name not in _FIELDS), None)
    if unknown is not None:
        raise InvalidRequestError(f"Unknown field: {unknown}")
    # A JSON null means "not given": agents often send every field, unused ones as null.
    body = {name: value for name, value in body.items() if value is not None}
    body = {name: as_integer(v) if _FIELDS.get(name) is int else v for name, v in body.items()}
    action = body.get("action")
    if action is None:
        raise InvalidRequestError("action is required")
    if not isinstance(action, str) or action not in ACTIONS:
        raise InvalidRequestError(f"Invalid action: {action}")
    for name, value in body.items():
        expected = _FIELDS[name]
        if name not in ("action", "notebook_path") and name not in _ACCEPTED[action]:
            raise InvalidRequestError(f"Field {name} is not accepted by the {action} action")
        # bool is an int subclass in Python; 1.5, "2" and true are all not integers here.
        if not isinstance(value, expected) or isinstance(value, bool):
            article = "an" if expected is int else "a"
            kind = "integer" if expected is int else "string"
            raise InvalidRequestError(
                f"{name} must be {article} {kind}, got {_type_name(value)}: {value!r}"
            )
    path = body.get("notebook_path")
    if path is None or path == "":
        raise InvalidRequestError("notebook_path is required")
    for name in ("cell_index", "to_index", "end_index"):
        if name in body and body[name] < 0:
            raise InvalidRequestError(f"{name} must not be negative, got {body[name]}")
    if "max_chars" in body and body["max_chars"] < 1:
        raise InvalidRequestError(f"max_chars must be positive, got {body['max_chars']}")
    cell_type = body.get("cell_type")
    if cell_type is not None and cell_type not in CELL_TYPES:
        raise InvalidRequestError(
            f"Invalid cell_type: {cell_type} (expected one of code, markdown, raw)"
        )
    if action in ("edit", "insert") and "content" not in body:
        raise InvalidRequestError(f"Content is required for {action} action")
    if action in ("edit", "delete", "move") and "cell_index" not in body and "cell_id" not in body:
        raise InvalidRequestError(f"cell_index or cell_id is required for {action} action")
    if action == "insert" and "cell_index" not in body:
        raise InvalidRequestError("cell_index is required for insert action")
    if action == "move" and "to_index" not in body:
        raise InvalidRequestError("to_index is required for move action")
    return NotebookRequest(**body)


def split_source(content: str) -> list[str]:
    """Split cell content into nbformat source lines: every line but the last keeps its newline."""
    lines = content.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def new_cell_id(taken: set[str]) -> str:
    """Return a fresh nbformat 4.5 cell id (``^[a-zA-Z0-9-_]+$``, 1..64 chars) not in ``taken``."""
    while True:
        cell_id = secrets.token_hex(4)
        if cell_id not in taken:
            return cell_id


def new_cell(cell_type: str, source: list[str], cell_id: str | None) -> dict[str, Any]:
    """Build a new cell with exactly the fields nbformat requires, keys in Jupyter's order."""
    cell: dict[str, Any] = {"cell_type": cell_type}
    if cell_type == "code":
        cell["execution_count"] = None
    if cell_id is not None:
        cell["id"] = cell_id
    cell["metadata"] = {}
    if cell_type == "code":
        cell["outputs"] = []
    cell["source"] = source
    return cell


def _cell_ids(document: NotebookDocument) -> set[str]:
    return {c["id"] for c in document.cells if isinstance(c, dict) and isinstance(c.get("id"), str)}


def _cell_type(cell: Any) -> str:
    value = cell.get("cell_type") if isinstance(cell, dict) else None
    return value if isinstance(value, str) else "unknown"


def locate_cell(document: NotebookDocument, request: NotebookRequest) -> int:
    """Return the index a request addresses by ``cell_index`` and/or ``cell_id``, checked."""
    total = len(document.cells)
    path = request.notebook_path
    index = request.cell_index
    if request.cell_id is not None:
        found = next(
            (
                i
                for i, cell in enumerate(document.cells)
                if isinstance(cell, dict) and cell.get("id") == request.cell_id
            ),
            None,
        )
        if found is None:
            raise NotFoundError(f"Cell id not found: {request.cell_id} in {path}")
        if index is not None and index != found:
            raise InvalidRequestError(
                f"cell_index {index} and cell_id {request.cell_id} name different cells "
                f"(that id is cell {found}) in {path}"
            )
        return found
    assert index is not None  # parse_request guarantees one of the two
    if index >= total:
        raise InvalidRequestError(f"Cell index {index} out of range (0-{total - 1}) in {path}")
    return index


def _details(action: str, index: int, cell: Any, total: int, **extra: Any) -> dict[str, Any]:
    # A cell that is not an object (a damaged notebook) can still be deleted or moved.
    fields = cell if isinstance(cell, dict) else {}
    cell_id = fields.get("id")
    source = fields.get("source", [])
    return {
        "action": action,
        "cellIndex": index,
        "cellType": _cell_type(cell),
        "totalCells": total,
        "cellSource": source if isinstance(source, (str, list)) else [],
        "cellId": cell_id if isinstance(cell_id, str) else None,
        **extra,
    }


def _result(summary: str, details: dict[str, Any], changed: bool = True) -> ChangeResult:
    return ChangeResult(
        f"{summary}. Notebook now has {details['totalCells']} cells.", details, changed
    )


def _converted(cell: dict[str, Any], cell_type: str) -> dict[str, Any]:
    """Return ``cell`` converted to ``cell_type`` with the fields nbformat requires of it."""
    converted = {k: v for k, v in cell.items() if k not in ("outputs", "execution_count")}
    converted["cell_type"] = cell_type
    if cell_type == "code":
        converted["execution_count"] = None
        converted["outputs"] = []
    if cell_type == "code":
        converted.pop("attachments", None)  # nbformat allows attachments on markdown/raw only
    keys = list(cell)
    if keys == sorted(keys):  # keep Jupyter's sorted key order when the file used it
        converted = dict(sorted(converted.items()))
    return converted


def _edit(document: NotebookDocument, request: NotebookRequest) -> ChangeResult:
    index = locate_cell(document, request)
    cell = document.cells[index]
    if not isinstance(cell, dict):
        raise InvalidRequestError(f"Cell {index} is not an object in {request.notebook_path}")
    old_type = _cell_type(cell)
    updated = dict(cell)
    updated["source"] = split_source(request.content or "")
    extra: dict[str, Any] = {}
    summary = f"Replaced cell {index} ({old_type})"
    if request.cell_type is not None and request.cell_type != old_type:
        updated = _converted(updated, request.cell_type)
        extra["previousCellType"] = old_type
        summary = f"Replaced cell {index} ({request.cell_type}, converted from {old_type})"
    document.replace(index, updated)
    return _result(summary, _details("edit", index, updated, len(document.cells), **extra))


def _insert(document: NotebookDocument, request: NotebookRequest) -> ChangeResult:
    total = len(document.cells)
    index = request.cell_index
    assert index is not None
    if index > total:
        raise InvalidRequestError(
            f"Cell index {index} out of range for insert (0-{total}) in {request.notebook_path}"
        )
    cell_type = request.cell_type or "code"
    cell_id = new_cell_id(_cell_ids(document)) if document.uses_cell_ids else None
    cell = new_cell(cell_type, split_source(request.content or ""), cell_id)
    document.insert(index, cell)
    summary = f"Inserted {cell_type} cell at position {index}"
    return _result(summary, _details("insert", index, cell, len(document.cells)))


def _delete(document: NotebookDocument, request: NotebookRequest) -> ChangeResult:
    index = locate_cell(document, request)
    cell = document.delete(index)
    summary = f"Deleted cell {index} ({_cell_type(cell)})"
    return _result(summary, _details("delete", index, cell, len(document.cells)))


def _move(document: NotebookDocument, request: NotebookRequest) -> ChangeResult:
    index = locate_cell(document, request)
    total = len(document.cells)
    to_index = request.to_index
    assert to_index is not None
    if to_index >= total:
        raise InvalidRequestError(
            f"Target index {to_index} out of range (0-{total - 1}) in {request.notebook_path}"
        )
    cell = document.cells[index]
    if to_index != index:
        document.move(index, to_index)
    summary = f"Moved cell {index} to position {to_index} ({_cell_type(cell)})"
    details = _details("move", to_index, cell, total, fromIndex=index)
    return _result(summary, details, changed=to_index != index)


_APPLY = {"edit": _edit, "insert": _insert, "delete": _delete, "move": _move}


def apply_change(document: NotebookDocument, request: NotebookRequest) -> ChangeResult:
    """Apply an edit/insert/delete/move request to ``document`` in memory and describe it."""
    return _APPLY[request.action](document, request)

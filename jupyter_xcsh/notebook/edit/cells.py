"""The notebook tool's pure core: apply a validated request to a notebook document.

No I/O here: JSON in, JSON out. The store loads the document (the file's text, or a collaboration
room's shared document), calls :func:`apply_changes`, and saves (or commits) only when every
change succeeded, so a failed request never touches the notebook.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.notebook.counts import index_of_execution_count
from jupyter_xcsh.notebook.edit.request import (
    ACTIONS,
    CELL_TYPES,
    CHANGE_ACTIONS,
    NotebookRequest,
    check_revision,
    check_source,
    parse_request,
    replace_once,
)
from jupyter_xcsh.notebook.edit.wholecell import cell_to_insert, checked_cell
from jupyter_xcsh.notebook.model import CellDocument, index_of_id, revision_of, source_hash
from jupyter_xcsh.policy.tags import check_cell_change

__all__ = [
    "ACTIONS",
    "CELL_TYPES",
    "CHANGE_ACTIONS",
    "ChangeResult",
    "NotebookRequest",
    "apply_change",
    "apply_changes",
    "locate_cell",
    "parse_request",
    "split_source",
]


@dataclass(frozen=True)
class ChangeResult:
    """What a successful change did: the caller's text and the structured details."""

    text: str
    details: dict[str, Any]
    changed: bool = True
    #: edit and delete: the addressed cell as it was before the change (what a revert restores).
    previous: Any = None


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


def _cell_ids(document: CellDocument) -> set[str]:
    return {key.cell_id for key in document.cell_keys() if key.cell_id is not None}


def _cell_type(cell: Any) -> str:
    value = cell.get("cell_type") if isinstance(cell, dict) else None
    return value if isinstance(value, str) else "unknown"


def locate_cell(document: CellDocument, request: NotebookRequest) -> int:
    """Return the index a request addresses by ``cell_index`` and/or ``cell_id``, checked."""
    path = request.notebook_path
    index = request.cell_index
    if request.execution_count is not None:
        return index_of_execution_count(document, request.execution_count, path)
    if request.cell_id is not None:
        found = _index_of(document, request.cell_id, path)
        if index is not None and index != found:
            raise InvalidRequestError(
                f"cell_index {index} and cell_id {request.cell_id} name different cells "
                f"(that id is cell {found}) in {path}"
            )
        return found
    assert index is not None  # parse_request guarantees one of the two
    total = len(document.cells)
    if index >= total:
        raise InvalidRequestError(f"Cell index {index} out of range (0-{total - 1}) in {path}")
    return index


def _index_of(document: CellDocument, cell_id: str, path: str) -> int:
    """The index of the cell with id ``cell_id``; 404 when no cell has it."""
    index = index_of_id(document, cell_id)
    if index is None:
        raise NotFoundError(f"Cell id not found: {cell_id} in {path}")
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
        "sourceHash": source_hash(source),
        **extra,
    }


def _result(
    summary: str, details: dict[str, Any], changed: bool = True, previous: Any = None
) -> ChangeResult:
    return ChangeResult(
        f"{summary}. Notebook now has {details['totalCells']} cells.", details, changed, previous
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


def _addressed(document: CellDocument, request: NotebookRequest) -> int:
    """Locate the addressed cell and check the caller's expectations of it."""
    index = locate_cell(document, request)
    check_source(document, request, index)
    return index


def _edit(document: CellDocument, request: NotebookRequest) -> ChangeResult:
    index = _addressed(document, request)
    cell = document.cells[index]
    if not isinstance(cell, dict):
        raise InvalidRequestError(f"Cell {index} is not an object in {request.notebook_path}")
    old_type = _cell_type(cell)
    new_type = request.cell_type
    if request.cell is not None:
        updated = checked_cell(document, request, cell.get("id"))
        new_type = _cell_type(updated)
    else:
        content = request.content or ""
        if request.old_content is not None:
            content = replace_once(document, request, index)
        updated = dict(cell)
        updated["source"] = split_source(content)
    extra: dict[str, Any] = {}
    summary = f"Replaced cell {index} ({old_type})"
    if new_type is not None and new_type != old_type:
        if request.cell is None:
            updated = _converted(updated, new_type)
        extra["previousCellType"] = old_type
        summary = f"Replaced cell {index} ({new_type}, converted from {old_type})"
    document.replace(index, updated)
    details = _details("edit", index, updated, len(document.cells), **extra)
    return _result(summary, details, previous=cell)


def _insert_index(document: CellDocument, request: NotebookRequest) -> tuple[int, str]:
    """Where an insert goes (checking the anchor cell's hash), and how the summary says so."""
    anchor = request.anchor
    if anchor is not None:
        at = _index_of(document, anchor, request.notebook_path)
        check_source(document, request, at)
        if request.after_cell_id is not None:
            return at + 1, f", after cell {anchor}"
        return at, f", before cell {anchor}"
    total = len(document.cells)
    index = request.cell_index
    assert index is not None  # parse_request guarantees one place
    if index > total:
        raise InvalidRequestError(
            f"Cell index {index} out of range for insert (0-{total}) in {request.notebook_path}"
        )
    return index, ""


def _insert(document: CellDocument, request: NotebookRequest) -> ChangeResult:
    index, where = _insert_index(document, request)
    cell_id = new_cell_id(_cell_ids(document)) if document.uses_cell_ids else None
    if request.cell is not None:
        cell = cell_to_insert(document, request, cell_id)
        cell_type = _cell_type(cell)
    else:
        cell_type = request.cell_type or "code"
        cell = new_cell(cell_type, split_source(request.content or ""), cell_id)
    document.insert(index, cell)
    summary = f"Inserted {cell_type} cell at position {index}{where}"
    return _result(summary, _details("insert", index, cell, len(document.cells)))


def _delete(document: CellDocument, request: NotebookRequest) -> ChangeResult:
    index = _addressed(document, request)
    cell = document.delete(index)
    summary = f"Deleted cell {index} ({_cell_type(cell)})"
    details = _details("delete", index, cell, len(document.cells))
    return _result(summary, details, previous=cell)


def _move_target(document: CellDocument, request: NotebookRequest, index: int) -> int:
    """Where a move takes cell ``index``: ``to_index``, or next to the cell with an id."""
    path = request.notebook_path
    anchor = request.move_anchor
    if anchor is None:
        to_index = request.to_index
        assert to_index is not None  # parse_request guarantees one place
        total = len(document.cells)
        if to_index >= total:
            raise InvalidRequestError(
                f"Target index {to_index} out of range (0-{total - 1}) in {path}"
            )
        return to_index
    at = _index_of(document, anchor, path)
    if at == index:
        raise InvalidRequestError(f"Cannot move cell {anchor} next to itself in {path}")
    if at > index:
        at -= 1  # where the anchor is once the moving cell has left its place
    return at + 1 if request.to_after_cell_id is not None else at


def _move(document: CellDocument, request: NotebookRequest) -> ChangeResult:
    index = _addressed(document, request)
    total = len(document.cells)
    to_index = _move_target(document, request, index)
    cell = document.cells[index]
    if to_index != index:
        document.move(index, to_index)
    summary = f"Moved cell {index} to position {to_index} ({_cell_type(cell)})"
    details = _details("move", to_index, cell, total, fromIndex=index)
    return _result(summary, details, changed=to_index != index)


_APPLY = {"edit": _edit, "insert": _insert, "delete": _delete, "move": _move}


def _stale_notebook_check(document: CellDocument, request: NotebookRequest) -> None:
    if request.expected_revision is None:
        return
    index: int | None
    try:
        if request.action != "insert":
            index = locate_cell(document, request)
        else:  # the cell it goes next to, if any
            anchor = request.anchor
            index = None if anchor is None else index_of_id(document, anchor)
    except (InvalidRequestError, NotFoundError):
        index = None  # the addressed cell is gone: the 409 still says what the notebook is now
    check_revision(document, request, index)


def apply_change(document: CellDocument, request: NotebookRequest) -> ChangeResult:
    """Apply an edit/insert/delete/move request to ``document`` in memory and describe it.

    The caller's preconditions are checked first, on the same state; ``details`` gains the
    addressed cell's ``sourceHash`` and the notebook's ``revision`` after the change.
    """
    _stale_notebook_check(document, request)
    result = _APPLY[request.action](document, request)
    _keep_tags(document, request, result)
    result.details["revision"] = revision_of(document)
    return result


def _keep_tags(document: CellDocument, request: NotebookRequest, result: ChangeResult) -> None:
    """Refuse a change that adds or removes the ``ask-before-run`` tag (``policy_protected``).

    Only a whole ``cell`` (edit, insert) carries metadata; a delete removes a tagged cell.
    The document is then dropped by the caller, as for any failed change.
    """
    action, path = request.action, request.notebook_path
    if action == "delete":
        check_cell_change(result.previous, None, path)
    elif request.cell is not None and action in ("edit", "insert"):
        after = document.cells[result.details["cellIndex"]]
        check_cell_change(result.previous if action == "edit" else None, after, path)


def apply_changes(
    document: CellDocument, requests: Sequence[NotebookRequest]
) -> list[ChangeResult]:
    """Apply changes in order, each seeing the notebook as the earlier ones left it.

    Raises at the first failing change; the caller then drops ``document`` (never saves or
    commits it), so a batch is all or nothing.
    """
    return [apply_change(document, request) for request in requests]

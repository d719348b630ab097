"""Stale-edit protection: "only if the cell is still what I read" (docs/contract.md §3). Pure.

A request may say which state it expects — the addressed cell's ``sourceHash``, the notebook's
``revision``, or a snippet (``old_content``) that must occur exactly once in the cell. The
checks run on the state the change is applied to, in the same step (under the notebook's lock,
or synchronously before one transaction on the live document), so check and change are atomic.
A 409 carries the cell as it is now, so the caller can retry without another read.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import ConflictError, InvalidRequestError
from .model import CellDocument, revision_of
from .request import NotebookRequest
from .revision import notebook_revision, source_hash

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
        raise ConflictError(
            f"Notebook changed since it was read (expected revision {expected}, found {found}): "
            f"{path}",
            reason="stale_notebook",
            details=current_cell(document, index),
        )


def check_source(document: CellDocument, request: Expectations, index: int) -> None:
    """Raise a 409 ``stale_cell`` unless cell ``index`` has the source hash the caller expects."""
    expected = request.expected_source_hash
    if expected is None:
        return
    found = source_hash(document.cell_keys()[index].source)
    if found != expected:
        raise ConflictError(
            f"Cell {index} changed since it was read (expected source hash {expected}, "
            f"found {found}) in {request.notebook_path}",
            reason="stale_cell",
            details=current_cell(document, index),
        )


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

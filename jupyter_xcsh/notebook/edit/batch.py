"""Batches: a notebook's changes in order, as one atomic change (docs/developers/contract.md §2.11).

Agents change several cells per step (rename a variable in three cells, add a markdown cell
above the changed code). One call, ``{"notebook_path", "changes": [...], "expected_revision"?}``,
applies them in order — each change sees the notebook as the earlier ones left it, so indices
refer to that state — and the store keeps the result only when every change succeeded: one save
of the file, or one transaction on a room's live document. A failing change is reported by its
position (``Change <k> failed: <message>``, counted from 1) with its own status, and nothing is
applied. ``expected_revision`` belongs to the batch: it is checked once, before the first
change; each change may still guard its cell with ``expected_source_hash``, checked on the state
the earlier changes left.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError, XcshError
from jupyter_xcsh.fields import InvalidActionError, type_name, unknown_fields
from jupyter_xcsh.notebook.edit.cells import ChangeResult, apply_change
from jupyter_xcsh.notebook.edit.request import (
    CHANGE_ACTIONS,
    FIELDS,
    NotebookRequest,
    check_expected,
    check_notebook_revision,
    parse_request,
    require_preconditions,
)
from jupyter_xcsh.notebook.model import CellDocument

#: Most changes one batch may hold.
MAX_CHANGES = 100
#: The fields of a batch itself (and ``action``, only as null: each change has its own).
_BATCH_FIELDS = ("notebook_path", "changes", "expected_revision")


@dataclass(frozen=True)
class NotebookBatch:
    """A validated batch: the notebook, its changes in order, the revision expected before."""

    notebook_path: str
    changes: tuple[NotebookRequest, ...]
    expected_revision: str | None = None


@contextmanager
def change_number(k: int) -> Iterator[None]:
    """Re-raise a domain error of change ``k`` as ``Change <k> failed: <message>``.

    The error keeps its class (its HTTP status; an invalid action's is a plain 400's),
    ``reason`` and ``details``.
    """
    try:
        yield
    except XcshError as e:
        kind = InvalidRequestError if isinstance(e, InvalidActionError) else type(e)
        raise kind(f"Change {k} failed: {e.message}", reason=e.reason, details=e.details) from None


def parse_batch(body: dict[str, Any]) -> NotebookBatch:
    """Validate a batch body and each of its changes; raise ``InvalidRequestError`` saying why."""
    if body.get("action") is not None:
        raise InvalidRequestError(
            "A batch has no action of its own: give each change its action inside changes"
        )
    unknown = next((name for name in body if name not in FIELDS), None)
    if unknown is not None:
        raise InvalidRequestError(unknown_fields([unknown], FIELDS))
    # As in single requests, a null field is "not given".
    given = [name for name, value in body.items() if value is not None]
    extra = next((name for name in given if name not in _BATCH_FIELDS), None)
    if extra is not None:
        raise InvalidRequestError(
            f"Field {extra} is not accepted by a batch (only notebook_path, changes and "
            "expected_revision)"
        )
    path = body.get("notebook_path")
    if path is None or path == "":
        raise InvalidRequestError("notebook_path is required")
    if not isinstance(path, str):
        raise InvalidRequestError(f"notebook_path must be a string, got {type_name(path)}")
    expected = body.get("expected_revision")
    if expected is not None:
        if not isinstance(expected, str):
            raise InvalidRequestError(
                f"expected_revision must be a string, got {type_name(expected)}"
            )
        check_expected("expected_revision", expected)
    changes = body["changes"]
    if not isinstance(changes, list):
        raise InvalidRequestError(f"changes must be an array, got {type_name(changes)}")
    if not changes:
        raise InvalidRequestError("changes must hold at least one change")
    if len(changes) > MAX_CHANGES:
        raise InvalidRequestError(
            f"A batch holds at most {MAX_CHANGES} changes, got {len(changes)}"
        )
    requests = []
    for k, change in enumerate(changes, 1):
        with change_number(k):
            requests.append(_parse_change(change, path))
    return NotebookBatch(path, tuple(requests), expected)


def _parse_change(change: Any, path: str) -> NotebookRequest:
    if not isinstance(change, dict):
        raise InvalidRequestError(f"A change must be an object, got {type_name(change)}")
    if change.get("expected_revision") is not None:
        raise InvalidRequestError(
            "expected_revision belongs to the batch (it is checked once, before the first change)"
        )
    own_path = change.get("notebook_path")
    if own_path is not None and own_path != path:
        raise InvalidRequestError(f"notebook_path {own_path} is not the batch's ({path})")
    action = change.get("action")
    if isinstance(action, str) and action in ("read", "find", "create"):
        raise InvalidRequestError(
            f"Invalid action in a batch: {action} (a batch holds edit, insert, delete and move)"
        )
    try:
        request = parse_request({**change, "notebook_path": path})
    except InvalidActionError as e:  # the actions a batch holds
        raise InvalidActionError(e.action, CHANGE_ACTIONS) from None
    assert request.action in CHANGE_ACTIONS
    return request


def require_batch_preconditions(batch: NotebookBatch, policy: str) -> None:
    """Refuse (400) a batch whose changes lack the preconditions the server's policy asks for.

    The batch's ``expected_revision`` guards every change (it pins the state they all start
    from); without it each change is held to the policy as a single request would be.
    """
    if batch.expected_revision is not None:
        return
    for k, change in enumerate(batch.changes, 1):
        with change_number(k):
            require_preconditions(change, policy)


def apply_batch(document: CellDocument, batch: NotebookBatch) -> list[ChangeResult]:
    """Apply the batch's changes to ``document`` in memory, in order, and describe each.

    Raises at the first failing change (as ``Change <k> failed: ...``); the caller then drops
    ``document`` (never saves or commits it), so nothing of the batch is kept.
    """
    check_notebook_revision(document, batch.expected_revision, batch.notebook_path)
    results = []
    for k, change in enumerate(batch.changes, 1):
        with change_number(k):
            results.append(apply_change(document, change))
    return results


def batch_result(results: Sequence[ChangeResult]) -> dict[str, Any]:
    """The caller's ``{text, details}`` of a batch: one summary line and one details per change.

    ``details`` also carries the notebook's ``totalCells`` and ``revision`` after the last change.
    """
    changes = [dict(result.details) for result in results]
    details = {
        "action": "batch",
        "changes": changes,
        "totalCells": changes[-1]["totalCells"],
        "revision": changes[-1]["revision"],
    }
    return {"text": "\n".join(result.text for result in results), "details": details}

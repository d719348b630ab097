"""The ``ask-before-run`` cell tag, which no agent tool may add or remove. Pure.

A code cell tagged ``ask-before-run`` runs through an agent's run in place only with the
person's yes (``gate.py``). The tag is the person's: a change through an agent's tool that
would add it, remove it or delete a tagged cell is refused (``policy_protected``), whatever
the policies say.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from jupyter_xcsh.errors import RefusedError

__all__ = [
    "ASK_BEFORE_RUN",
    "asks_before_run",
    "check_cell_change",
    "check_notebook_text",
    "protected",
    "tagged_cells",
]

#: The tag of a cell that runs only with the person's approval.
ASK_BEFORE_RUN = "ask-before-run"


def protected(message: str) -> RefusedError:
    """The error of a tool call that would change what only the person may change."""
    return RefusedError(message, reason="policy_protected")


def asks_before_run(cell: Any) -> bool:
    """Whether the cell (nbformat JSON) carries the ``ask-before-run`` tag."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return isinstance(tags, list) and ASK_BEFORE_RUN in tags


def check_cell_change(before: Any, after: Any, path: str) -> None:
    """Refuse a change of one cell from ``before`` to ``after`` (None: absent) that moves the tag.

    Adding the tag, removing it or deleting a tagged cell raises ``policy_protected``.
    """
    had, has = asks_before_run(before), asks_before_run(after)
    if had == has:
        return
    cell_id = (before if isinstance(before, dict) else after or {}).get("id")
    which = f"cell {cell_id}" if isinstance(cell_id, str) else "a cell"
    if after is None:
        what = f"delete {which}, tagged {ASK_BEFORE_RUN}"
    elif has:
        what = f"add the {ASK_BEFORE_RUN} tag to {which}"
    else:
        what = f"remove the {ASK_BEFORE_RUN} tag from {which}"
    raise protected(
        f"Refused: an agent tool may not {what} of {path}. The tag is the person's: they set "
        "or remove it in JupyterLab (the cell toolbar, or the cell's metadata)."
    )


def tagged_cells(cells: Iterable[Any]) -> dict[str, Any]:
    """The tagged cells of a notebook's cell list, by id (by position where a cell has none)."""
    found: dict[str, Any] = {}
    for index, cell in enumerate(cells):
        if asks_before_run(cell):
            cell_id = cell.get("id")
            found[cell_id if isinstance(cell_id, str) else f"#{index}"] = cell
    return found


def _cells_of_text(text: str | None) -> list[Any] | None:
    """The cells of a notebook's JSON text; None when it is not notebook JSON."""
    if text is None:
        return None
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return cells if isinstance(cells, list) else None


def check_notebook_text(before: str | None, after: str | None, path: str) -> None:
    """Refuse a write of a file from ``before`` to ``after`` that moves a tag of its cells.

    Either text may be None (a file created or deleted) or not notebook JSON (no cells).
    """
    old = tagged_cells(_cells_of_text(before) or [])
    new = tagged_cells(_cells_of_text(after) or [])
    for key in old.keys() - new.keys():
        check_cell_change(old[key], None if after is None else {}, path)
    for key in new.keys() - old.keys():
        check_cell_change({}, new[key], path)

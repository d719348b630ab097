"""Cells named by their execution count, the number people see as ``[12]`` ("explain [12]").

Only code cells have one; a count names no cell (404) or several (400: a notebook whose cells
ran in different kernels may repeat a count).
"""

from __future__ import annotations

from typing import Any

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.notebook.model import CellDocument

__all__ = ["check_execution_count", "index_of_execution_count"]


def check_execution_count(value: Any) -> None:
    """Refuse (400) an ``execution_count`` no cell can have (counts start at 1)."""
    if value < 1:
        raise InvalidRequestError(f"execution_count must be positive, got {value}")


def index_of_execution_count(document: CellDocument, count: int, path: str) -> int:
    """The index of the one code cell whose execution count is ``count``.

    ``NotFoundError`` when no cell has it, ``InvalidRequestError`` when several have.
    """
    found = [
        index
        for index, cell in enumerate(document.cells)
        if isinstance(cell, dict)
        and cell.get("cell_type") == "code"
        and cell.get("execution_count") == count
        and not isinstance(cell.get("execution_count"), bool)
    ]
    if not found:
        raise NotFoundError(f"No cell with execution count [{count}] in {path}")
    if len(found) > 1:
        cells = ", ".join(str(i) for i in found)
        raise InvalidRequestError(
            f"Several cells have execution count [{count}] in {path} (cells {cells}): "
            "address one by cell_id or cell_index"
        )
    return found[0]

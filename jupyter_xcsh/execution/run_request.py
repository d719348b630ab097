"""A run-in-place request: parsed and validated from a JSON body, then resolved against a notebook.

Parsing checks what the body alone can tell (types, one selection, ranges of numbers); the
selection is resolved into cells once the notebook is loaded, with the notebook tool's exact
messages for a missing cell. No I/O and no HTTP here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRequestError, NotFoundError
from ..notebook.cells import as_integer
from .request import DEFAULT_TIMEOUT, TIMEOUT_RANGE
from .stdin import StdinSpec, parse_stdin

__all__ = ["RunRequest", "SelectedCell", "parse_run_request", "select_cells"]

_FIELDS = {
    "notebook_path",
    "cell_id",
    "cell_index",
    "cell_ids",
    "end_index",
    "all",
    "timeout",
    "stop_on_error",
    "kernel_name",
    "stdin",
}
_SELECTIONS = "cell_id, cell_index, cell_ids, cell_index with end_index, or all"


@dataclass(frozen=True)
class RunRequest:
    """A validated run request; exactly one way of selecting cells is set."""

    notebook_path: str
    cell_id: str | None
    cell_index: int | None
    cell_ids: tuple[str, ...] | None
    end_index: int | None
    all: bool
    timeout: float
    stop_on_error: bool
    kernel_name: str | None
    stdin: StdinSpec


@dataclass(frozen=True)
class SelectedCell:
    """One cell a run addresses, as it was when the run was accepted."""

    index: int
    cell_id: str | None
    cell_type: str
    source: str


def _index(body: dict[str, Any], name: str) -> int | None:
    # JSON has one number type: 1.0 is the integer 1 (1.5, "1" and true are refused).
    value = as_integer(body.get(name))
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequestError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise InvalidRequestError(f"{name} must not be negative, got {value}")
    return value


def _timeout(body: dict[str, Any]) -> float:
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidRequestError("timeout must be a number of seconds")
    try:
        seconds = float(timeout)
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not math.isfinite(seconds):
        raise InvalidRequestError("timeout must be a finite number of seconds")
    return min(max(seconds, TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1])


def parse_run_request(body: dict[str, Any]) -> RunRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise InvalidRequestError(f"Unknown field(s): {', '.join(unknown)}")
    # A JSON null means "not given", as for the notebook tool.
    body = {name: value for name, value in body.items() if value is not None}
    path = body.get("notebook_path")
    if not path:
        raise InvalidRequestError("notebook_path is required")
    if not isinstance(path, str):
        raise InvalidRequestError("notebook_path must be a string")

    cell_id = body.get("cell_id")
    if cell_id is not None and (not isinstance(cell_id, str) or not cell_id):
        raise InvalidRequestError("cell_id must be a non-empty string")
    cell_index = _index(body, "cell_index")
    end_index = _index(body, "end_index")
    cell_ids = body.get("cell_ids")
    if cell_ids is not None:
        if (
            not isinstance(cell_ids, list)
            or not cell_ids
            or not all(isinstance(i, str) and i for i in cell_ids)
        ):
            raise InvalidRequestError("cell_ids must be a non-empty array of cell ids")
        if len(set(cell_ids)) != len(cell_ids):
            raise InvalidRequestError("cell_ids must not repeat a cell id")
    run_all = body.get("all", False)
    if not isinstance(run_all, bool):
        raise InvalidRequestError("all must be a boolean")
    if end_index is not None and cell_index is None:
        raise InvalidRequestError("end_index needs cell_index (the first cell of the range)")
    chosen = [cell_id is not None, cell_index is not None, cell_ids is not None, run_all]
    if sum(chosen) != 1:
        raise InvalidRequestError(f"Give exactly one of {_SELECTIONS}")
    if end_index is not None and cell_index is not None and end_index <= cell_index:
        raise InvalidRequestError(
            f"end_index ({end_index}) must be greater than cell_index ({cell_index})"
        )

    timeout = _timeout(body)
    stop_on_error = body.get("stop_on_error", True)
    if not isinstance(stop_on_error, bool):
        raise InvalidRequestError("stop_on_error must be a boolean")
    kernel_name = body.get("kernel_name")
    if kernel_name is not None and (not isinstance(kernel_name, str) or not kernel_name):
        raise InvalidRequestError("kernel_name must be a non-empty string")
    stdin = parse_stdin(body.get("stdin", "notice"))
    if stdin.asks:
        # A run holds the notebook's queue and the person's kernel: it cannot pause for an
        # answer that may never come.
        raise InvalidRequestError(
            'stdin "ask" is not supported by runs in place; use "notice", "eof" or a list '
            "of answers"
        )
    return RunRequest(
        notebook_path=path,
        cell_id=cell_id,
        cell_index=cell_index,
        cell_ids=tuple(cell_ids) if cell_ids is not None else None,
        end_index=end_index,
        all=run_all,
        timeout=timeout,
        stop_on_error=stop_on_error,
        kernel_name=kernel_name,
        stdin=stdin,
    )


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _selected(cells: list[Any], index: int) -> SelectedCell:
    cell = cells[index] if isinstance(cells[index], dict) else {}
    cell_id = cell.get("id")
    return SelectedCell(
        index=index,
        cell_id=cell_id if isinstance(cell_id, str) else None,
        cell_type=str(cell.get("cell_type", "")),
        source=_source(cell),
    )


def select_cells(request: RunRequest, cells: list[Any]) -> list[SelectedCell]:
    """The cells ``request`` selects in a notebook whose cells are ``cells``, in run order.

    A single cell must be a code cell; other cells in a range, a list or ``all`` are returned
    too and are skipped when the run reaches them.
    """
    path = request.notebook_path
    count = len(cells)

    def by_index(i: int) -> SelectedCell:
        if i >= count:
            top = f"0-{count - 1}" if count else "empty notebook"
            raise InvalidRequestError(f"Cell index {i} out of range ({top}) in {path}")
        return _selected(cells, i)

    ids = {
        cell.get("id"): i for i, cell in enumerate(cells) if isinstance(cell, dict) and "id" in cell
    }

    def by_id(cell_id: str) -> SelectedCell:
        if cell_id not in ids:
            raise NotFoundError(f"Cell id not found: {cell_id} in {path}")
        return _selected(cells, ids[cell_id])

    if request.all:
        return [_selected(cells, i) for i in range(count)]
    if request.cell_ids is not None:
        return [by_id(i) for i in request.cell_ids]
    if request.cell_index is not None and request.end_index is not None:
        by_index(request.cell_index)
        if request.end_index > count:
            raise InvalidRequestError(
                f"end_index {request.end_index} out of range "
                f"({request.cell_index + 1}-{count}) in {path}"
            )
        return [_selected(cells, i) for i in range(request.cell_index, request.end_index)]
    single = by_index(request.cell_index) if request.cell_index is not None else None
    if single is None:
        assert request.cell_id is not None
        single = by_id(request.cell_id)
    if single.cell_type != "code":
        raise InvalidRequestError(f"Cell {single.index} is not a code cell in {path}")
    return [single]

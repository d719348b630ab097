"""A run-in-place request: parsed and validated from a JSON body, then resolved against a notebook.

Parsing checks what the body alone can tell (types, one selection, ranges of numbers); the
selection is resolved into cells once the notebook is loaded (:func:`accept_run`), with the
notebook tool's exact messages for a missing cell and its stale-edit checks
(docs/developers/contract.md §3), on the same state. No I/O and no HTTP here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.execution.kernel.cell import parse_timeout
from jupyter_xcsh.execution.kernel.stdin import StdinSpec, parse_stdin
from jupyter_xcsh.fields import as_integer, unknown_fields
from jupyter_xcsh.notebook.counts import check_execution_count, index_of_execution_count
from jupyter_xcsh.notebook.edit.request import check_expected, check_revision, check_source
from jupyter_xcsh.notebook.model import CellDocument, revision_of
from jupyter_xcsh.notebook.outputs import SelectedCell, selected_cell
from jupyter_xcsh.notebook.stale import stale_cells
from jupyter_xcsh.policy.tags import asks_before_run

__all__ = ["AcceptedRun", "RunRequest", "accept_run", "kernelspec_name", "parse_run_request"]

#: The hash of the code the notebook's kernel ran as ``[n]`` (None: not seen).
CodeOf = Callable[[int], str | None]

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
    "expected_revision",
    "expected_source_hash",
    "execution_count",
    "stale",
}
_SELECTIONS = (
    "cell_id, cell_index, cell_ids, cell_index with end_index, execution_count, all, or stale"
)


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
    expected_revision: str | None = None
    expected_source_hash: str | None = None
    #: The code cell whose execution count (``[12]``) this is.
    execution_count: int | None = None
    #: The stale code cells (see ``notebook/stale.py``), in the notebook's order.
    stale: bool = False

    @property
    def single(self) -> bool:
        """Whether the request selects one cell (by id, execution count or index alone)."""
        return (
            self.cell_id is not None
            or self.execution_count is not None
            or (self.cell_index is not None and self.end_index is None)
        )


@dataclass(frozen=True)
class AcceptedRun:
    """A request resolved against the notebook: its cells, and the notebook they are in."""

    cells: list[SelectedCell]
    revision: str
    total_cells: int
    #: The notebook's ``metadata.kernelspec.name`` (the kernel to start when none runs).
    kernel_name: str | None
    #: The notebook indexes of the cells tagged ``ask-before-run`` (run only when approved).
    ask_before: frozenset[int] = frozenset()


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


def parse_run_request(body: dict[str, Any]) -> RunRequest:
    """Validate a request body; raise ``InvalidRequestError`` saying what is wrong."""
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise InvalidRequestError(
            unknown_fields(unknown, sorted(_FIELDS), prefix="Unknown field(s)")
        )
    # A JSON null means "not given", as for the notebook tool.
    body = {name: value for name, value in body.items() if value is not None}
    path = body.get("notebook_path")
    if not path:
        raise InvalidRequestError("notebook_path is required")
    if not isinstance(path, str):
        raise InvalidRequestError("notebook_path must be a string")

    cell_id = body.get("cell_id")
    if cell_id is not None and not isinstance(cell_id, str):
        raise InvalidRequestError(f"cell_id must be a string, got {cell_id!r}")
    if cell_id == "":
        raise InvalidRequestError("cell_id must not be empty")
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
    execution_count = _index(body, "execution_count")
    if execution_count is not None:
        check_execution_count(execution_count)
    stale = body.get("stale", False)
    if not isinstance(stale, bool):
        raise InvalidRequestError("stale must be a boolean")
    chosen = [
        cell_id is not None,
        cell_index is not None,
        cell_ids is not None,
        run_all,
        execution_count is not None,
        stale,
    ]
    if sum(chosen) != 1:
        raise InvalidRequestError(f"Give exactly one of {_SELECTIONS}")
    if end_index is not None and cell_index is not None and end_index <= cell_index:
        raise InvalidRequestError(
            f"end_index ({end_index}) must be greater than cell_index ({cell_index})"
        )

    timeout = parse_timeout(body)
    stop_on_error = body.get("stop_on_error", True)
    if not isinstance(stop_on_error, bool):
        raise InvalidRequestError("stop_on_error must be a boolean")
    kernel_name = body.get("kernel_name")
    if kernel_name is not None and (not isinstance(kernel_name, str) or not kernel_name):
        raise InvalidRequestError("kernel_name must be a non-empty string")
    stdin = parse_stdin(body.get("stdin", "notice"))
    expected: dict[str, str] = {}
    for name in ("expected_revision", "expected_source_hash"):
        value = body.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise InvalidRequestError(f"{name} must be a string")
            check_expected(name, value)
            expected[name] = value
    if "expected_source_hash" in expected and (
        cell_ids is not None or run_all or end_index is not None or stale
    ):
        raise InvalidRequestError(
            "expected_source_hash needs a single cell (cell_id, or cell_index without "
            "end_index); use expected_revision for several"
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
        execution_count=execution_count,
        stale=stale,
        **expected,
    )


def kernelspec_name(metadata: dict[str, Any]) -> str | None:
    """The kernel spec a notebook's metadata names (``kernelspec.name``), if any."""
    spec = metadata.get("kernelspec")
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else None


def _select(
    request: RunRequest, document: CellDocument, code_of: CodeOf | None = None
) -> list[SelectedCell]:
    """The cells ``request`` selects, in run order (the notebook tool's messages when missing).

    A single cell must be a code cell; other cells in a range, a list or ``all`` are returned
    too and are skipped when the run reaches them.
    """
    path = request.notebook_path
    keys = document.cell_keys()
    count = len(keys)

    def by_index(i: int) -> SelectedCell:
        if i >= count:
            top = f"0-{count - 1}" if count else "empty notebook"
            raise InvalidRequestError(f"Cell index {i} out of range ({top}) in {path}")
        return selected_cell(keys, i)

    ids = {key.cell_id: i for i, key in enumerate(keys) if key.cell_id is not None}

    def by_id(cell_id: str) -> SelectedCell:
        if cell_id not in ids:
            raise NotFoundError(f"Cell id not found: {cell_id} in {path}")
        return selected_cell(keys, ids[cell_id])

    if request.all:
        return [selected_cell(keys, i) for i in range(count)]
    if request.stale:
        return [selected_cell(keys, i) for i in stale_cells(document.cells, code_of)]
    if request.cell_ids is not None:
        return [by_id(i) for i in request.cell_ids]
    if request.cell_index is not None and request.end_index is not None:
        by_index(request.cell_index)
        if request.end_index > count:
            raise InvalidRequestError(
                f"end_index {request.end_index} out of range "
                f"({request.cell_index + 1}-{count}) in {path}"
            )
        return [selected_cell(keys, i) for i in range(request.cell_index, request.end_index)]
    single = by_index(request.cell_index) if request.cell_index is not None else None
    if request.execution_count is not None:
        single = selected_cell(
            keys, index_of_execution_count(document, request.execution_count, path)
        )
    if single is None:
        assert request.cell_id is not None
        single = by_id(request.cell_id)
    if single.cell_type != "code":
        raise InvalidRequestError(f"Cell {single.index} is not a code cell in {path}")
    return [single]


def accept_run(
    request: RunRequest, document: CellDocument, code_of: CodeOf | None = None
) -> AcceptedRun:
    """Resolve ``request`` against the notebook ``document``, checking what it expects of it.

    ``code_of`` is what the notebook's kernel ran (for ``stale``). As for the notebook tool's
    changes (docs/developers/contract.md §3.2): a notebook whose revision is not
    ``expected_revision`` is a 409 (before any other check), then the selection is resolved,
    then a single cell whose source hash is not ``expected_source_hash`` is a 409.
    """
    if request.expected_revision is not None:
        try:
            index = _select(request, document)[0].index if request.single else None
        except (InvalidRequestError, NotFoundError):
            index = None  # the addressed cell is gone: the 409 says what the notebook is now
        check_revision(document, request, index)
    cells = _select(request, document, code_of)
    if request.expected_source_hash is not None:
        check_source(document, request, cells[0].index)
    return AcceptedRun(
        cells=cells,
        revision=revision_of(document),
        total_cells=len(document.cell_keys()),
        kernel_name=kernelspec_name(document.metadata),
        ask_before=frozenset(c.index for c in cells if asks_before_run(document.cells[c.index])),
    )

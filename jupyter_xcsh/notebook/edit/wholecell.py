"""Whole cells, written as given: the request's ``cell`` on edit and insert. Pure.

A revert puts a cell back exactly as it was — source, metadata, outputs, attachments, execution
count — so these requests carry a whole nbformat cell instead of a source. It is checked against
the notebook's own nbformat schema and written as it is. An insert keeps the cell's own id, and a
taken id is a 409 ``cell_exists``: that refusal is the insert's precondition (reverting a delete
twice cannot duplicate the cell), which is why ``NotebookRequest.guarded`` counts it.
"""

from __future__ import annotations

from typing import Any

from nbformat.validator import NotebookValidationError
from nbformat.validator import validate as validate_nbformat

from jupyter_xcsh.errors import ConflictError, InvalidRequestError
from jupyter_xcsh.notebook.edit.request import CELL_TYPES, NotebookRequest, current_cell
from jupyter_xcsh.notebook.model import CellDocument, index_of_id

#: Longest part of an nbformat validation message quoted back to the caller.
_MAX_VALIDATION_MESSAGE = 300


def checked_cell(document: CellDocument, request: NotebookRequest, cell_id: Any) -> dict[str, Any]:
    """Return the request's whole ``cell``, checked against the notebook's own nbformat schema.

    ``cell_id`` is the id the cell must have in a notebook with ids (edit: the addressed cell's;
    insert: its own or a fresh one); a cell without one gets it.
    """
    assert request.cell is not None
    cell = dict(request.cell)
    path = request.notebook_path
    if cell.get("cell_type") not in CELL_TYPES:
        raise InvalidRequestError(
            f"Invalid cell: cell_type must be one of {', '.join(CELL_TYPES)} in {path}"
        )
    if document.uses_cell_ids and "id" not in cell:
        cell["id"] = cell_id
        if list(request.cell) == sorted(request.cell):  # keep Jupyter's sorted key order
            cell = dict(sorted(cell.items()))
    _, minor = document.nbformat
    try:
        validate_nbformat(cell, ref=f"{cell['cell_type']}_cell", version=4, version_minor=minor)
    except NotebookValidationError as e:
        reason = str(e.message)[:_MAX_VALIDATION_MESSAGE]
        raise InvalidRequestError(
            f"Invalid cell for nbformat 4.{minor}: {reason} in {path}"
        ) from None
    if document.uses_cell_ids and cell["id"] != cell_id:
        raise InvalidRequestError(
            f"cell.id {cell['id']} is not the id of the cell it replaces ({cell_id}) in {path}"
        )
    return cell


def cell_to_insert(
    document: CellDocument, request: NotebookRequest, fresh_id: str | None
) -> dict[str, Any]:
    """Return the whole cell an insert writes: its own id (409 when taken) or ``fresh_id``."""
    assert request.cell is not None
    cell_id = request.cell.get("id")
    if document.uses_cell_ids and isinstance(cell_id, str):
        existing = index_of_id(document, cell_id)
        if existing is not None:
            raise ConflictError(
                f"Cell id {cell_id} already exists in {request.notebook_path}",
                reason="cell_exists",
                details=current_cell(document, existing),
            )
    return checked_cell(document, request, fresh_id if cell_id is None else cell_id)

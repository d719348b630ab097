"""A run's outputs in a notebook file: found by id (or place), only those bytes change (pure)."""

from __future__ import annotations

import json

import nbformat

from jupyter_xcsh.notebook.model import notebook_revision
from jupyter_xcsh.notebook.outputs import SelectedCell, find_cell, set_cell_outputs
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import PNG_1x1, jupyter_text, load, sample_notebook

OUTPUTS = [
    {"output_type": "stream", "name": "stdout", "text": "a\nb\n"},
    {
        "output_type": "display_data",
        "data": {"text/plain": "<Fig>\nsize", "image/png": PNG_1x1},
        "metadata": {"image/png": {"width": 1}},
    },
    {
        "output_type": "execute_result",
        "data": {"text/plain": "2"},
        "metadata": {},
        "execution_count": 9,
    },
]


def _cell(document: NotebookDocument, index: int) -> SelectedCell:
    cell = document.cells[index]
    return SelectedCell(index, cell.get("id"), cell["cell_type"], "".join(cell["source"]))


def test_outputs_are_written_as_jupyter_writes_them_and_other_cells_are_untouched():
    nb = sample_notebook()
    document = NotebookDocument.parse(jupyter_text(nb))

    place = set_cell_outputs(document, _cell(document, 2), OUTPUTS, 9)

    assert place.cell is not None and place.cell.index == 2
    nb.cells[2].outputs = nbformat.from_dict(OUTPUTS)
    nb.cells[2].execution_count = 9
    assert document.changed
    assert document.dumps() == jupyter_text(nb)
    load(document.dumps())


def test_only_the_outputs_and_count_bytes_of_an_oddly_written_cell_change():
    cell = (
        '{"source": "x", "zzz": {"kept": [1,2]},  "execution_count":null,'
        '"outputs" : [ ], "cell_type": "code", "metadata": {}, "id": "c1"}'
    )
    text = '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + cell + "]}"
    document = NotebookDocument.parse(text)

    document.set_outputs(0, [{"output_type": "stream", "name": "stdout", "text": "hi\n"}], 3)

    after = document.dumps()
    assert after == text.replace('"execution_count":null', '"execution_count":3').replace(
        '"outputs" : [ ]',
        '"outputs" : [{"name" : "stdout","output_type" : "stream","text" : ["hi\\n"]}]',
    )
    assert json.loads(after)["cells"][0]["zzz"] == {"kept": [1, 2]}


def test_unchanged_outputs_leave_the_text_alone():
    text = jupyter_text(sample_notebook())
    document = NotebookDocument.parse(text)
    cell = json.loads(text)["cells"][1]

    document.set_outputs(1, cell["outputs"], cell["execution_count"])

    assert not document.changed
    assert document.dumps() == text


def test_outputs_change_neither_source_hashes_nor_the_revision():
    document = NotebookDocument.parse(jupyter_text(sample_notebook()))
    before = notebook_revision(document.cell_keys())

    place = set_cell_outputs(document, _cell(document, 1), OUTPUTS, 9)

    assert place.revision == before == notebook_revision(document.cell_keys())


def test_a_cell_is_found_by_id_wherever_it_moved():
    document = NotebookDocument.parse(jupyter_text(sample_notebook()))
    cell = _cell(document, 2)

    moved = SelectedCell(0, cell.cell_id, "code", "something else")

    assert find_cell(document, moved, same_source=True).cell == cell


def test_a_deleted_cell_or_one_that_is_no_longer_code_gets_nothing():
    document = NotebookDocument.parse(jupyter_text(sample_notebook()))
    gone = SelectedCell(1, "gone", "code", "x = 1\nprint(x)")
    markdown = _cell(document, 0)
    text = document.dumps()

    assert set_cell_outputs(document, gone, OUTPUTS, 1).cell is None
    assert set_cell_outputs(document, markdown, OUTPUTS, 1).cell is None
    assert not document.changed and document.dumps() == text


def test_without_ids_a_cell_is_the_one_at_its_index_still_holding_its_source():
    document = NotebookDocument.parse(jupyter_text(sample_notebook(minor=4)))
    cell = _cell(document, 1)
    assert cell.cell_id is None

    assert find_cell(document, cell, same_source=True).cell == cell
    other = SelectedCell(1, None, "code", "print('another cell took its place')")
    assert find_cell(document, other, same_source=True).cell is None
    # Before sending, the source is read from the cell at that place, whatever it is now.
    assert find_cell(document, other, same_source=False).cell == cell
    assert find_cell(document, SelectedCell(9, None, "code", ""), same_source=False).cell is None

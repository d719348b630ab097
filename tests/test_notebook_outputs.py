"""Writing a cell's outputs into notebook text changes only that cell's outputs and count (pure)."""

from __future__ import annotations

import json

import nbformat

from jupyter_xcsh.notebook.document import NotebookDocument
from jupyter_xcsh.notebook.outputs import cell_position, set_outputs

from .notebooks import PNG_1x1, jupyter_text, load, sample_notebook

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


def test_outputs_are_written_as_jupyter_writes_them_and_other_cells_are_untouched():
    nb = sample_notebook()
    text = jupyter_text(nb)
    document = NotebookDocument.parse(text)

    assert set_outputs(document, 2, OUTPUTS, 9) is True

    nb.cells[2].outputs = nbformat.from_dict(OUTPUTS)
    nb.cells[2].execution_count = 9
    assert document.dumps() == jupyter_text(nb)
    load(document.dumps())


def test_only_the_outputs_and_count_bytes_of_an_oddly_written_cell_change():
    cell = (
        '{"source": "x", "zzz": {"kept": [1,2]},  "execution_count":null,'
        '"outputs" : [ ], "cell_type": "code", "metadata": {}, "id": "c1"}'
    )
    text = '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + cell + "]}"
    document = NotebookDocument.parse(text)

    set_outputs(document, 0, [{"output_type": "stream", "name": "stdout", "text": "hi\n"}], 3)

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

    assert set_outputs(document, 1, cell["outputs"], cell["execution_count"]) is False
    assert document.dumps() == text


def test_a_cell_is_found_by_id_else_by_index():
    document = NotebookDocument.parse(jupyter_text(sample_notebook()))
    cell_id = document.cells[2]["id"]

    assert cell_position(document, cell_id, 0) == 2
    assert cell_position(document, "gone", 2) is None
    assert cell_position(document, None, 3) == 3
    assert cell_position(document, None, 4) is None

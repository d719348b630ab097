"""With jupyter-collaboration, a run in place writes into the live document people see.

Run only in an environment that has jupyter-collaboration (``-m collaboration``; the check script
makes one): the open notebook is a room's shared document, and the run writes each cell's
outputs there (``via: document``) while it runs; the room saves the file itself.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect
from test_run_in_place import TICKS, lab_kernel_id, run_in_background, ticking_notebook

pytestmark = pytest.mark.collaboration


def test_a_run_writes_into_the_live_document_while_it_runs(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    path = ticking_notebook(lab, "run-rtc.ipynb")
    lab_page.open("lab/tree/run-rtc.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(3)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.collaborative")
    kernel_id = lab_kernel_id(page)

    # The person types into cell 0: it is in the shared document at once, not yet in the file.
    cells.nth(0).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # typed by a person")

    run = run_in_background(lab, notebook_path="run-rtc.ipynb", cell_index=1, end_index=3)
    output = cells.nth(1).locator(".jp-OutputArea-output")
    expect(output).to_contain_text("tick 0", timeout=30000)
    assert not run.done(), "the output showed only once the run had ended"
    lab_page.screenshot("while-running")

    result = run.result()
    assert result["isError"] is False, result["text"]
    assert result["notebook"]["via"] == "document"
    assert result["kernel"]["id"] == kernel_id
    expect(output).to_contain_text(f"tick {TICKS - 1}")
    expect(cells.nth(2).locator(".jp-OutputArea-output")).to_contain_text("last cell")
    expect(cells.nth(0)).to_contain_text("# typed by a person")
    expect(output.locator("text=tick 0")).to_have_count(1)  # appended, never duplicated

    # The room saves the file (about a second after the last change), typing included.
    def saved():
        try:
            stored = json.loads(path.read_text())["cells"]
        except ValueError:
            return False  # read while the room rewrites the file
        return (
            "typed by a person" in "".join(stored[0]["source"])
            and stored[2]["outputs"]
            and stored[1]["execution_count"] == result["cells"][0]["executionCount"]
        )

    deadline = time.monotonic() + 30
    while not saved():
        assert time.monotonic() < deadline, "the room did not save the run's outputs"
        time.sleep(0.2)
    stored = json.loads(path.read_text())["cells"]
    assert "".join(stored[1]["outputs"][0]["text"]).startswith("tick 0\ntick 1\n")
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    lab_page.screenshot("saved")


def _await(coroutine):
    """Run a coroutine to its end (in a thread: Playwright keeps this thread's loop running)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_live_writes_append_to_a_growing_stream_and_keep_the_shared_array():
    from jupyter_ydoc import YNotebook

    from jupyter_xcsh.execution.run_request import SelectedCell
    from jupyter_xcsh.notebook.document_outputs import DocumentOutputs

    notebook = YNotebook()
    notebook.set(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "id": "a",
                    "source": "x",
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                },
                {"cell_type": "markdown", "id": "b", "source": "# b", "metadata": {}},
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    target = DocumentOutputs(notebook, "n.ipynb")
    cell = SelectedCell(0, "a", "code", "x")
    youtputs = notebook.ycells[0]["outputs"]

    def stream(text):
        return [{"output_type": "stream", "name": "stdout", "text": text}]

    target.show(cell, stream("one\n"), None)
    text = youtputs[0]["text"]
    target.show(cell, stream("one\ntwo\n"), None)
    target.show(
        cell,
        [
            *stream("one\ntwo\n"),
            {"output_type": "error", "ename": "E", "evalue": "v", "traceback": []},
        ],
        3,
    )

    # The array and the text the lab observes are the ones written to, not replacements.
    assert len(youtputs) == 2
    assert str(text) == "one\ntwo\n"
    assert notebook.get_cell(0)["execution_count"] == 3
    assert notebook.get_cell(0)["outputs"][1]["ename"] == "E"
    # A person moves the cell: found by id. Deletes it: nothing is written.
    notebook.ycells.insert(
        0, notebook.create_ycell({"cell_type": "code", "source": "", "metadata": {}})
    )
    assert _await(target.store(cell, stream("done\n"), 4)) is True
    assert notebook.get_cell(1)["outputs"] == stream("done\n")
    del notebook.ycells[1]
    assert _await(target.store(cell, stream("late\n"), 5)) is False
    assert _await(target.locate(cell)) is None

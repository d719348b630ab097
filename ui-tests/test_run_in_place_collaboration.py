"""With jupyter-collaboration, a run in place writes into the live document people see.

Run only in an environment that has jupyter-collaboration (``-m collaboration``; the check script
makes one): the open notebook is a room's shared document, and the run writes each cell's
outputs there (``via: document``) while it runs; the room saves the file itself.
"""

from __future__ import annotations

import importlib.util
import json
import time

import pytest
from playwright.sync_api import expect
from test_run_in_place import TICKS, run_while_typing

pytestmark = pytest.mark.collaboration


def test_a_run_writes_into_the_live_document_while_it_runs(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    # The person's typing is in the shared document at once, not yet in the file.
    page, cells, kernel_id, run, output, path = run_while_typing(lab, lab_page, "run-rtc.ipynb")
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.collaborative")

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

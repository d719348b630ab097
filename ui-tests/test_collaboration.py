"""With jupyter-collaboration installed, agent edits neither corrupt nor duplicate cells.

Run only in an environment that has jupyter-collaboration (``-m collaboration``; the check script
makes one): there the open notebook is a shared document that the collaboration server reloads
from disk itself, and the livesync plugin must stay out of its way.
"""

from __future__ import annotations

import importlib.util
import json
import time

import nbformat
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.collaboration


def _saved_sources(path):
    notebook = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(notebook)
    return [cell.source for cell in notebook.cells]


def test_agent_edits_in_a_collaborative_notebook_appear_once(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    path = lab.write_notebook("rtc.ipynb", ["a = 1", "b = 2"])
    lab_page.open("lab/tree/rtc.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)
    collaborative = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.collaborative"
    )
    assert collaborative is True

    lab.notebook(action="insert", notebook_path="rtc.ipynb", cell_index=1, content="agent = 3")
    # The collaboration server polls the file (about once a second) and reloads it.
    expect(cells).to_have_count(3, timeout=30000)
    expect(cells.nth(1)).to_contain_text("agent = 3")
    lab.notebook(action="edit", notebook_path="rtc.ipynb", cell_index=2, content="b = 'edited'")
    expect(cells.nth(2)).to_contain_text("b = 'edited'", timeout=30000)
    # Long enough for a duplicate, or an autosave of a corrupted document, to show.
    time.sleep(4)
    expect(cells).to_have_count(3)
    lab_page.screenshot("after-agent-edits")
    assert _saved_sources(path) == ["a = 1", "agent = 3", "b = 'edited'"]
    assert len(json.loads(path.read_text())["cells"]) == 3

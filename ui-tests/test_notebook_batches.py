"""Batches of notebook changes in the lab (SPEC §10): one call, one update, one revert.

An agent applies several changes of one open notebook in one call (``changes: [...]``). The
activity panel shows that call once, listing its changes, and reverts it as a whole; with
jupyter-collaboration the open tab receives the whole batch as one update of its shared document
(``-m collaboration``), never the changes one by one.
"""

from __future__ import annotations

import importlib.util

import pytest
from playwright.sync_api import expect
from test_revert import (
    assert_file_is,
    expect_open_notebook_equals_file,
    expect_reverted,
    notebook_call,
    open_notebook,
    revert,
)

#: The changes of the batch: two edits, an insert next to a cell id, a move and a delete.
CHANGES = [
    {"action": "edit", "cell_id": "compute", "content": "x = 50\nprint(x * 2)"},
    {
        "action": "insert",
        "after_cell_id": "compute",
        "content": "## Why 50",
        "cell_type": "markdown",
    },
    {"action": "edit", "cell_id": "next", "content": "y = x - 1"},
    {"action": "move", "cell_id": "last", "to_before_cell_id": "title"},
    {"action": "delete", "cell_id": "next"},
]

#: The open notebook's cells as [id, type, source] (the ids of inserted cells are the server's).
MODEL_CELLS = """() => {
  const model = window.jupyterapp.shell.currentWidget.content.model;
  return model.sharedModel.cells.map(c => [c.getId(), c.cell_type, c.getSource()]);
}"""

#: Count the transactions from elsewhere (the server, the room) that change the tab's cells.
COUNT_CELL_UPDATES = """() => {
  const shared = window.jupyterapp.shell.currentWidget.context.model.sharedModel;
  const cells = shared.ydoc.getArray('cells');
  window.xcshCellUpdates = 0;
  shared.ydoc.on('afterTransaction', transaction => {
    if (!transaction.local && transaction.changedParentTypes.has(cells)) {
      window.xcshCellUpdates += 1;
    }
  });
}"""


def _expected_cells(result: dict) -> list[list[str]]:
    inserted = result["details"]["changes"][1]["cellId"]
    return [
        ["last", "code", "z = y * 2"],
        ["title", "markdown", "# Analysis"],
        ["compute", "code", "x = 50\nprint(x * 2)"],
        [inserted, "markdown", "## Why 50"],
    ]


def _wait_for_cells(page, expected: list[list[str]]) -> None:
    try:
        page.wait_for_function(
            f"expected => JSON.stringify(({MODEL_CELLS})()) === JSON.stringify(expected)",
            arg=expected,
            timeout=60000,
        )
    except Exception:
        assert page.evaluate(MODEL_CELLS) == expected  # says what the tab holds instead
        raise


def test_a_batch_is_one_call_listing_its_changes_and_reverts_as_one(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "batch-panel.ipynb")
    before = path.read_bytes()
    panel = lab_page.open_activity()

    result = lab.notebook(notebook_path="batch-panel.ipynb", changes=CHANGES)

    assert result["details"]["action"] == "batch"
    _wait_for_cells(lab_page.page, _expected_cells(result))
    expect(cells).to_have_count(4)
    call = notebook_call(panel, result["callId"])
    expect(call).to_have_count(1)
    expect(call.locator(".jp-xcsh-CallTitle")).to_have_text(
        "Notebook · batch · batch-panel.ipynb · 5 changes"
    )
    expect(call.locator(".jp-xcsh-BatchChangeTitle")).to_have_text(
        [
            "1. edit · cell 1 · code",
            "2. insert · cell 2 · markdown",
            "3. edit · cell 3 · code",
            "4. move · cell 4 → 0 · code",
            "5. delete · cell 4 · code",
        ]
    )
    expect(call.locator(".jp-xcsh-BatchChange").nth(1)).to_contain_text("## Why 50")
    # One call in the panel for the five changes.
    expect(panel.locator(".jp-xcsh-Call")).to_have_count(1)
    lab_page.screenshot("batch")

    expect_reverted(lab_page, revert(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells).to_have_count(4)
    expect_open_notebook_equals_file(lab_page, path)
    lab_page.screenshot("reverted")


@pytest.mark.collaboration
def test_a_batch_under_rtc_reaches_the_tab_as_one_update(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    _, cells = open_notebook(lab, lab_page, "batch-rtc.ipynb")
    page = lab_page.page
    assert page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.collaborative === true"
    )
    page.evaluate(COUNT_CELL_UPDATES)

    result = lab.notebook(notebook_path="batch-rtc.ipynb", changes=CHANGES)

    assert result["details"]["via"] == "document"
    _wait_for_cells(page, _expected_cells(result))
    assert page.evaluate("() => window.xcshCellUpdates") == 1
    expect(cells).to_have_count(4)
    for index, text in enumerate(["z = y * 2", "# Analysis", "x = 50", "## Why 50"]):
        expect(cells.nth(index)).to_contain_text(text)

    # Nothing of the batch trails behind: the next change is the tab's second update.
    lab.notebook(action="edit", notebook_path="batch-rtc.ipynb", cell_id="last", content="z = 0")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells[0]"
        ".getSource() === 'z = 0'"
    )
    assert page.evaluate("() => window.xcshCellUpdates") == 2
    lab_page.screenshot("batch")

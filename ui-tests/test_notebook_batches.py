"""Batches of notebook changes in the lab (docs/developers/contract.md §2.11): one call, one undo.

An agent applies several changes of one open notebook in one call (``changes: [...]``). The
activity panel shows that call once, listing its changes, and undoes it as a whole; with
jupyter-collaboration the open tab receives the whole batch as one update of its shared document
(``-m collaboration``), never the changes one by one: every update of its cells the tab receives
is recorded, and none shows a state between the notebook before and after the batch.
"""

from __future__ import annotations

import importlib.util

import pytest
from playwright.sync_api import expect
from test_panel_undo import (
    assert_file_is,
    expect_open_notebook_equals_file,
    expect_undone,
    notebook_call,
    open_notebook,
    undo,
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

#: Record the tab's cells after every transaction from elsewhere (the server, the room) that
#: changes them: each state the person could have seen.
RECORD_CELL_STATES = """() => {
  const shared = window.jupyterapp.shell.currentWidget.context.model.sharedModel;
  const cells = shared.ydoc.getArray('cells');
  window.xcshCellStates = [];
  shared.ydoc.on('afterTransaction', transaction => {
    if (!transaction.local && transaction.changedParentTypes.has(cells)) {
      window.xcshCellStates.push(
        shared.cells.map(c => [c.getId(), c.cell_type, c.getSource()])
      );
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


def test_a_batch_is_one_call_listing_its_changes_and_undone_as_one(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "batch-panel.ipynb")
    before = path.read_bytes()
    panel = lab_page.open_activity()

    result = lab.notebook(notebook_path="batch-panel.ipynb", changes=CHANGES)

    assert result["details"]["action"] == "batch"
    _wait_for_cells(lab_page.page, _expected_cells(result))
    expect(cells).to_have_count(4)
    call = notebook_call(panel, result["callId"])
    expect(call).to_have_count(1)
    expect(call.locator(".jp-xcsh-CallTitle")).to_have_text("batch-panel.ipynb · 5 changes · batch")
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

    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells).to_have_count(4)
    expect_open_notebook_equals_file(lab_page, path)
    lab_page.screenshot("undone")


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
    before = page.evaluate(MODEL_CELLS)
    page.evaluate(RECORD_CELL_STATES)

    result = lab.notebook(notebook_path="batch-rtc.ipynb", changes=CHANGES)

    assert result["details"]["via"] == "document"
    after = _expected_cells(result)
    _wait_for_cells(page, after)
    # One update: the tab went from the notebook before to the notebook after, never through
    # a state in between (a room reloading the same content may add updates that change
    # nothing; changes applied one by one would show four states in between).
    states = page.evaluate("() => window.xcshCellStates")
    assert after in states
    assert [s for s in states if s not in (before, after)] == []
    expect(cells).to_have_count(4)
    for index, text in enumerate(["z = y * 2", "# Analysis", "x = 50", "## Why 50"]):
        expect(cells.nth(index)).to_contain_text(text)

    # Nothing of the batch trails behind: the next change finds the tab as the batch left it.
    lab.notebook(action="edit", notebook_path="batch-rtc.ipynb", cell_id="last", content="z = 0")
    edited = [["last", "code", "z = 0"], *after[1:]]
    _wait_for_cells(page, edited)
    states = page.evaluate("() => window.xcshCellStates")
    assert [s for s in states if s not in (before, after, edited)] == []
    lab_page.screenshot("batch")

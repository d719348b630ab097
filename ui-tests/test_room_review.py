"""An agent in a collaboration room, in a real lab (docs/developers/contract.md §4.3, §4.4).

Run only in an environment that has jupyter-collaboration (``-m collaboration``). The agent edits
a cell of a notebook open in the lab, naming itself with ``X-Agent-Name``: it appears in the
lab's collaborators panel and its cursor in that cell. The person then types into the same cell
in the lab, and ``POST /api/xcsh/notebook/undo`` takes the agent's change back while the
person's typing stays in the lab's editor and in the saved file.
"""

from __future__ import annotations

import importlib.util
import json
import time
import urllib.request
from typing import Any

import nbformat
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.collaboration

CELL_SOURCE = """index => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.model.sharedModel.cells[index].getSource();
}"""


def _post(lab: Any, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(
        f"{lab.url}/{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"token {lab.token}",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read().decode())


def _wait(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _saved_source(path: Any, index: int) -> Any:
    try:
        return nbformat.reads(path.read_text(), as_version=4).cells[index].source
    except Exception:  # being written by the room: look again
        return None


def test_the_agent_is_a_collaborator_and_its_edit_undone_keeps_the_persons_typing(lab, lab_page):
    path, cells = _open_in_room(lab, lab_page, "review.ipynb", ["a = 1", "b = 2"])
    page = lab_page.page

    edit = _post(
        lab,
        "api/xcsh/notebook",
        {
            "notebook_path": "review.ipynb",
            "action": "edit",
            "cell_id": "cell-0",
            "content": "a = 100",
        },
        {"X-Agent-Name": "Claude Code"},
    )
    assert edit["details"]["via"] == "document"
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 100'", timeout=60000)

    # The agent in the collaborators panel, by its name.
    panel = page.locator("#jp-collaboration-panel")
    if not panel.is_visible():
        page.locator('.jp-SideBar li[data-id="jp-collaboration-panel"]').click()
    collaborator = panel.locator(".jp-CollaboratorsList .jp-Collaborator", has_text="Claude Code")
    expect(collaborator).to_have_count(1, timeout=30000)
    # Its cursor in the cell it edited (JupyterLab's collaboration cursors).
    expect(cells.nth(0).locator(".jp-remote-cursor")).to_have_count(1, timeout=30000)
    expect(cells.nth(1).locator(".jp-remote-cursor")).to_have_count(0)
    lab_page.screenshot("agent-in-the-room")

    # The person types into the cell the agent edited, in the lab.
    editor = _type_mine(lab, page, cells, "review.ipynb")

    undone = _post(
        lab, "api/xcsh/notebook/undo", {"path": "review.ipynb", "call_id": edit["callId"]}
    )
    assert undone["undone"] == ["cell-0"]
    # The agent's "00" is gone; the person's typing stays, in the lab's editor and the file.
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 1  # mine'", timeout=60000)
    expect(editor).to_have_text("a = 1  # mine")
    _wait(lambda: _saved_source(path, 0) == "a = 1  # mine", "the room to save the file")
    lab_page.screenshot("after-undo")


def _open_in_room(lab: Any, lab_page: Any, name: str, sources: list[str]) -> tuple[Any, Any]:
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    path = lab.write_notebook(name, sources)
    lab_page.open(f"lab/tree/{name}")
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(len(sources))
    assert lab_page.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.collaborative"
    )
    return path, cells


def _type_mine(lab: Any, page: Any, cells: Any, name: str) -> Any:
    """Type "  # mine" at the end of the first cell (whose source is "a = 100"), as a person
    does in the lab, until the room has it; return that cell's editor."""
    editor = cells.nth(0).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 100  # mine'")
    _wait(
        lambda: (
            "a = 100  # mine"
            in lab.notebook(action="read", notebook_path=name, cell_id="cell-0")["text"]
        ),
        "the typing to reach the room",
    )
    return editor


def test_undo_from_the_review_keeps_the_persons_typing_in_the_room(lab, lab_page):
    path, cells = _open_in_room(lab, lab_page, "review-room-ui.ipynb", ["a = 1", "b = 2"])
    page = lab_page.page
    lab.notebook(
        action="edit", notebook_path="review-room-ui.ipynb", cell_id="cell-0", content="a = 100"
    )
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 100'", timeout=60000)
    review = cells.nth(0).locator(".jp-xcsh-Review:not(.jp-xcsh-ReviewGhost)")
    expect(review).to_contain_text("Edited by an agent")

    _type_mine(lab, page, cells, "review-room-ui.ipynb")
    # Without a room this undo is refused (the person changed the cell since); in the room the
    # agent's change alone is taken back.
    review.locator(".jp-xcsh-Review-undo").click()
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 1  # mine'", timeout=60000)
    expect(review).to_have_count(0)
    expect(page.locator(".jp-NotebookPanel .jp-xcsh-ReviewBar")).to_be_hidden()
    _wait(lambda: _saved_source(path, 0) == "a = 1  # mine", "the room to save the file")
    lab_page.screenshot("review-undo-in-room")


def test_undo_all_of_a_batch_in_the_room(lab, lab_page):
    path, cells = _open_in_room(lab, lab_page, "review-room-batch.ipynb", ["a = 1", "b = 2"])
    page = lab_page.page
    lab.notebook(
        notebook_path="review-room-batch.ipynb",
        changes=[
            {"action": "edit", "cell_id": "cell-0", "content": "a = 10"},
            {"action": "edit", "cell_id": "cell-1", "content": "b = 20"},
            {"action": "insert", "cell_index": 2, "content": "print(a + b)"},
        ],
    )
    expect(cells).to_have_count(3)
    bar = page.locator(".jp-NotebookPanel .jp-xcsh-ReviewBar")
    expect(bar).to_contain_text("3 cells with agent changes to review")
    bar.locator(".jp-xcsh-ReviewBar-undoAll").click()
    expect(cells).to_have_count(2)
    page.wait_for_function(f"() => ({CELL_SOURCE})(0) === 'a = 1'", timeout=60000)
    page.wait_for_function(f"() => ({CELL_SOURCE})(1) === 'b = 2'", timeout=60000)
    expect(bar).to_be_hidden()
    _wait(
        lambda: _saved_source(path, 1) == "b = 2" and _saved_source(path, 2) is None,
        "the room to save the file",
    )


def test_insert_delete_and_move_are_shown_in_the_room(lab, lab_page):
    name = "review-room-kinds.ipynb"
    _, cells = _open_in_room(lab, lab_page, name, ["a = 1", "b = 2", "c = 3"])
    page = lab_page.page
    review = ".jp-xcsh-Review:not(.jp-xcsh-ReviewGhost)"
    lab.notebook(action="insert", notebook_path=name, cell_index=1, content="new = 1")
    expect(cells).to_have_count(4)
    expect(cells.nth(1).locator(review)).to_contain_text("New cell (inserted by an agent)")

    lab.notebook(action="delete", notebook_path=name, cell_id="cell-1")
    expect(cells).to_have_count(3)
    ghost = page.locator(".jp-xcsh-ReviewGhost")
    expect(ghost).to_contain_text("Deleted by an agent")
    expect(ghost.locator(".jp-xcsh-Diff-line.jp-mod-removed")).to_have_text(["1\u2212b = 2"])

    lab.notebook(action="move", notebook_path=name, cell_id="cell-2", to_index=0)
    expect(cells.nth(0).locator(review)).to_contain_text("Agent moved from position 3")
    bar = page.locator(".jp-NotebookPanel .jp-xcsh-ReviewBar")
    expect(bar).to_contain_text("3 cells with agent changes to review")

    # Undo of the delete, in the room: the cell comes back where it was.
    ghost.locator(".jp-xcsh-Review-undo").click()
    expect(page.locator(".jp-xcsh-ReviewGhost")).to_have_count(0)
    expect(cells).to_have_count(4)
    sources = f"() => [0, 1, 2, 3].map(i => ({CELL_SOURCE})(i)).sort().join('|')"
    page.wait_for_function(f"() => ({sources})() === 'a = 1|b = 2|c = 3|new = 1'", timeout=60000)
    expect(bar).to_contain_text("2 cells with agent changes to review")


def test_keep_and_undo_still_work_after_a_reload_in_the_room(lab, lab_page):
    """As without a room (test_review.py): the review of changes made before a reload is linked
    again from the activity history, and its Keep and Undo act on them (issue 41)."""
    from test_review import test_keep_and_undo_still_work_after_a_reload

    assert importlib.util.find_spec("jupyter_collaboration") is not None
    test_keep_and_undo_still_work_after_a_reload(lab, lab_page)
    assert lab_page.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.collaborative"
    )

"""An agent's turn walked through Keep and Undo, without a room and in a collaboration room.

The agent inserts a cell, edits one, and runs the notebook, through the REST tools; the person
reviews each change in the cell's header (Keep, Undo) and in the review bar (Keep all, Undo all).
After every step the notebook's content is checked twice: in the lab's model (what the person
sees) and in the file on disk (what the server saved; in a room, the room's save a moment later).

The room walk runs only where jupyter-collaboration is installed (``-m collaboration``).
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

#: The open notebook's cells as the lab holds them: source and the text of its outputs.
MODEL_CELLS = """() => {
  const model = window.jupyterapp.shell.currentWidget.content.model;
  const cells = [];
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i).sharedModel.toJSON();
    const text = (cell.outputs || []).map(o =>
      o.output_type === 'stream' ? [].concat(o.text).join('') :
      [].concat((o.data || {})['text/plain'] || []).join('')).join('');
    cells.push([[].concat(cell.source).join(''), text]);
  }
  return cells;
}"""

REVIEW = ".jp-xcsh-Review:not(.jp-xcsh-ReviewGhost)"
BAR = ".jp-NotebookPanel .jp-xcsh-ReviewBar"


def disk_cells(path: Path) -> list[list[str]] | None:
    """The saved notebook's cells (source, outputs' text), or ``None`` while it is rewritten."""
    try:
        cells = json.loads(path.read_text())["cells"]
    except (ValueError, KeyError, OSError):
        return None
    result = []
    for cell in cells:
        text = ""
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                text += "".join(output["text"])
            else:
                text += "".join(output.get("data", {}).get("text/plain", ""))
        result.append(["".join(cell["source"]), text])
    return result


class Walk:
    """One notebook open in the lab, an agent changing it, and the checks after each step."""

    def __init__(self, lab: Any, lab_page: Any, name: str, room: bool) -> None:
        self.lab = lab
        self.lab_page = lab_page
        self.page = lab_page.page
        self.name = name
        self.path = lab.write_notebook(name, ["a = 1", "b = a + 1\nprint(b)"])
        lab_page.open(f"lab/tree/{name}")
        self.cells = self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        expect(self.cells).to_have_count(2)
        collaborative = self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.context.model.collaborative"
        )
        assert collaborative is room
        # The run needs the notebook's kernel, which the lab starts with the notebook.
        self.page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.id",
            timeout=60000,
        )
        self.step = 0

    def insert(self, index: int, content: str) -> None:
        self.lab.notebook(
            action="insert", notebook_path=self.name, cell_index=index, content=content
        )

    def edit(self, index: int, content: str) -> None:
        self.lab.notebook(action="edit", notebook_path=self.name, cell_index=index, content=content)

    def run(self) -> None:
        result = self.lab.api(
            "POST", "api/xcsh/notebook/run", {"notebook_path": self.name, "all": True}, timeout=180
        )
        assert result["isError"] is False, result["text"]

    def review(self, index: int) -> Any:
        return self.cells.nth(index).locator(REVIEW)

    def bar(self) -> Any:
        return self.page.locator(BAR)

    def check(self, label: str, expected: list[list[str]]) -> None:
        """The lab's model and the file on disk both come to hold ``expected``."""
        self.step += 1
        deadline = time.monotonic() + 30
        while True:
            model = self.page.evaluate(MODEL_CELLS)
            disk = disk_cells(self.path)
            if model == expected and disk == expected:
                break
            if time.monotonic() > deadline:
                self.lab_page.screenshot(f"{self.step}-{label}-failed")
                raise AssertionError(
                    f"after {label}: expected {expected}\n model {model}\n disk  {disk}"
                )
            time.sleep(0.1)  # polling the file and the model for a condition
        self.lab_page.screenshot(f"{self.step}-{label}")


def walk_a_turn(lab: Any, lab_page: Any, name: str, room: bool) -> None:
    walk = Walk(lab, lab_page, name, room)
    start = [["a = 1", ""], ["b = a + 1\nprint(b)", ""]]
    walk.check("opened", start)

    # Turn 1: insert, edit, run; the insert kept and the edit undone, in the cells' headers.
    walk.insert(2, "c = b * 10\nprint(c)")
    expect(walk.cells).to_have_count(3)
    expect(walk.review(2)).to_contain_text("New cell (inserted by an agent)")
    walk.check("insert", [*start, ["c = b * 10\nprint(c)", ""]])

    walk.edit(0, "a = 2")
    expect(walk.review(0)).to_contain_text("Edited by an agent")
    walk.check("edit", [["a = 2", ""], start[1], ["c = b * 10\nprint(c)", ""]])

    walk.run()
    ran = [["a = 2", ""], ["b = a + 1\nprint(b)", "3\n"], ["c = b * 10\nprint(c)", "30\n"]]
    walk.check("run", ran)
    expect(walk.bar()).to_contain_text("2 cells with agent changes to review")

    walk.review(2).locator(".jp-xcsh-Review-keep").click()
    expect(walk.review(2)).to_have_count(0)
    expect(walk.bar()).to_contain_text("1 cell with agent changes to review")
    walk.check("keep-insert", ran)

    walk.review(0).locator(".jp-xcsh-Review-undo").click()
    expect(walk.review(0)).to_have_count(0)
    expect(walk.bar()).to_be_hidden()
    undone = [["a = 1", ""], *ran[1:]]
    walk.check("undo-edit", undone)

    # Turn 2: insert a cell, edit that cell, run; all undone from the review bar.
    walk.insert(3, "d = c + 1")
    expect(walk.cells).to_have_count(4)
    walk.edit(3, "d = c + 1\nprint(d)")
    walk.run()
    ran = [["a = 1", ""], ["b = a + 1\nprint(b)", "2\n"], ["c = b * 10\nprint(c)", "20\n"]]
    walk.check("turn-2", [*ran, ["d = c + 1\nprint(d)", "21\n"]])
    expect(walk.bar()).to_contain_text("1 cell with agent changes to review")
    walk.bar().locator(".jp-xcsh-ReviewBar-undoAll").click()
    expect(walk.cells).to_have_count(3)
    expect(walk.bar()).to_be_hidden()
    walk.check("undo-all", ran)

    # Turn 3: an edit and a run, all kept from the review bar.
    walk.edit(1, "b = a + 5\nprint(b)")
    walk.run()
    ran = [["a = 1", ""], ["b = a + 5\nprint(b)", "6\n"], ["c = b * 10\nprint(c)", "60\n"]]
    walk.check("turn-3", ran)
    walk.bar().locator(".jp-xcsh-ReviewBar-keepAll").click()
    expect(walk.bar()).to_be_hidden()
    expect(walk.page.locator(".jp-xcsh-Review")).to_have_count(0)
    walk.check("keep-all", ran)
    expect(walk.page.locator(".jp-Dialog")).to_have_count(0)


def test_an_agents_turn_through_keep_and_undo_without_a_room(lab, lab_page):
    walk_a_turn(lab, lab_page, "walk-file.ipynb", room=False)


@pytest.mark.collaboration
def test_an_agents_turn_through_keep_and_undo_in_a_room(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    walk_a_turn(lab, lab_page, "walk-room.ipynb", room=True)

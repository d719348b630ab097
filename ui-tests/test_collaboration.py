"""With jupyter-collaboration, agent changes go into the open room (docs/developers/contract.md §4).

Run only in an environment that has jupyter-collaboration (``-m collaboration``; the check script
makes two: the newest release and the newest 4.x). The notebook is open in a browser tab, and a
second person — a Yjs client joining the room over the real websocket — types into cell 0
without saving while the agent edits, inserts, moves and deletes other cells. Every keystroke
and every change must reach the shared document, the tab, and (once the room saves) the file.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.collaboration

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # the tests package (yroom)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.yroom import RoomOnThread  # noqa: E402

MODEL_SOURCES = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const model = panel && panel.content && panel.content.model;
  return model ? model.sharedModel.cells.map(c => [c.getId(), c.cell_type, c.getSource()]) : null;
}"""


class PersonInRoom(RoomOnThread):
    """A collaborator in the room, run on an event loop of its own thread."""

    def __init__(self, lab: Any, path: str) -> None:
        super().__init__(f"{lab.url}/", {"Authorization": f"token {lab.token}"}, path)

    def start_typing(self, cell_index: int, text: str) -> Future[None]:
        """Type ``text`` into a cell key by key (20 ms apart), in the background."""

        async def keys() -> None:
            for key in text:
                self.client.type(cell_index, key)
                await asyncio.sleep(0.02)

        return asyncio.run_coroutine_threadsafe(keys(), self.loop)

    def sources(self) -> list[str]:
        async def read() -> list[str]:
            return self.client.sources()

        return self.run(read())


def _wait_for_model(page: Any, expected: list[list[str]]) -> None:
    """Wait until the tab's notebook model holds ``expected`` ([id, type, source] per cell)."""
    try:
        page.wait_for_function(
            f"expected => JSON.stringify(({MODEL_SOURCES})()) === JSON.stringify(expected)",
            arg=expected,
            timeout=60000,
        )
    except Exception:
        # Say what the tab holds instead, for the report.
        assert page.evaluate(MODEL_SOURCES) == expected
        raise


def _saved(path: Path) -> Any:
    try:
        notebook = nbformat.reads(path.read_text(), as_version=4)
    except Exception:  # being written by the room: look again
        return None
    return notebook


def _wait(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_agent_changes_and_a_persons_typing_all_reach_the_tab_and_the_file(lab, lab_page):
    assert importlib.util.find_spec("jupyter_collaboration") is not None, (
        "run this test in an environment with jupyter-collaboration"
    )
    path = lab.write_notebook("rtc.ipynb", ["typed: ", "a = 1", "b = 2", "c = 3", "d = 4"])
    lab_page.open("lab/tree/rtc.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(5)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.collaborative")

    typed = "hello from a person, key by key"
    with PersonInRoom(lab, "rtc.ipynb") as person:
        typing = person.start_typing(0, typed)
        p = "rtc.ipynb"
        results = [
            lab.notebook(action="edit", notebook_path=p, cell_id="cell-1", content="a = 10"),
            lab.notebook(action="insert", notebook_path=p, cell_index=2, content="new = 5"),
            lab.notebook(action="move", notebook_path=p, cell_id="cell-4", to_index=1),
            lab.notebook(action="delete", notebook_path=p, cell_id="cell-3"),
            lab.notebook(
                action="edit", notebook_path=p, cell_id="cell-2", content="b", cell_type="raw"
            ),
        ]
        typing.result(60)
        assert [r["details"]["via"] for r in results] == ["document"] * 5
        new_id = results[1]["details"]["cellId"]
        expected = [
            ["cell-0", "code", "typed: " + typed],
            ["cell-4", "code", "d = 4"],
            ["cell-1", "code", "a = 10"],
            [new_id, "code", "new = 5"],
            ["cell-2", "raw", "b"],
        ]
        _wait(lambda: person.sources() == [s for _, _, s in expected], "the room's document")

    # The tab shows every keystroke and every change, in order.
    _wait_for_model(page, expected)
    expect(cells).to_have_count(5)
    expect(cells.nth(0)).to_contain_text("typed: " + typed)
    expect(cells.nth(1)).to_contain_text("d = 4")
    lab_page.screenshot("after-agent-changes")

    # The room saves the file: all of it is there, and the notebook is valid.
    _wait(
        lambda: (
            (nb := _saved(path)) is not None
            and [[c.get("id"), c.cell_type, c.source] for c in nb.cells] == expected
        ),
        "the room to save the file",
    )
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))
    assert len(json.loads(path.read_text())["cells"]) == 5

    # A move is a delete plus an insert, which the lab decodes: it survives a reload.
    lab_page.open("lab/tree/rtc.ipynb")
    expect(cells).to_have_count(5, timeout=60000)
    _wait_for_model(page, expected)
    expect(cells.nth(1)).to_contain_text("d = 4")
    lab_page.screenshot("after-reload")


def test_read_shows_unsaved_typing_from_the_tab(lab, lab_page):
    lab.write_notebook("typing.ipynb", ["x = 1", "y = 2"])
    lab_page.open("lab/tree/typing.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)
    editor = cells.nth(1).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # typed in the tab")
    deadline = time.monotonic() + 30
    while True:
        result = lab.notebook(action="read", notebook_path="typing.ipynb")
        if "typed in the tab" in result["text"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "y = 2  # typed in the tab" in result["text"]
    assert result["details"]["via"] == "document"

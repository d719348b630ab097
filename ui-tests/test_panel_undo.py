"""Undo from the activity panel (docs/developers/contract.md §10.3): exact, never over later edits.

The panel's Undo is the review's undo (one code path: in a room the room's undo, else the
guarded undo). Each test opens a notebook in the lab, lets an agent change it through the
notebook tool, undoes the change from the panel, and compares the file byte for byte with the
file before the agent's call, and the open notebook with the file. No fixed sleeps: each step
waits for what the person sees, or for the file to be saved (with jupyter-collaboration the
room saves it a moment after a change; without it the tool has saved it before it answers).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from ipykernel.ipkernel import IPythonKernel
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from playwright.sync_api import expect

#: The open notebook's cells, as its model holds them (what the person sees).
OPEN_CELLS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.model.toJSON().cells;
}"""


def write_notebook(root: Path, name: str) -> Path:
    """A notebook as Jupyter writes it, with outputs, metadata and ids to restore exactly."""
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Analysis", id="title"),
            new_code_cell(
                "x = 21\nprint(x * 2)",
                id="compute",
                execution_count=1,
                metadata={"tags": ["keep-me"]},
                outputs=[new_output("stream", name="stdout", text="42\n")],
            ),
            new_code_cell("y = x + 1", id="next", execution_count=2),
            new_code_cell("z = y * 2", id="last"),
        ],
        # As the lab and the kernel would set them: opening the notebook leaves it as written
        # (a collaboration room that saves it again writes the very same bytes).
        metadata={
            "kernelspec": {
                "name": "python3",
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
            },
            "language_info": IPythonKernel.language_info,
        },
    )
    path = root / name
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return path


def file_cells(path: Path) -> list[dict[str, Any]]:
    """The file's cells in the form the lab's model gives them (sources joined)."""
    return [_comparable(cell) for cell in nbformat.reads(path.read_text(), as_version=4).cells]


def _comparable(cell: dict[str, Any]) -> dict[str, Any]:
    keep = {k: cell[k] for k in ("cell_type", "id", "source") if k in cell}
    if isinstance(keep.get("source"), list):
        keep["source"] = "".join(keep["source"])
    if cell["cell_type"] == "code":
        keep["execution_count"] = cell.get("execution_count")
        keep["outputs"] = [
            {**o, "text": "".join(o["text"]) if isinstance(o.get("text"), list) else o.get("text")}
            for o in cell.get("outputs", [])
        ]
    # The lab marks code cells trusted in its model; nothing else differs.
    keep["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k != "trusted"}
    return keep


#: Seconds a collaboration room may take to save a change (it saves about once a second).
SAVE_TIMEOUT = 30


def wait_for_file(path: Path, saved: Callable[[bytes], bool], what: str) -> bytes:
    """Wait until the file's bytes satisfy ``saved``; return them."""
    deadline = time.monotonic() + SAVE_TIMEOUT
    while True:
        data = path.read_bytes()
        if saved(data):
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never {what}:\n{data.decode()}")
        time.sleep(0.05)  # polling the file for a condition, not waiting a fixed time


def assert_file_is(path: Path, expected: bytes) -> None:
    """The file is (or, saved by a collaboration room, becomes) exactly ``expected``."""
    wait_for_file(path, lambda data: data == expected, "became the expected bytes")


def open_notebook(lab, lab_page, name: str) -> tuple[Path, Any]:
    path = write_notebook(lab.root, name)
    lab_page.open(f"lab/tree/{name}")
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(4)
    return path, cells


def collaborative(lab_page) -> bool:
    """Whether the notebook in front is a collaboration room's shared document."""
    return bool(
        lab_page.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.context.model.collaborative === true"
        )
    )


def open_cells(lab_page) -> list[dict[str, Any]]:
    return [_comparable(cell) for cell in lab_page.page.evaluate(OPEN_CELLS)]


def notebook_call(panel, call_id: str):
    return panel.locator(f'.jp-xcsh-Call[data-call-id="{call_id}"]')


def undo(lab_page, call_id: str):
    """Click the call's Undo button in the panel; return the call's element."""
    panel = lab_page.open_activity()
    call = notebook_call(panel, call_id)
    call.locator(".jp-xcsh-CallHeader").hover()  # the line shows its Keep and Undo on hover
    call.locator(".jp-xcsh-Undo").click()
    return call


def expect_undone(lab_page, call) -> None:
    """Wait for the panel to say the call was undone, and nothing of it is left to review."""
    expect(call.locator(".jp-xcsh-Undone")).to_have_text("Undone")
    expect(lab_page.page.locator(".jp-NotebookPanel .jp-xcsh-Review")).to_have_count(0)


def expect_open_notebook_equals_file(lab_page, path: Path) -> None:
    wanted = file_cells(path)
    lab_page.page.wait_for_function(
        "n => window.jupyterapp.shell.currentWidget.content.model.cells.length === n",
        arg=len(wanted),
    )
    # The open notebook follows the saved file as soon as the event arrives.
    expect(lab_page.page.locator(".jp-NotebookPanel .jp-Cell")).to_have_count(len(wanted))
    for index, cell in enumerate(wanted):
        expect(lab_page.page.locator(".jp-NotebookPanel .jp-Cell").nth(index)).to_contain_text(
            cell["source"].splitlines()[0] if cell["source"] else ""
        )
    assert open_cells(lab_page) == wanted


def test_undo_an_edit_restores_the_file_and_the_open_notebook(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "undo-edit.ipynb")
    before = path.read_bytes()

    result = lab.notebook(
        action="edit", notebook_path="undo-edit.ipynb", cell_id="compute", content="x = 0"
    )
    expect(cells.nth(1)).to_contain_text("x = 0")
    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells.nth(1)).to_contain_text("print(x * 2)")
    expect(cells.nth(1).locator(".jp-OutputArea-output")).to_have_text("42")
    expect_open_notebook_equals_file(lab_page, path)
    lab_page.screenshot("undone")


def test_undo_a_type_change_brings_the_outputs_back(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "undo-type.ipynb")
    before = path.read_bytes()

    result = lab.notebook(
        action="edit",
        notebook_path="undo-type.ipynb",
        cell_id="compute",
        content="Now text",
        cell_type="markdown",
    )
    expect(cells.nth(1)).to_have_class(re.compile(r"\bjp-MarkdownCell\b"))
    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells.nth(1)).to_have_class(re.compile(r"\bjp-CodeCell\b"))
    expect_open_notebook_equals_file(lab_page, path)


def test_undo_an_insert_restores_the_file_and_the_open_notebook(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "undo-insert.ipynb")
    before = path.read_bytes()

    result = lab.notebook(
        action="insert", notebook_path="undo-insert.ipynb", cell_index=2, content="agent = 1"
    )
    expect(cells).to_have_count(5)
    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells).to_have_count(4)
    expect_open_notebook_equals_file(lab_page, path)


def test_undo_a_delete_restores_the_cell_with_its_outputs(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "undo-delete.ipynb")
    before = path.read_bytes()

    result = lab.notebook(action="delete", notebook_path="undo-delete.ipynb", cell_id="compute")
    expect(cells).to_have_count(3)
    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect(cells).to_have_count(4)
    expect(cells.nth(1).locator(".jp-OutputArea-output")).to_have_text("42")
    expect_open_notebook_equals_file(lab_page, path)


def test_undo_a_move_restores_the_file_and_the_open_notebook(lab, lab_page):
    path, cells = open_notebook(lab, lab_page, "undo-move.ipynb")
    before = path.read_bytes()

    result = lab.notebook(
        action="move", notebook_path="undo-move.ipynb", cell_id="title", to_index=3
    )
    expect(cells.nth(3)).to_contain_text("# Analysis")
    expect_undone(lab_page, undo(lab_page, result["callId"]))

    assert_file_is(path, before)
    expect_open_notebook_equals_file(lab_page, path)


def test_an_undo_after_the_person_typed_in_the_cell(lab, lab_page):
    """Without a room the undo is refused (it would overwrite the typing); in a room the room's
    undo takes the agent's change back and keeps the typing."""
    path, cells = open_notebook(lab, lab_page, "undo-typed.ipynb")
    page = lab_page.page
    result = lab.notebook(
        action="edit", notebook_path="undo-typed.ipynb", cell_id="next", content="y = 'agent'"
    )
    expect(cells.nth(2)).to_contain_text("y = 'agent'")
    cells.nth(2).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    # Unsaved without jupyter-collaboration; saved by the room with it.
    room = collaborative(lab_page)
    typed = "# mine" if room else "'agent'"
    wait_for_file(path, lambda data: typed.encode() in data, "held the cell as it is now")

    call = undo(lab_page, result["callId"])

    if room:
        expect(call.locator(".jp-xcsh-Undone")).to_have_text("Undone")
        expect(cells.nth(2)).to_contain_text("y = x + 1  # mine")
        lab_page.screenshot("undone-in-room")
        return
    refusal = call.locator(".jp-xcsh-UndoRefused")
    expect(refusal).to_contain_text(
        "Not undone: the cell was changed in the open notebook after this call."
    )
    expect(call.locator(".jp-xcsh-Undone")).to_have_count(0)
    # The same refusal in the cell's header: one undo, one answer.
    expect(cells.nth(2).locator(".jp-xcsh-Review-message")).to_contain_text(
        "Not undone: the cell was changed in the open notebook after this call."
    )
    lab_page.screenshot("refused")
    expect(cells.nth(2)).to_contain_text("y = 'agent'  # mine")
    # Nothing was sent: the file never gets the undone source back.
    assert b"y = x + 1" not in path.read_bytes()


def test_an_undo_of_a_cell_changed_since_is_refused_by_the_server(lab, lab_page):
    # Not open in the lab: only the server's precondition stands between the undo and the
    # later change.
    path = write_notebook(lab.root, "undo-stale.ipynb")
    lab_page.open()
    first = lab.notebook(
        action="edit", notebook_path="undo-stale.ipynb", cell_id="next", content="y = 1"
    )
    lab.notebook(action="edit", notebook_path="undo-stale.ipynb", cell_id="next", content="y = 2")
    after = path.read_bytes()  # not open anywhere: the tool saved the file itself

    call = undo(lab_page, first["callId"])

    refusal = call.locator(".jp-xcsh-UndoRefused")
    expect(refusal).to_contain_text("Not undone: the cell was changed after this call.")
    expect(refusal).to_contain_text("Cell 2 changed since it was read")
    assert path.read_bytes() == after
    lab_page.screenshot("refused-by-server")

"""Reviewing agent changes in the notebook: diffs, ghosts, keep and undo, across a reload.

Each test opens a notebook in the lab (no collaboration room), lets an agent change it through
the notebook tool, and reviews the change as a person does: the diff above the cell, the ghost
of a deleted cell, the Keep / Undo buttons and the review bar. Undo without a room is the
guarded undo: refused with a clear message when the person typed into the cell since. With
``XCSH_UI_SCREENSHOTS`` set, the screenshots of the review flow are also saved as
``docs/images/review-*.png``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

REPO = Path(__file__).resolve().parent.parent
DOCS_IMAGES = REPO / "docs" / "images"
#: The lab's log, as conftest.py writes it: every request answered 4xx is a warning there.
LAB_LOG = (
    Path(os.environ.get("XCSH_UI_SCREENSHOTS") or REPO / "test-artifacts" / "ui-tests").resolve()
    / "lab.log"
)

SOURCES = ["# setup\nx = 21", "y = x * 2\nprint(y)", "z = y + 1", "w = z"]


def open_review(lab, lab_page, name: str) -> Any:
    """Open a notebook of four code cells; return its cells."""
    return lab_page.open_notebook(name, SOURCES)


def doc_screenshot(lab_page, label: str) -> None:
    """A screenshot of the review flow, kept for the docs when screenshots are asked for."""
    path = lab_page.screenshot(label)
    if os.environ.get("XCSH_UI_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / f"review-{label}.png")


def review_of(cell) -> Any:
    return cell.locator(".jp-xcsh-Review:not(.jp-xcsh-ReviewGhost)")


def bar(lab_page) -> Any:
    return lab_page.page.locator(".jp-NotebookPanel .jp-xcsh-ReviewBar")


def open_source(lab_page, index: int) -> str:
    return lab_page.page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.model.cells.get(i)"
        ".sharedModel.getSource()",
        index,
    )


def assert_source_becomes(lab_page, index: int, expected: str) -> None:
    """The open notebook's cell ``index`` comes to hold ``expected`` (a change arrives a moment
    after the review shows it done)."""
    with contextlib.suppress(PlaywrightTimeoutError):
        lab_page.page.wait_for_function(
            "([i, s]) => window.jupyterapp.shell.currentWidget.content.model.cells.get(i)"
            "?.sharedModel.getSource() === s",
            arg=[index, expected],
            timeout=10_000,
        )
    assert open_source(lab_page, index) == expected


def test_an_edit_shows_a_line_diff_and_can_be_kept(lab, lab_page):
    cells = open_review(lab, lab_page, "review-edit.ipynb")
    lab.notebook(
        action="edit",
        notebook_path="review-edit.ipynb",
        cell_id="cell-1",
        content="y = x * 3\nprint(y)\nprint('done')",
    )
    review = review_of(cells.nth(1))
    expect(review).to_contain_text("Edited by an agent")
    diff = review.locator(".jp-xcsh-Diff.jp-mod-unified")
    expect(diff.locator(".jp-xcsh-Diff-line.jp-mod-removed")).to_have_text(["1\u2212y = x * 2"])
    expect(diff.locator(".jp-xcsh-Diff-line.jp-mod-added")).to_have_count(2)
    expect(diff.locator(".jp-xcsh-Diff-line.jp-mod-same")).to_contain_text(["print(y)"])
    expect(bar(lab_page)).to_contain_text("1 cell with agent changes to review")
    doc_screenshot(lab_page, "edit-unified")

    review.locator(".jp-xcsh-Review-layout").click()
    side = review.locator(".jp-xcsh-Diff.jp-mod-sideBySide")
    expect(side.locator(".jp-xcsh-Diff-row").first).to_contain_text("y = x * 2")
    expect(side.locator(".jp-xcsh-Diff-row").first).to_contain_text("y = x * 3")
    doc_screenshot(lab_page, "edit-side-by-side")

    review.locator(".jp-xcsh-Review-keep").click()
    expect(review).to_have_count(0)
    expect(bar(lab_page)).to_be_hidden()
    assert open_source(lab_page, 1) == "y = x * 3\nprint(y)\nprint('done')"


def test_insert_delete_and_move_are_shown(lab, lab_page):
    cells = open_review(lab, lab_page, "review-kinds.ipynb")
    page = lab_page.page
    lab.notebook(
        action="insert", notebook_path="review-kinds.ipynb", cell_index=1, content="new = 1"
    )
    expect(cells).to_have_count(5)
    expect(review_of(cells.nth(1))).to_contain_text("New cell (inserted by an agent)")

    lab.notebook(action="delete", notebook_path="review-kinds.ipynb", cell_id="cell-2")
    expect(cells).to_have_count(4)
    ghost = page.locator(".jp-xcsh-ReviewGhost")
    expect(ghost).to_contain_text("Deleted by an agent (was at position 4)")
    expect(ghost.locator(".jp-xcsh-Diff-line.jp-mod-removed")).to_have_text(["1\u2212z = y + 1"])
    # At the deleted cell's old position: above the cell now there.
    expect(cells.nth(3).locator(".jp-xcsh-ReviewGhost")).to_have_count(1)

    lab.notebook(action="move", notebook_path="review-kinds.ipynb", cell_id="cell-3", to_index=0)
    expect(review_of(cells.nth(0))).to_contain_text("Agent moved from position 4")
    expect(bar(lab_page)).to_contain_text("3 cells with agent changes to review")
    doc_screenshot(lab_page, "kinds")

    # Undo of the delete: the cell comes back, and its ghost goes.
    ghost.locator(".jp-xcsh-Review-undo").click()
    expect(page.locator(".jp-xcsh-ReviewGhost")).to_have_count(0)
    expect(cells).to_have_count(5)
    expect(bar(lab_page)).to_contain_text("2 cells with agent changes to review")


def test_undo_after_the_person_typed_is_refused(lab, lab_page):
    cells = open_review(lab, lab_page, "review-typed.ipynb")
    page = lab_page.page
    lab.notebook(
        action="edit", notebook_path="review-typed.ipynb", cell_id="cell-2", content="z = 'agent'"
    )
    review = review_of(cells.nth(2))
    expect(review).to_contain_text("Edited by an agent")
    cells.nth(2).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    expect(review.locator(".jp-xcsh-Review-since")).to_have_text("changed since by you")

    review.locator(".jp-xcsh-Review-undo").click()
    expect(review.locator(".jp-xcsh-Review-message")).to_have_text(
        "Not undone: the cell was changed in the open notebook after this call."
        " Keep the change, or undo your own edit first."
    )
    doc_screenshot(lab_page, "undo-refused")
    assert open_source(lab_page, 2) == "z = 'agent'  # mine"


def test_keep_all_and_undo_all_of_a_batch(lab, lab_page):
    cells = open_review(lab, lab_page, "review-batch.ipynb")
    changes = [
        {"action": "edit", "cell_id": "cell-0", "content": "# setup\nx = 1"},
        {"action": "edit", "cell_id": "cell-3", "content": "w = z * 10"},
        {"action": "insert", "cell_index": 4, "content": "print(w)"},
    ]
    lab.notebook(notebook_path="review-batch.ipynb", changes=changes)
    expect(cells).to_have_count(5)
    expect(bar(lab_page)).to_contain_text("3 cells with agent changes to review")
    expect(review_of(cells.nth(0)).locator(".jp-xcsh-Review-undoCall")).to_have_text(
        "Undo call (3)"
    )
    doc_screenshot(lab_page, "batch")

    bar(lab_page).locator(".jp-xcsh-ReviewBar-undoAll").click()
    expect(cells).to_have_count(4)
    expect(bar(lab_page)).to_be_hidden()
    for index, source in enumerate(SOURCES):
        assert_source_becomes(lab_page, index, source)

    lab.notebook(notebook_path="review-batch.ipynb", changes=changes)
    expect(bar(lab_page)).to_contain_text("3 cells with agent changes to review")
    bar(lab_page).locator(".jp-xcsh-ReviewBar-keepAll").click()
    expect(bar(lab_page)).to_be_hidden()
    expect(lab_page.page.locator(".jp-xcsh-Review")).to_have_count(0)
    assert_source_becomes(lab_page, 3, "w = z * 10")


def test_a_reload_brings_back_pending_changes_only(lab, lab_page):
    cells = open_review(lab, lab_page, "review-reload.ipynb")
    lab.notebook(
        action="edit", notebook_path="review-reload.ipynb", cell_id="cell-1", content="kept = 1"
    )
    lab.notebook(
        action="edit", notebook_path="review-reload.ipynb", cell_id="cell-2", content="pending = 2"
    )
    expect(bar(lab_page)).to_contain_text("2 cells with agent changes to review")
    review_of(cells.nth(1)).locator(".jp-xcsh-Review-keep").click()
    expect(bar(lab_page)).to_contain_text("1 cell with agent changes to review")

    lab_page.page.reload()
    lab_page.page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60000)
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(4)
    expect(review_of(cells.nth(2))).to_contain_text("Edited by an agent")
    expect(review_of(cells.nth(2)).locator(".jp-xcsh-Diff-line.jp-mod-added")).to_have_text(
        ["1+pending = 2"]
    )
    expect(cells.nth(2)).to_have_class(re_class("jp-xcsh-mod-agentChanged"))
    # The kept change stays kept: no diff, no mark.
    expect(review_of(cells.nth(1))).to_have_count(0)
    expect(cells.nth(1)).not_to_have_class(re_class("jp-xcsh-mod-agentChanged"))
    expect(bar(lab_page)).to_contain_text("1 cell with agent changes to review")
    doc_screenshot(lab_page, "after-reload")


def re_class(name: str) -> Any:
    import re

    return re.compile(rf"\b{re.escape(name)}\b")


def test_review_commands_are_in_the_palette(lab, lab_page):
    open_review(lab, lab_page, "review-palette.ipynb")
    labels = lab_page.page.evaluate(
        """() => ['keep-cell', 'undo-cell', 'keep-all', 'undo-all', 'next', 'previous']
            .map(id => window.jupyterapp.commands.label('jupyter-xcsh:review-' + id))"""
    )
    assert labels == [
        "Keep Agent Change to Cell",
        "Undo Agent Change to Cell",
        "Keep All Agent Changes",
        "Undo All Agent Changes",
        "Next Agent Change",
        "Previous Agent Change",
    ]
    lab_page.page.wait_for_function(
        "() => window.jupyterapp.commands.keyBindings"
        ".some(b => b.command === 'jupyter-xcsh:review-keep-cell')"
    )
    keys = lab_page.page.evaluate(
        """() => window.jupyterapp.commands.keyBindings
            .filter(b => b.command.startsWith('jupyter-xcsh:review-'))
            .map(b => b.command + ' ' + b.keys.join(','))"""
    )
    # The lab binds "Accel" to Ctrl on Linux.
    assert "jupyter-xcsh:review-keep-cell Ctrl Alt Y" in keys
    assert "jupyter-xcsh:review-undo-all Ctrl Alt Shift N" in keys


def test_keyboard_shortcuts_go_to_and_keep_changes(lab, lab_page):
    cells = open_review(lab, lab_page, "review-keys.ipynb")
    page = lab_page.page
    for cell_id, content in (("cell-1", "a = 1"), ("cell-3", "b = 2")):
        lab.notebook(
            action="edit", notebook_path="review-keys.ipynb", cell_id=cell_id, content=content
        )
    expect(bar(lab_page)).to_contain_text("2 cells with agent changes to review")
    cells.nth(0).locator(".jp-InputPrompt").click()  # command mode, first cell active
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"

    page.keyboard.press("Control+Alt+Period")  # next change
    page.wait_for_function(f"() => ({active})() === 1")
    page.keyboard.press("Control+Alt+Period")
    page.wait_for_function(f"() => ({active})() === 3")
    page.keyboard.press("Control+Alt+Comma")  # previous change
    page.wait_for_function(f"() => ({active})() === 1")

    page.keyboard.press("Control+Alt+y")  # keep the active cell's change
    expect(review_of(cells.nth(1))).to_have_count(0)
    expect(review_of(cells.nth(3))).to_have_count(1)
    expect(bar(lab_page)).to_contain_text("1 cell with agent changes to review")

    page.keyboard.press("Control+Alt+Shift+KeyN")  # undo all
    expect(bar(lab_page)).to_be_hidden()
    assert_source_becomes(lab_page, 3, "w = z")
    assert_source_becomes(lab_page, 1, "a = 1")


def test_the_activity_panels_undo_is_the_reviews_undo_and_lasts(lab, lab_page):
    cells = open_review(lab, lab_page, "review-panel.ipynb")
    result = lab.notebook(
        action="edit", notebook_path="review-panel.ipynb", cell_id="cell-2", content="z = 0"
    )
    expect(review_of(cells.nth(2))).to_contain_text("Edited by an agent")
    panel = lab_page.open_activity()
    call = panel.locator(f'.jp-xcsh-Call[data-call-id="{result["callId"]}"]')
    call.locator(".jp-xcsh-CallHeader").hover()  # the line shows its Keep and Undo on hover
    call.locator(".jp-xcsh-Undo").click()
    expect(call.locator(".jp-xcsh-Undone")).to_have_text("Undone")
    expect(cells.nth(2)).to_contain_text("z = y + 1")
    # Neither the undone change nor the undo (the person's) is left to review.
    expect(lab_page.page.locator(".jp-xcsh-Review")).to_have_count(0)
    expect(bar(lab_page)).to_be_hidden()

    # The history keeps both: the agent's call undone, the undo as the person's own.
    deadline = time.monotonic() + 30
    while True:
        page = lab.api("GET", "api/xcsh/activity?path=review-panel.ipynb")
        reviews = {e["callId"]: e["review"] for e in page["entries"]}
        if len(reviews) == 2 and all(reviews.values()):
            break
        assert time.monotonic() < deadline, reviews
        time.sleep(0.05)  # polling the server for a condition, not waiting a fixed time
    assert reviews[result["callId"]] == [{"cellId": None, "state": "undone"}]
    assert [r for k, r in reviews.items() if k != result["callId"]] == [
        [{"cellId": None, "state": "yours"}]
    ]

    lab_page.page.reload()
    lab_page.page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60000)
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(4)
    expect(cells.nth(2)).to_contain_text("z = y + 1")
    # Once the history is back in the panel, nothing of it is back in review, and the undo is
    # still the person's, not an agent's call (issue 41).
    panel = lab_page.open_activity()
    expect(panel.locator(".jp-xcsh-Call")).to_have_count(2)
    expect(lab_page.page.locator(".jp-xcsh-Review")).to_have_count(0)
    mine = panel.locator(".jp-xcsh-Call:has(.jp-xcsh-UndoOf)")
    expect(mine.locator(".jp-xcsh-CallTitle")).to_contain_text("review-panel.ipynb · ")
    expect(mine.locator(".jp-xcsh-CallTitle")).to_contain_text(" · undo · You")
    expect(panel.locator(".jp-xcsh-CallTitle", has_text="· edit")).to_have_count(1)
    agent_call = panel.locator(f'.jp-xcsh-Call[data-call-id="{result["callId"]}"]')
    expect(agent_call.locator(".jp-xcsh-Undone")).to_have_text("Undone")


def test_undo_without_a_room_is_the_persons_at_once(lab, lab_page):
    """Undo in a notebook no room holds goes straight to the guarded undo (no failed request
    to the room's undo first), and the activity panel lists it as the person's undo, the agent's
    call as undone: never as an agent's call (issue 41)."""
    log = LAB_LOG
    logged = log.stat().st_size if log.exists() else 0
    cells = open_review(lab, lab_page, "review-own.ipynb")
    result = lab.notebook(
        action="edit", notebook_path="review-own.ipynb", cell_id="cell-2", content="z = 'agent'"
    )
    review = review_of(cells.nth(2))
    expect(review).to_contain_text("Edited by an agent")
    review.locator(".jp-xcsh-Review-undo").click()
    assert_source_becomes(lab_page, 2, "z = y + 1")
    expect(lab_page.page.locator(".jp-xcsh-Review")).to_have_count(0)

    panel = lab_page.open_activity()
    agent_call = panel.locator(f'.jp-xcsh-Call[data-call-id="{result["callId"]}"]')
    expect(agent_call.locator(".jp-xcsh-Undone")).to_have_text("Undone")
    calls = panel.locator(".jp-xcsh-Call")
    expect(calls).to_have_count(2)
    undo = panel.locator(".jp-xcsh-Call:has(.jp-xcsh-UndoOf)")
    expect(undo.locator(".jp-xcsh-CallTitle")).to_contain_text("review-own.ipynb · ")
    expect(undo.locator(".jp-xcsh-CallTitle")).to_contain_text(" · undo · You")
    expect(panel.locator(".jp-xcsh-CallTitle", has_text="· edit")).to_have_count(1)

    console = "\n".join(lab_page.console)
    assert "notebook/undo" not in console and "404" not in console, console
    new_log = log.read_text(errors="replace")[logged:] if log.exists() else ""
    assert "notebook/undo" not in new_log, new_log


#: Where each row's right column starts, and whether any row is wider than the diff.
SIDE_BY_SIDE_GEOMETRY = """diff => {
  const rows = [...diff.querySelectorAll('.jp-xcsh-Diff-row')];
  return {
    rights: rows.map(r => Math.round(r.children[1].getBoundingClientRect().left)),
    widths: rows.map(r => Math.round(r.children[0].getBoundingClientRect().width)),
    overflow: rows.some(r => r.scrollWidth > r.clientWidth + 1),
    diffWidth: Math.round(diff.getBoundingClientRect().width)
  };
}"""


def test_a_long_line_keeps_the_side_by_side_columns_in_line(lab, lab_page):
    cells = open_review(lab, lab_page, "review-long.ipynb")
    long_line = "y = '" + "long " * 120 + "'"
    lab.notebook(
        action="edit",
        notebook_path="review-long.ipynb",
        cell_id="cell-1",
        content=f"{long_line}\nprint(y)\nprint('more')",
    )
    review = review_of(cells.nth(1))
    expect(review).to_contain_text("Edited by an agent")
    review.locator(".jp-xcsh-Review-layout").click()
    side = review.locator(".jp-xcsh-Diff.jp-mod-sideBySide")
    expect(side.locator(".jp-xcsh-Diff-row")).to_have_count(3)
    geometry = side.evaluate(SIDE_BY_SIDE_GEOMETRY)
    # Every row's right column starts at the same place, each column half the diff, and no
    # row runs past the diff's edge: the long line wraps in its column.
    assert len(set(geometry["rights"])) == 1, geometry
    assert len(set(geometry["widths"])) == 1, geometry
    assert abs(geometry["widths"][0] * 2 - geometry["diffWidth"]) <= 24, geometry
    assert geometry["overflow"] is False, geometry
    lab_page.screenshot("long-line")


def test_the_review_bar_counts_cells_not_calls(lab, lab_page):
    """An insert then an edit of the new cell, and an edit of another: two cells to review,
    though three calls changed them."""
    cells = open_review(lab, lab_page, "review-count.ipynb")
    lab.notebook(action="insert", notebook_path="review-count.ipynb", cell_index=4, content="v = 1")
    expect(cells).to_have_count(5)
    lab.notebook(action="edit", notebook_path="review-count.ipynb", cell_index=4, content="v = 2")
    lab.notebook(
        action="edit", notebook_path="review-count.ipynb", cell_id="cell-0", content="x = 0"
    )
    expect(cells.nth(4)).to_contain_text("v = 2")
    expect(review_of(cells.nth(0))).to_contain_text("Edited by an agent")
    expect(bar(lab_page)).to_contain_text("2 cells with agent changes to review")


def test_keep_and_undo_still_work_after_a_reload(lab, lab_page):
    """The review of changes made before a reload is linked again from the activity history:
    the cell's Keep and Undo, and the activity panel's, act on them (issue 41)."""
    name = "review-relink.ipynb"
    cells = open_review(lab, lab_page, name)
    lab.notebook(action="edit", notebook_path=name, cell_id="cell-0", content="x = 0")
    inserted = lab.notebook(action="insert", notebook_path=name, cell_index=4, content="v = 1")
    edited = lab.notebook(action="edit", notebook_path=name, cell_id="cell-2", content="z = 0")
    expect(bar(lab_page)).to_contain_text("3 cells with agent changes to review")

    lab_page.page.reload()
    lab_page.page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60000)
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(5)
    expect(bar(lab_page)).to_contain_text("3 cells with agent changes to review")

    # The cell's Undo, on a change made before the reload: undone in the file and the lab.
    review_of(cells.nth(0)).locator(".jp-xcsh-Review-undo").click()
    expect(review_of(cells.nth(0))).to_have_count(0)
    assert_source_becomes(lab_page, 0, SOURCES[0])
    saved = lab.notebook(action="read", notebook_path=name, cell_id="cell-0")["text"]
    assert "x = 21" in saved and "x = 0" not in saved, saved

    # The cell's Keep: kept, the file as the agent left it.
    review_of(cells.nth(4)).locator(".jp-xcsh-Review-keep").click()
    expect(review_of(cells.nth(4))).to_have_count(0)
    assert_source_becomes(lab_page, 4, "v = 1")

    # The activity panel's Undo, on a call of before the reload: the review's undo.
    panel = lab_page.open_activity()
    call = panel.locator(f'.jp-xcsh-Call[data-call-id="{edited["callId"]}"]')
    call.locator(".jp-xcsh-CallHeader").hover()  # the line shows its Keep and Undo on hover
    call.locator(".jp-xcsh-Undo").click()
    expect(call.locator(".jp-xcsh-Undone")).to_have_text("Undone")
    assert_source_becomes(lab_page, 2, SOURCES[2])
    expect(bar(lab_page)).to_be_hidden()
    kept = panel.locator(f'.jp-xcsh-Call[data-call-id="{inserted["callId"]}"]')
    expect(kept.locator(".jp-xcsh-Undone")).to_have_text("Kept")
    doc_screenshot(lab_page, "after-reload-undone")

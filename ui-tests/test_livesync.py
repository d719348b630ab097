"""Agent edits show up in a notebook open in the lab, and never cost the person their typing."""

from __future__ import annotations

import json
import re
import time

from playwright.sync_api import expect


def test_agent_insert_appears_in_the_open_notebook(lab, lab_page):
    lab.write_notebook("insert.ipynb", ["a = 1", "b = 2"])
    lab_page.open("lab/tree/insert.ipynb")
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)

    lab.notebook(
        action="insert", notebook_path="insert.ipynb", cell_index=1, content="agent_was_here = 3"
    )
    saved = time.monotonic()

    expect(cells).to_have_count(3)
    expect(cells.nth(1)).to_contain_text("agent_was_here = 3")
    # The issue asks for "within a second": measured and reported here (and in the lab's
    # screenshot folder), not asserted, since a loaded CI machine adds its own latency.
    latency = time.monotonic() - saved
    (lab_page.screenshot("inserted").parent / "livesync-latency.txt").write_text(
        f"{latency:.3f} s\n"
    )
    print(f"agent insert visible in the open notebook {latency * 1000:.0f} ms after the save")


def test_unsaved_typing_and_agent_edit_are_both_saved_without_a_dialog(lab, lab_page):
    path = lab.write_notebook("both.ipynb", ["human = 1", "agent = 1"])
    lab_page.open("lab/tree/both.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)
    # Else the kernel's language_info, arriving after the save, would leave it unsaved.
    lab_page.wait_for_language_info()

    # The person types into cell 0 and does not save.
    editor = cells.nth(0).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # typed by a person")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(1)

    lab.notebook(
        action="edit", notebook_path="both.ipynb", cell_index=1, content="agent = 'edited'"
    )
    expect(cells.nth(1)).to_contain_text("agent = 'edited'")
    expect(cells.nth(0)).to_contain_text("# typed by a person")
    lab_page.screenshot("before-save")

    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    # "File Changed" or any other dialog would show up within the save.
    time.sleep(0.5)
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    lab_page.screenshot("saved")

    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources == ["human = 1  # typed by a person", "agent = 'edited'"]


def test_an_agent_edit_of_a_cell_the_person_deleted_is_not_overwritten_silently(lab, lab_page):
    path = lab.write_notebook("gone.ipynb", ["keep = 1", "doomed = 1"])
    lab_page.open("lab/tree/gone.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)

    # The person deletes cell 1 (unsaved), then the agent edits that very cell on disk.
    cells.nth(1).click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("d")
    page.keyboard.press("d")
    expect(cells).to_have_count(1)
    lab.notebook(action="edit", notebook_path="gone.ipynb", cell_id="cell-1", content="agent = 2")
    time.sleep(1)  # the event arrives within milliseconds; leave it ample time to be handled

    # Saving now must not silently drop the agent's edit: JupyterLab asks.
    page.keyboard.press("Control+s")
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_have_count(1)
    expect(dialog).to_contain_text("File Changed")
    lab_page.screenshot("conflict")
    dialog.get_by_role("button", name="Cancel").click()
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources == ["keep = 1", "agent = 2"]


def test_an_agent_edit_of_a_clean_notebook_keeps_the_view_the_active_cell_and_its_marks(
    lab, lab_page
):
    # Cell 5 ran: editing it marks it "edited since it ran".
    lab.write_notebook("view.ipynb", [f"x{i} = {i}" for i in range(40)], counts={5: 1})
    lab_page.open("lab/tree/view.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(40)
    # Saved once the lab has added the kernel's language_info to it: nothing is unsaved.
    lab_page.wait_for_language_info()

    # The person edits the cell that ran (JupyterLab marks it), saves, then works further down.
    cells.nth(5).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # changed since it ran")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0, timeout=20000)
    expect(cells.nth(5)).to_have_class(re.compile(r"\bjp-mod-dirty\b"))
    cells.nth(30).locator(".jp-InputPrompt").click()
    active = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    page.wait_for_function(f"() => ({active})() === 30")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    scroller = "document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer')"
    scrolled = page.evaluate(f"() => {scroller}.scrollTop")
    assert scrolled > 0

    lab.notebook(action="edit", notebook_path="view.ipynb", cell_id="cell-35", content="y = 35")
    lab.notebook(action="insert", notebook_path="view.ipynb", cell_index=38, content="z = 1")

    expect(cells).to_have_count(41)
    expect(cells.nth(35)).to_contain_text("y = 35")
    lab_page.screenshot("after-agent")
    assert page.evaluate(active) == 30
    assert abs(page.evaluate(f"() => {scroller}.scrollTop") - scrolled) < 5
    expect(cells.nth(5)).to_have_class(re.compile(r"\bjp-mod-dirty\b"))
    # The file holds what the notebook shows: nothing unsaved, and saving asks nothing.
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    page.keyboard.press("Control+s")
    time.sleep(0.5)  # "File Changed" or any other dialog would show up within the save
    expect(page.locator(".jp-Dialog")).to_have_count(0)

"""Agent work at a glance (docs/developers/contract.md §10.2): status item, tab badge, cell marks.

No fixed sleeps: every step waits for what the person would see.
"""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

#: The first call of a session starts its kernel: allow for a slow machine (ms).
KERNEL_START = 60000


def status_item(page):
    return page.locator(".jp-xcsh-AgentStatus-text")


def test_status_bar_counts_a_running_call_and_opens_the_panel_on_it(lab, lab_page):
    lab_page.open()
    page = lab_page.page
    status = status_item(page)
    expect(status).to_have_text("Agent: idle")
    # The kernel starts on a first, quick call, so the 3 s call below is only its code.
    lab.python([{"code": "1"}], session="ui-status").result(120)
    tab = page.locator('.jp-SideBar li[data-id="jupyter-xcsh-activity"]')
    # The panel is hidden: the call that just ran is new activity on its tab.
    expect(tab).to_have_class(re.compile(r"\bjp-xcsh-mod-unread\b"))
    expect(tab).to_have_attribute("data-xcsh-unread", "1")

    future = lab.python(
        [{"title": "three seconds", "code": "import time\ntime.sleep(3)\nprint('slept')"}],
        session="ui-status",
    )
    expect(status).to_have_text("Agent: 1 running", timeout=KERNEL_START)
    expect(tab).to_have_attribute("data-xcsh-unread", "2")
    lab_page.screenshot("running")

    status.click()
    panel = page.locator("#jupyter-xcsh-activity")
    expect(panel).to_be_visible()
    call = panel.locator('.jp-xcsh-Call[data-kind="python"]').first
    expect(call.locator(".jp-xcsh-CellTitle")).to_have_text("[1/1] three seconds")
    expect(call).to_have_attribute("data-status", "running")
    # Seen: the badge is gone.
    expect(tab).not_to_have_class(re.compile(r"\bjp-xcsh-mod-unread\b"))
    lab_page.screenshot("panel-opened")

    expect(status).to_have_text("Agent: idle", timeout=30000)
    expect(call).to_have_attribute("data-status", "ok")
    assert future.result(30)["isError"] is False
    lab_page.screenshot("idle")


def test_the_status_item_is_reachable_by_keyboard(lab, lab_page):
    lab_page.open()
    page = lab_page.page
    status = status_item(page)
    expect(status).to_have_attribute("tabindex", "0")
    status.press("Enter")  # focuses the item, then presses: as a keyboard user reaching it
    expect(page.locator("#jupyter-xcsh-activity")).to_be_visible()


def _open_notebook(lab, lab_page, name, sources):
    cells = lab_page.open_notebook(name, sources)
    return lab.root / name, cells


def test_an_agent_edit_marks_the_cell_until_the_person_types_in_it(lab, lab_page):
    _, cells = _open_notebook(lab, lab_page, "marks.ipynb", ["a = 1", "b = 2", "c = 3"])
    page = lab_page.page

    result = lab.notebook(
        action="edit", notebook_path="marks.ipynb", cell_index=1, content="b = 'agent'"
    )
    expect(cells.nth(1)).to_contain_text("b = 'agent'")
    expect(cells.nth(1)).to_have_class(re.compile(r"\bjp-xcsh-mod-agentChanged\b"))
    mark = cells.nth(1).locator(".jp-xcsh-CellMark")
    expect(mark).to_have_count(1)
    expect(cells.nth(0).locator(".jp-xcsh-CellMark")).to_have_count(0)

    # Hovering says which action, when, and which call.
    mark.hover()
    label = mark.get_attribute("aria-label")
    assert label is not None
    assert label.startswith("An agent edited this cell at ")
    assert f"(call {result['callId'][:8]})" in label
    tooltip = mark.evaluate(
        "m => { const s = getComputedStyle(m, '::after'); return [s.visibility, s.content]; }"
    )
    assert tooltip == ["visible", json.dumps(label)]
    lab_page.screenshot("marked-hover")

    # The person types in the cell: the mark goes.
    cells.nth(1).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    expect(mark).to_have_count(0)
    expect(cells.nth(1)).not_to_have_class(re.compile(r"\bjp-xcsh-mod-agentChanged\b"))
    lab_page.screenshot("typed")


def test_a_mark_is_nothing_to_click_and_inserted_cells_are_marked(lab, lab_page):
    """The mark is the review's state (issue 41): not a button over the review's header, it
    goes when the change is kept."""
    _, cells = _open_notebook(lab, lab_page, "mark-state.ipynb", ["a = 1"])

    lab.notebook(action="insert", notebook_path="mark-state.ipynb", cell_index=1, content="new = 1")
    expect(cells).to_have_count(2)
    mark = cells.nth(1).locator(".jp-xcsh-CellMark")
    expect(mark).to_have_attribute("aria-label", re.compile(r"^An agent inserted this cell"))
    assert mark.evaluate("m => m.tagName") != "BUTTON"
    header = cells.nth(1).locator(".jp-xcsh-Review:not(.jp-xcsh-ReviewGhost)")
    expect(header).to_contain_text("New cell (inserted by an agent)")
    box, head = mark.bounding_box(), header.bounding_box()
    assert box is not None and head is not None
    assert box["y"] >= head["y"] + head["height"], (box, head)  # below the header, not over it

    mark.click()
    expect(mark).to_have_count(1)
    header.locator(".jp-xcsh-Review-keep").click()
    expect(mark).to_have_count(0)
    expect(cells.nth(1)).to_contain_text("new = 1")


def test_the_whole_picture_for_the_readme(lab, lab_page):
    """An agent working in an open notebook, as docs/agent-at-a-glance.png shows it."""
    _, cells = _open_notebook(
        lab,
        lab_page,
        "analysis.ipynb",
        ["import math", "radius = 2\narea = math.pi * radius ** 2", "print(area)"],
    )
    page = lab_page.page
    lab.python([{"code": "1"}], session="ui-picture").result(120)
    lab.notebook(
        action="edit",
        notebook_path="analysis.ipynb",
        cell_index=1,
        content="radius = 3\narea = math.pi * radius ** 2",
    )
    mark = cells.nth(1).locator(".jp-xcsh-CellMark")
    expect(mark).to_have_count(1)
    future = lab.python(
        [
            {
                "title": "fit the model",
                "code": (
                    "import time\nfor i in range(3):\n"
                    "    print('epoch', i, flush=True)\n    time.sleep(1)"
                ),
            }
        ],
        session="ui-picture",
    )
    status = status_item(page)
    expect(status).to_have_text("Agent: 1 running", timeout=KERNEL_START)
    status.click()
    panel = page.locator("#jupyter-xcsh-activity")
    expect(panel.locator('.jp-xcsh-Call[data-kind="python"]').first).to_contain_text("epoch 0")
    expect(panel.locator(".jp-xcsh-Undo").first).to_be_attached()  # shown on its line's hover
    mark.hover()
    lab_page.screenshot("readme-agent-at-a-glance")
    assert future.result(60)["isError"] is False
    expect(status).to_have_text("Agent: idle")


def test_the_running_panel_names_an_agents_kernel_after_its_session(lab, lab_page):
    lab.python([{"code": "1"}], session="ui-named").result(120)
    lab_page.open()
    page = lab_page.page

    page.locator('.jp-SideBar li[data-id="jp-running-sessions"]').click()

    running = page.locator("#jp-running-sessions")
    expect(running.get_by_text("Agent: ui-named").first).to_be_visible()
    lab_page.screenshot("running")

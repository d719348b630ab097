"""The activity panel and cell marks come back after a reload (docs/developers/contract.md §13)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

MARKED = re.compile(r"\bjp-xcsh-mod-agentChanged\b")


def test_the_panel_and_the_marks_come_back_after_a_reload(lab, lab_page):
    name = "history-reload.ipynb"
    cells = lab_page.open_notebook(name, ["a = 1", "b = 2"])
    panel = lab_page.open_activity()
    edited = lab.notebook(
        action="edit", notebook_path=name, cell_index=1, content="b = 'from the agent'"
    )
    call = panel.locator(f'.jp-xcsh-Call[data-call-id="{edited["callId"]}"]')
    expect(call).to_be_visible()
    expect(cells.nth(1)).to_have_class(MARKED)

    # A reload: nothing of the page is left, the server's history brings it back.
    lab_page.open(f"lab/tree/{name}")
    cells = lab_page.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)
    panel = lab_page.open_activity()
    call = panel.locator(f'.jp-xcsh-Call[data-call-id="{edited["callId"]}"]')
    expect(call).to_be_visible()
    expect(call).to_contain_text("from the agent")
    expect(panel.locator(f'[data-call-id="{edited["callId"]}"]')).to_have_count(1)
    expect(cells.nth(1)).to_have_class(MARKED)
    expect(cells.nth(0)).not_to_have_class(MARKED)
    lab_page.screenshot("restored")

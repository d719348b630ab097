"""The extension's settings (schema/*.json) change the marks and the activity panel live.

Each setting is changed through the lab's own setting registry, as the Settings Editor does;
the page is never reloaded (a flag set on the window before the change is still there after).
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

MARKED = re.compile(r"\bjp-xcsh-mod-agentChanged\b")

#: Set (or with ``None`` reset) one setting through the lab's setting registry.
SET_SETTING = """async ([id, key, value]) => {
  const app = window.jupyterapp;
  const token = [...app.pluginRegistry._services.keys()].find(
    t => t.name === '@jupyterlab/coreutils:ISettingRegistry'
  );
  const registry = await app.resolveRequiredService(token);
  if (value === null) {
    await registry.remove(id, key);
  } else {
    await registry.set(id, key, value);
  }
}"""


def set_setting(lab_page: Any, plugin: str, key: str, value: Any) -> None:
    lab_page.page.evaluate(SET_SETTING, [plugin, key, value])


def test_settings_switch_the_marks_and_filter_and_bound_the_panel_live(lab, lab_page):
    cells = lab_page.open_notebook("settings.ipynb", ["a = 1", "b = 2"])
    page = lab_page.page
    page.evaluate("() => { window.xcshNotReloaded = true; }")
    try:
        lab.notebook(action="edit", notebook_path="settings.ipynb", cell_index=1, content="b = 3")
        mark = cells.nth(1).locator(".jp-xcsh-CellMark")
        expect(mark).to_have_count(1)

        # Marks off: the mark goes; on again: it is back (it was kept meanwhile).
        set_setting(lab_page, "jupyter-xcsh:marks", "enabled", False)
        expect(mark).to_have_count(0)
        expect(cells.nth(1)).not_to_have_class(MARKED)
        set_setting(lab_page, "jupyter-xcsh:marks", "enabled", True)
        expect(mark).to_have_count(1)
        expect(cells.nth(1)).to_have_class(MARKED)

        lab.notebook(action="edit", notebook_path="settings.ipynb", cell_index=0, content="a = 4")
        panel = lab_page.open_activity()
        calls = panel.locator(".jp-xcsh-Call")
        expect(calls).to_have_count(2)

        # The filter setting: only python calls are listed, and the panel's menu says so.
        set_setting(lab_page, "jupyter-xcsh:activity", "filter", "python")
        expect(panel.locator(".jp-xcsh-Filter select")).to_have_value("python")
        expect(panel.locator(".jp-xcsh-Call:visible")).to_have_count(0)
        expect(panel.locator(".jp-xcsh-Empty")).to_have_text("No calls of this kind.")
        set_setting(lab_page, "jupyter-xcsh:activity", "filter", "all")
        expect(panel.locator(".jp-xcsh-Call:visible")).to_have_count(2)

        # Fewer calls kept: the oldest goes at once.
        set_setting(lab_page, "jupyter-xcsh:activity", "maxCalls", 1)
        expect(calls).to_have_count(1)
        expect(calls.first).to_contain_text("cell 0")
        lab_page.screenshot("one-call-kept")
        assert page.evaluate("() => window.xcshNotReloaded") is True
    finally:
        for plugin, key in (
            ("jupyter-xcsh:marks", "enabled"),
            ("jupyter-xcsh:activity", "filter"),
            ("jupyter-xcsh:activity", "maxCalls"),
        ):
            set_setting(lab_page, plugin, key, None)


def test_the_settings_editor_lists_the_settings(lab, lab_page):
    lab_page.open()
    page = lab_page.page
    page.evaluate("() => window.jupyterapp.commands.execute('settingeditor:open')")
    for title in ("Agent activity", "Agent cell marks"):
        expect(page.locator(".jp-PluginList-entry", has_text=title)).to_be_visible()
    page.locator(".jp-PluginList-entry", has_text="Agent cell marks").click()
    expect(page.get_by_text("Mark agent-changed cells").first).to_be_visible()
    lab_page.screenshot("settings-editor")

"""An agent's run in place shows its outputs in the notebook open in the lab, as they come.

Without jupyter-collaboration: the outputs travel as events while each cell runs and are written
into the file when it ends; the open notebook follows without a "File Changed" dialog and
without losing what the person typed elsewhere.
"""

from __future__ import annotations

import json
import re
import time

from playwright.sync_api import expect

#: Seconds the ticking cell runs: long enough to see its first outputs while it still runs.
TICKS = 8


def run_in_background(lab, **body):
    """Start one run in place; the future holds its result."""
    return lab._pool.submit(lab.api, "POST", "api/xcsh/notebook/run", body, 180)


def run_ok(lab, **body):
    """Run cells in place to the end; the run succeeded."""
    result = run_in_background(lab, **body).result()
    assert result["isError"] is False, result["text"]
    return result


def lab_kernel_id(page):
    """The kernel of the notebook open in the lab (once its session is ready)."""
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.id",
        timeout=60000,
    )
    return page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
    )


def ticking_notebook(lab, name):
    return lab.write_notebook(
        name,
        [
            "person = 1",
            f"import time\nfor i in range({TICKS}):\n    print(f'tick {{i}}', flush=True)\n"
            "    time.sleep(0.5)",
            "print('last cell')",
        ],
    )


def run_while_typing(lab, lab_page, name):
    """Open a ticking notebook, type into its first cell (unsaved), run cells 1-2 in place.

    Returns once the first tick shows in the open notebook, while the run still runs:
    ``(page, cells, kernel_id, run, output, path)``.
    """
    path = ticking_notebook(lab, name)
    lab_page.open(f"lab/tree/{name}")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(3)
    kernel_id = lab_kernel_id(page)

    # The person types into cell 0 and does not save.
    cells.nth(0).locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # typed by a person")

    run = run_in_background(lab, notebook_path=name, cell_index=1, end_index=3)
    output = cells.nth(1).locator(".jp-OutputArea-output")
    expect(output).to_contain_text("tick 0", timeout=30000)
    assert not run.done(), "the output showed only once the run had ended"
    lab_page.screenshot("while-running")
    return page, cells, kernel_id, run, output, path


def test_outputs_appear_while_the_run_runs_and_typing_survives(lab, lab_page):
    page, cells, kernel_id, run, output, path = run_while_typing(lab, lab_page, "run-live.ipynb")

    result = run.result()
    assert result["isError"] is False, result["text"]
    assert result["kernel"]["id"] == kernel_id  # the lab's own kernel
    assert result["notebook"]["via"] == "file"
    expect(output).to_contain_text(f"tick {TICKS - 1}")
    expect(cells.nth(2).locator(".jp-OutputArea-output")).to_contain_text("last cell")
    expect(cells.nth(0)).to_contain_text("# typed by a person")
    count = result["cells"][0]["executionCount"]
    expect(cells.nth(1).locator(".jp-InputPrompt")).to_contain_text(f"[{count}]")

    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0, timeout=20000)
    time.sleep(0.5)  # "File Changed" or any other dialog would show up within the save
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    lab_page.screenshot("saved")

    saved = json.loads(path.read_text())["cells"]
    assert "".join(saved[0]["source"]) == "person = 1  # typed by a person"
    assert "".join(saved[1]["outputs"][0]["text"]).startswith("tick 0\n")
    assert saved[2]["outputs"][0]["text"] == ["last cell\n"]


def test_a_clean_notebook_stays_clean_and_shows_the_saved_outputs(lab, lab_page):
    path = ticking_notebook(lab, "run-clean.ipynb")
    lab_page.open("lab/tree/run-clean.ipynb")
    page = lab_page.page
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    expect(cells).to_have_count(3)
    lab_kernel_id(page)
    # Saved once the lab has added the kernel's language_info to it: nothing is unsaved.
    lab_page.wait_for_language_info()
    cells.nth(0).click()
    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0, timeout=20000)

    run_ok(lab, notebook_path="run-clean.ipynb", cell_index=2)

    expect(cells.nth(2).locator(".jp-OutputArea-output")).to_contain_text("last cell")
    # The file already holds these outputs: nothing for the person to save, no dialog.
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    assert json.loads(path.read_text())["cells"][2]["outputs"][0]["text"] == ["last cell\n"]


def test_a_run_of_one_cell_past_the_first_shows_one_row_in_the_panel(lab, lab_page):
    lab.write_notebook("run-row.ipynb", [f"print({i})" for i in range(8)])
    lab_page.open()
    panel = lab_page.open_activity()

    run_ok(lab, notebook_path="run-row.ipynb", cell_index=6)

    call = panel.locator('.jp-xcsh-Call[data-kind="python"]', has_text="run-row.ipynb")
    # The finished event has arrived: the row of the run's result is drawn.
    expect(call.locator('.jp-xcsh-CallStatus[data-status="ok"]')).to_have_count(1)
    expect(call.locator(".jp-xcsh-CallTitle")).to_have_text("Run · run-row.ipynb · 1 cell")
    expect(call.locator(".jp-xcsh-CellTitle")).to_have_text(["[1/1] cell 6"])
    lab_page.screenshot("one-row")


def test_a_cell_running_in_place_shows_a_star_in_its_prompt(lab, lab_page):
    # It ran before: its old count shows.
    sleeper = "import time\ntime.sleep(4)\nprint('slept')"
    lab.write_notebook("run-star.ipynb", [sleeper], counts={0: 7})
    lab_page.open("lab/tree/run-star.ipynb")
    page = lab_page.page
    prompt = page.locator(".jp-NotebookPanel .jp-Cell").nth(0).locator(".jp-InputPrompt")
    expect(prompt).to_contain_text("[7]")
    lab_kernel_id(page)

    run = run_in_background(lab, notebook_path="run-star.ipynb", cell_index=0)

    expect(prompt).to_contain_text("[*]")
    # The cell says an agent runs it (a person's own run shows only the star).
    cell = page.locator(".jp-NotebookPanel .jp-Cell").nth(0)
    expect(cell).to_have_class(re.compile(r"\bjp-xcsh-mod-agentRunning\b"))
    expect(cell).to_have_attribute("data-xcsh-agent-running", "Agent running")
    lab_page.screenshot("running")
    result = run.result()
    assert result["isError"] is False, result["text"]
    expect(prompt).to_contain_text(f"[{result['cells'][0]['executionCount']}]")
    expect(cell).not_to_have_class(re.compile(r"\bjp-xcsh-mod-agentRunning\b"))

"""``bash scripts/lab.sh`` opens the example notebook, and the notebook opens with nothing unsaved.

The script is run as a person runs it (with ``INSTALL=0``: this environment is already set up),
on a root of its own, and the URL it prints is opened in the browser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, SCREENSHOTS, _free_port, stop_lab
from playwright.sync_api import expect

#: Seconds for the lab to start and print its URL.
STARTUP_TIMEOUT = 90


def start_lab_script(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """Run scripts/lab.sh on a fresh root; return the process and the URL it printed."""
    config = tmp_path / "config"
    config.mkdir()
    # window.jupyterapp: lets the test read the notebook's model.
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"LabApp": {"expose_app_in_browser": True, "news_url": None}})
    )
    env = dict(
        os.environ,
        INSTALL="0",
        VENV=sys.prefix,
        WORKSPACE=str(tmp_path / "workspace"),
        PORT=str(_free_port()),
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    log_path = SCREENSHOTS / "lab-script.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            ["bash", str(REPO / "scripts" / "lab.sh")], env=env, stdout=log, stderr=log
        )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while process.poll() is None and time.monotonic() < deadline:
        found = re.search(r"http://127\.0\.0\.1:\d+/\S*\?token=\w+", log_path.read_text())
        if found:
            return process, found.group(0)
        time.sleep(0.25)
    process.kill()
    raise AssertionError(f"lab.sh printed no URL (exit {process.wait()}); see {log_path}")


def test_the_printed_url_opens_the_example_notebook_with_nothing_unsaved(browser, tmp_path):
    process, url = start_lab_script(tmp_path)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        assert "/lab/tree/demo.ipynb?" in url
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60000)
        page.evaluate("() => window.jupyterapp.restored")

        current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
        expect(current).to_contain_text("demo.ipynb")
        expect(page.locator(".jp-Launcher")).to_have_count(0)
        # Once the kernel told the lab its language, the lab has nothing to add.
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel"
            "?.info?.then(() => true)",
            timeout=60000,
        )
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
            " === 'idle'",
            timeout=60000,
        )
        page.screenshot(path=str(SCREENSHOTS / "lab-script-opened.png"))
        assert page.evaluate("() => window.jupyterapp.shell.currentWidget.model.dirty") is False
        expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0)
    finally:
        context.close()
        stop_lab(process)

"""jupyter-xcsh in Notebook 7 (``jupyter notebook``), which loads JupyterLab extensions (issue 23).

A real ``jupyter notebook`` on 127.0.0.1, driven through Debian Chromium: the extension loads
without console errors, an agent's edit appears in the open notebook, and the agent's activity
is visible there.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS, free_port, http, stop, wait_until_serving

pytestmark = pytest.mark.timeout(300)


#: Notebook 7's own page error when a right-side panel opens (its keyboard-shortcuts settings
#: transform reads the schema of a settings plugin that is not loaded yet). Seen here with this
#: extension disabled, on opening Notebook's own debugger panel (``debugger:show-panel``): not
#: ours, so it is let through only with a stack inside Notebook's own bundle.
NOTEBOOK7_SIDE_PANEL_ERROR = "Cannot read properties of undefined (reading 'schema')"


def ours(problem: str) -> bool:
    """Whether a page problem may be this extension's (anything but Notebook 7's known one)."""
    return not (
        NOTEBOOK7_SIDE_PANEL_ERROR in problem
        and "static/notebook/notebook_core" in problem
        and "jupyter-xcsh" not in problem
    )


class Notebook7:
    """A running ``jupyter notebook``: URL, token, contents root."""

    def __init__(self, url: str, token: str, root: Path) -> None:
        self.url = url
        self.token = token
        self.root = root

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the server's API; the answer must be a 200."""
        answer = http(method, f"{self.url}{path}", token=self.token, body=body)
        assert answer.status == 200, (path, answer)
        return answer.body


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook7]:
    """``jupyter notebook`` with the extension enabled by its own config file."""
    base = tmp_path_factory.mktemp("notebook7")
    root = base / "root"
    root.mkdir()
    env = dict(os.environ)
    for name, folder in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ):
        (base / folder).mkdir()
        env[name] = str(base / folder)
    # No "get notified about news?" toast (and no request for it).
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port, token = free_port(), secrets.token_hex(16)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = (ARTIFACTS / "notebook7.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notebook",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--JupyterNotebookApp.expose_app_in_browser=True",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Notebook7(f"http://127.0.0.1:{port}/", token, root)
    try:
        wait_until_serving(process, f"{server.url}api/status?token={token}", "notebook", log)
        yield server
    finally:
        stop(process, 30)
        log.close()


def test_in_notebook_7_agent_edits_appear_live_and_its_activity_shows(notebook7, browser):
    from playwright.sync_api import expect

    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for i, source in enumerate(["a = 1", "b = 2"])
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (notebook7.root / "n7.ipynb").write_text(json.dumps(notebook, indent=1))
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(f"page error: {error.stack}"))
        page.on(
            "console",
            lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
        )
        page.goto(f"{notebook7.url}notebooks/n7.ipynb?token={notebook7.token}")
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=120_000)
        page.evaluate("() => window.jupyterapp.restored")
        shown = page.locator(".jp-Notebook .jp-Cell")
        expect(shown).to_have_count(2, timeout=60_000)

        notebook7.api(
            "POST",
            "api/xcsh/notebook",
            {
                "action": "insert",
                "notebook_path": "n7.ipynb",
                "cell_index": 1,
                "content": "agent_was_here = 3",
            },
        )
        expect(shown).to_have_count(3, timeout=30_000)
        expect(shown.nth(1)).to_contain_text("agent_was_here = 3")

        # The activity panel is a right-side panel in Notebook 7 too: opened by its command.
        page.evaluate("() => window.jupyterapp.commands.execute('jupyter-xcsh:show-activity')")
        panel = page.locator("#jupyter-xcsh-activity")
        expect(panel).to_be_visible(timeout=30_000)
        expect(panel).to_contain_text("n7.ipynb", timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "notebook7.png"))
        mine = [problem for problem in problems if ours(problem)]
        assert mine == [], "\n".join(problem[:300] for problem in mine)
    finally:
        page.close()

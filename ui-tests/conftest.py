"""Browser tests: a real ``jupyter lab`` started here, driven through Debian Chromium by Playwright.

They run in their own pytest process (``python -m pytest ui-tests``), apart from ``tests/``:
pytest-jupyter's in-process server and a browser driving a separate lab don't mix.

The lab uses the jupyter_xcsh installed in this Python environment (``pip install .``). When it
is not installed, the working tree is used instead: the Python package from the repository and
the lab extension built by ``npm run build`` into ``jupyter_xcsh/labextension``.

Every test leaves screenshots in one folder, printed at the start and the end of the run
(``XCSH_UI_SCREENSHOTS`` to choose it), next to the lab's log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.paths import jupyter_path
from playwright.sync_api import Browser, Page, expect, sync_playwright

# The lab renders a notebook (a collaborative one above all) in well under a second when the
# machine is idle, but CI shares two cores with a full test run: waits are for conditions, and
# their limit is the time a loaded machine needs, not Playwright's default 5 s.
expect.set_options(timeout=30_000)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # the helpers shared with tests/ (tests.support.browser, tests.support.threads)
    sys.path.insert(0, str(REPO))

from tests.support.browser import CHROMIUM_ARGS, chromium_executable  # noqa: E402

SCREENSHOTS = Path(
    os.environ.get("XCSH_UI_SCREENSHOTS") or REPO / "test-artifacts" / "ui-tests"
).resolve()
#: Seconds to wait for the lab server to answer after it starts.
STARTUP_TIMEOUT = 90


def pytest_sessionstart(session: pytest.Session) -> None:
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    _say(session.config, f"ui-tests: screenshots and lab log in {SCREENSHOTS}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Let the process end: stop AnyIO worker threads left behind (``tests.support.threads``)."""
    from tests.support.threads import stop_anyio_workers

    stop_anyio_workers()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"ui-tests: screenshots and lab log in {SCREENSHOTS}")


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)
    else:
        print(line)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _installed_labextension() -> bool:
    return any(
        Path(p, "jupyter-xcsh", "package.json").is_file() for p in jupyter_path("labextensions")
    )


class Lab:
    """A running ``jupyter lab``: its URL, token and contents root, and its REST API."""

    def __init__(self, url: str, token: str, root: Path, history: Path | None = None) -> None:
        self.url = url
        self.token = token
        self.root = root
        #: The lab's activity history (SQLite): each test starts with it empty.
        self.history = history
        self._pool = ThreadPoolExecutor(max_workers=4)

    def forget_history(self) -> None:
        """Empty the lab's activity history, so a page opened next restores nothing before."""
        if self.history is not None and self.history.exists():
            # The server writes finished calls a moment later, together: a read of the history
            # writes those still waiting first, so none of them comes back after the delete.
            self.api("GET", "api/xcsh/activity?limit=1")
            with contextlib.closing(sqlite3.connect(self.history, timeout=10)) as db, db:
                db.execute("DELETE FROM calls")

    def api(
        self,
        method: str,
        path: str,
        body: Any = None,
        timeout: float = 60,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Call ``path`` (below the base URL) and return the decoded JSON answer.

        ``headers``: more request headers, e.g. ``X-Agent-Name`` for a call an agent names.
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"token {self.token}",
                "Content-Type": "application/json",
                **(headers or {}),
            },
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def notebook(self, **body: Any) -> Any:
        """One notebook tool call."""
        return self.api("POST", "api/xcsh/notebook", body)

    def python(self, cells: list[dict[str, str]], **options: Any) -> Future[Any]:
        """Start one python tool call in the background; the future holds its result."""
        body = {"cells": cells, **options}
        return self._pool.submit(self.api, "POST", "api/xcsh/python", body, 180)

    def write_notebook(
        self, name: str, sources: list[str], counts: dict[int, int] | None = None
    ) -> Path:
        """Write an nbformat 4.5 notebook of code cells into the contents root.

        ``counts``: the execution counts of cells that ran before, by index.
        """
        cells = [
            {
                "cell_type": "code",
                "execution_count": (counts or {}).get(i),
                "id": f"cell-{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(sources)
        ]
        notebook = {
            "cells": cells,
            "metadata": {
                "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        path = self.root / name
        path.write_text(json.dumps(notebook, indent=1) + "\n")
        return path

    def close(self) -> None:
        """Stop the background calls' threads (their requests end with the server)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Lab]:
    """Start ``jupyter lab`` on 127.0.0.1 with a token and an empty contents root."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    config_dir = base / "config"
    settings_dir = base / "settings"
    for folder in (root, config_dir, settings_dir, base / "workspaces", base / "runtime"):
        folder.mkdir()

    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
    )
    lab_config: dict[str, Any] = {
        # window.jupyterapp: lets a test wait for the lab and reach its services.
        "expose_app_in_browser": True,
        # No news feed fetched from the internet.
        "news_url": None,
    }
    if _installed_labextension():
        mode = "installed jupyter_xcsh"
    else:
        built = REPO / "jupyter_xcsh" / "labextension"
        if not (built / "package.json").is_file():
            pytest.exit("jupyter_xcsh is not installed and its lab extension is not built", 2)
        extensions = base / "labextensions"
        extensions.mkdir()
        (extensions / "jupyter-xcsh").symlink_to(built)
        lab_config["extra_labextensions_path"] = [str(extensions)]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        mode = f"working tree {REPO}"
    history = base / "xcsh-activity.sqlite"
    server_config: dict[str, Any] = {
        "LabApp": lab_config,
        # The activity history of this lab only, not the home directory's.
        "XcshSettings": {
            "activity_history_path": str(history),
            # The person's agent policies of this lab only; and one operator rule, which
            # test_policy.py shows in the Agent access menu (no other test touches the folder).
            "policy_store_path": str(base / "xcsh-policies.json"),
            "agent_policies": [
                {"path": "operator-locked", "kind": "folder", "classes": {"run": "ask"}}
            ],
        },
    }
    # XCSH_UI_AUTOENABLE=1: the server extension must be enabled by what the package installed
    # (its jupyter-config file), as on a user's machine; else it is enabled here.
    if os.environ.get("XCSH_UI_AUTOENABLE") != "1":
        server_config["ServerApp"] = {"jpserver_extensions": {"jupyter_xcsh": True}}
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(server_config))
    # No "get notified about news?" toast over the screenshots.
    notification = settings_dir / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')

    port = _free_port()
    token = secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    log_path = SCREENSHOTS / "lab.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    _say(pytestconfig, f"ui-tests: jupyter lab pid {process.pid} at {url} ({mode})")
    server = Lab(url, token, root, history)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.exit(f"jupyter lab exited with {process.returncode}; see {log_path}", 2)
            try:
                server.api("GET", "api/status", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    pytest.exit(f"jupyter lab did not start; see {log_path}", 2)
                time.sleep(0.25)
        yield server
    finally:
        server.close()
        stop_lab(process)
        log.close()


def stop_lab(process: subprocess.Popen[Any]) -> None:
    """Stop a ``jupyter lab`` process started by a test, killing it if it lingers."""
    process.terminate()
    try:
        # The server shuts its kernels down on SIGTERM; give it the time to.
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian Chromium, headless (never a browser downloaded by Playwright)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable(), args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


class LabPage:
    """A browser page on the lab, with the helpers the tests share."""

    def __init__(self, page: Page, lab: Lab, name: str) -> None:
        self.page = page
        self.lab = lab
        self.name = name
        self.errors: list[str] = []
        self.console: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))

    def open(self, path: str = "lab") -> None:
        """Load the lab (optionally a document: ``lab/tree/<path>``) and wait until restored.

        ``reset`` starts from the default layout: each test sees the lab as a newcomer does,
        whatever an earlier test left open.
        """
        self.page.goto(f"{self.lab.url}/{path}?reset&token={self.lab.token}")
        self.page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60000)
        self.page.evaluate("() => window.jupyterapp.restored")

    def wait_for_language_info(self) -> None:
        """Wait until the open notebook holds its kernel's ``language_info``.

        The lab writes it into the notebook's metadata when the kernel's info arrives: a
        change to the notebook, which a save made before then leaves unsaved.
        """
        self.page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.model.getMetadata('language_info')?.name",
            timeout=60000,
        )

    def open_notebook(self, name: str, sources: list[str]) -> Any:
        """Write a notebook of code cells, open it in the lab; return its cells once shown."""
        self.lab.write_notebook(name, sources)
        self.open(f"lab/tree/{name}")
        cells = self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        expect(cells).to_have_count(len(sources))
        # Shown is not yet followed: the lab applies an agent's change to a notebook whose
        # document is ready, as the server's event stream brings it. Both are waited for, or a
        # test's first change can come before them (once seen in CI: an insert never shown).
        # The socket is JupyterLab's EventManager's own (a private field; a test's look only).
        self.page.wait_for_function(
            """() => {
                const widget = window.jupyterapp.shell.currentWidget;
                const socket = window.jupyterapp.serviceManager.events._socket;
                return widget?.context?.isReady === true && socket?.readyState === 1;
            }""",
            timeout=60000,
        )
        return cells

    def open_activity(self) -> Any:
        """Open the activity panel from its sidebar tab, as a person does; return the panel."""
        panel = self.page.locator("#jupyter-xcsh-activity")
        if not panel.is_visible():
            self.page.locator('.jp-SideBar li[data-id="jupyter-xcsh-activity"]').click()
        panel.wait_for(state="visible")
        return panel

    def screenshot(self, label: str) -> Path:
        """Save a screenshot of the whole page as ``<test>-<label>.png``."""
        path = SCREENSHOTS / f"{self.name}-{label}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture
def lab_page(browser: Browser, lab: Lab, request: pytest.FixtureRequest) -> Iterator[LabPage]:
    """A fresh browser context on the lab; a page error fails the test."""
    # The panel shows this test's calls only: earlier tests' would come back from the history.
    lab.forget_history()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(20000)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    page = LabPage(context.new_page(), lab, name)
    try:
        yield page
        assert page.errors == [], f"uncaught errors in the page: {page.errors}"
    finally:
        try:
            page.screenshot("end")
            log = "\n".join(page.console + [f"pageerror: {e}" for e in page.errors])
            (SCREENSHOTS / f"{name}-console.log").write_text(log + "\n")
        finally:
            context.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test here ``browser``: each drives a real JupyterLab (or hub) in Chromium."""
    for item in items:
        item.add_marker(pytest.mark.browser)

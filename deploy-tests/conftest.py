"""Deployment tests: jupyter-xcsh behind a real JupyterHub, reached only through its proxy.

They run in their own environment and pytest process (``scripts/check.sh``: ``.venv-hub`` with
``jupyterhub``, JupyterLab, the official MCP SDK client and Playwright; the proxy,
``configurable-http-proxy``, from npm). The hub is started here on 127.0.0.1 with two users
(``DummyAuthenticator`` with a password) whose single-user servers ``SimpleLocalProcessSpawner``
starts from this environment, where jupyter-xcsh is installed and enabled by its own
configuration file, as a deployment's image has it (``tests/support/hubprocess.py``, which
``bench/hub.py`` shares).

``XCSH_CHP`` names the proxy's executable (default: ``.cache/chp`` in the repository).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    # the helpers shared with tests/ and bench/ (tests.support.hubprocess)
    sys.path.insert(0, str(REPO))

from tests.support.browser import CHROMIUM_ARGS, chromium_executable  # noqa: E402
from tests.support.hubprocess import (  # noqa: E402, F401 (the test modules import them from here)
    CHP,
    STARTUP_TIMEOUT,
    Hub,
    Response,
    free_port,
    http,
    running_hub,
    stop,
    wait_until_serving,
)

PASSWORD = "xcsh-hub-test-password"
#: Where screenshots and the hub's log go (XCSH_UI_SCREENSHOTS to choose).
ARTIFACTS = Path(os.environ.get("XCSH_UI_SCREENSHOTS") or REPO / "test-artifacts" / "hub")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Let the process end: stop AnyIO worker threads left behind (``tests.support.threads``)."""
    from tests.support.threads import stop_anyio_workers

    stop_anyio_workers()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_executable(), args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A JupyterHub on 127.0.0.1 with users alice and bob (each a server to start)."""
    if not os.access(CHP, os.X_OK):
        pytest.exit(f"configurable-http-proxy not found at {CHP} (set XCSH_CHP)", 2)
    base = tmp_path_factory.mktemp("hub")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        with (
            (ARTIFACTS / "hub.log").open("w") as log,
            running_hub(base, ["alice", "bob"], log, password=PASSWORD) as running,
        ):
            yield running
    finally:
        shutil.rmtree(base / "home", ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test here ``process`` (each starts a hub or a server of its own), and those
    that drive Chromium ``browser``."""
    for item in items:
        item.add_marker(pytest.mark.process)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)

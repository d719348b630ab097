"""Every fast path can be turned off, or fall back on its own, and nothing else changes.

Each fast path (``jupyter_xcsh.fast_paths``) leans on a private internal of another library; a
probe checks it once at startup and the public API is used otherwise. These tests force each
fallback through the server's config and check that a python call, a notebook change and their
events come out the same, and that the server says at startup which paths it uses.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import nbformat
import pytest
from traitlets.config import Config

from jupyter_xcsh.events.activity import NOTEBOOK_SCHEMA, PYTHON_SCHEMA
from jupyter_xcsh.fast_paths import FAST_PATHS, probe_fast_paths
from tests.conftest import collect_events, fast_paths_off
from tests.support.python_tool import run

pytestmark = pytest.mark.timeout(300)

SUMMARY = "jupyter_xcsh fast paths in use:"
INTERVENTIONS = "jupyter_xcsh process-wide interventions on:"


@pytest.fixture
def xcsh_config() -> dict[str, Any]:
    """The test's ``XcshSettings`` (parametrized tests override it)."""
    return {}


@pytest.fixture
def jp_server_config(jp_server_config, xcsh_config):
    config = Config(jp_server_config)
    for name, value in xcsh_config.items():
        if name == "contents_manager_class":
            config.ServerApp.contents_manager_class = value
        else:
            setattr(config.XcshSettings, name, value)
    return config


def startup_line(serverapp: Any, caplog: pytest.LogCaptureFixture, start: str) -> str:
    """The one line beginning with ``start`` that the extension logs while the server starts.

    The server's log reaches pytest only once the server runs, so the startup step that logs
    it (probing the fast paths, with the server's settings) is taken again here.
    """
    (app,) = serverapp.extension_manager.extension_apps["jupyter_xcsh"]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        app._fast_paths(app.services.settings)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(start)]
    return line


def services(serverapp: Any) -> Any:
    return serverapp.web_app.settings["xcsh"]


async def eventually_seen(events: list[dict[str, Any]], seen: Callable[[Any], bool]) -> None:
    for _ in range(400):  # events go out shortly after the call (activity.EMIT_DELAY)
        if any(seen(e) for e in events):
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"no such event in {events}")


async def check_same_behaviour(jp_fetch: Any, serverapp: Any, root: Any) -> None:
    """A python call, a notebook change and their events, as with every fast path on."""
    python_events = collect_events(serverapp, PYTHON_SCHEMA)
    notebook_events = collect_events(serverapp, NOTEBOOK_SCHEMA)
    result = await run(jp_fetch, "import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7")
    assert result["text"] == "out\nerr\n42"
    assert [c["status"] for c in result["cells"]] == ["complete"]
    # More than one stream bound (1 MiB) in one write: all of it, in order.
    big = await run(jp_fetch, "print('a' * 1500000 + 'b')")
    assert big["totalBytes"] == 1500002
    assert big["truncated"] and big["text"].endswith("aab")

    nbformat.write(nbformat.v4.new_notebook(), root / "n.ipynb")
    body = {"action": "insert", "notebook_path": "n.ipynb", "cell_index": 0, "content": "x = 1"}
    response = await jp_fetch(
        "api", "xcsh", "notebook", method="POST", body=json.dumps(body).encode()
    )
    assert json.loads(response.body)["details"]["totalCells"] == 1
    assert [c.source for c in nbformat.read(root / "n.ipynb", as_version=4).cells] == ["x = 1"]
    await eventually_seen(notebook_events, lambda e: e["action"] == "insert")
    await eventually_seen(python_events, lambda e: e["event"] == "finished")


@pytest.mark.fast_path
async def test_the_server_logs_one_line_naming_the_fast_paths_it_uses(
    caplog, jp_fetch, jp_serverapp
):
    line = startup_line(jp_serverapp, caplog, SUMMARY)
    in_use = line.removeprefix(SUMMARY).split(";")[0].strip().split(", ")
    assert set(in_use) | set(services(jp_serverapp).fast_paths.fell_back) == set(FAST_PATHS)
    assert "turned off: none" in line
    interventions = startup_line(jp_serverapp, caplog, INTERVENTIONS)
    assert "collector pause" in interventions and "malloc_trim" in interventions
    assert "malloc arenas limited to 2" in interventions  # XcshSettings.heap_arenas


@pytest.mark.parametrize("xcsh_config", [{"fast_paths": False}])
async def test_with_fast_paths_off_the_public_api_gives_the_same_results(
    caplog, jp_fetch, jp_serverapp, jp_root_dir
):
    line = startup_line(jp_serverapp, caplog, SUMMARY)
    assert line.startswith(f"{SUMMARY} none;")
    for name in FAST_PATHS:
        assert f"{name} (fast_paths=False)" in line
    cm = jp_serverapp.contents_manager
    assert "save" not in vars(cm) and "atomic_writing" not in vars(cm)  # not wrapped

    await check_same_behaviour(jp_fetch, jp_serverapp, jp_root_dir)

    (session,) = services(jp_serverapp).execution.pool.find("default")
    kernel = jp_serverapp.kernel_manager.get_kernel(session.kernel_id)
    # The server's own activity watcher kept watching; ipykernel's streams kept as they are.
    assert getattr(kernel, "_activity_stream", True) is not None
    stream = await run(jp_fetch, "import sys\nprint(type(sys.stdout).__name__)")
    assert stream["text"] == "OutStream"


@pytest.mark.slow
@pytest.mark.skipif(fast_paths_off(), reason="each path is turned off alone")
@pytest.mark.parametrize(
    "xcsh_config", [{"disabled_fast_paths": [name]} for name in FAST_PATHS], ids=list(FAST_PATHS)
)
async def test_each_fast_path_turned_off_alone_gives_the_same_results(
    caplog, jp_fetch, jp_serverapp, jp_root_dir, xcsh_config
):
    (name,) = xcsh_config["disabled_fast_paths"]
    assert f"{name} (disabled_fast_paths)" in startup_line(jp_serverapp, caplog, SUMMARY)
    assert not services(jp_serverapp).execution.launcher.fast_paths.uses(name)
    await check_same_behaviour(jp_fetch, jp_serverapp, jp_root_dir)


@pytest.mark.skipif(fast_paths_off(), reason="the probe runs only with fast paths on")
@pytest.mark.parametrize(
    "xcsh_config", [{"contents_manager_class": "tests.support.fakes.FixedMethodsContentsManager"}]
)
async def test_a_failed_probe_falls_back_and_says_why(caplog, jp_fetch, jp_serverapp, jp_root_dir):
    line = startup_line(jp_serverapp, caplog, SUMMARY)
    assert "save_guard (the contents manager's instance does not take a save" in line
    assert "save_guard" not in line.removeprefix(SUMMARY).split(";")[0]
    await check_same_behaviour(jp_fetch, jp_serverapp, jp_root_dir)


@pytest.mark.parametrize(
    ("setting", "path"),
    [
        ("guard_saves", "save_guard"),
        ("take_over_activity_watch", "activity_watch"),
        ("bound_kernel_streams", "kernel_stream_bound"),
    ],
)
def test_an_intervention_turned_off_turns_its_fast_path_off(setting, path):
    paths = probe_fast_paths({}, turned_off={path: setting})
    assert not paths.uses(path)
    assert f"{path} ({setting})" in paths.summary()


def test_a_probe_that_raises_is_a_fallback_with_its_reason():
    def broken() -> str | None:
        raise AttributeError("'Session' object has no attribute '_add_digest'")

    paths = probe_fast_paths({"message_decoding": broken})
    assert not paths.uses("message_decoding")
    assert paths.fell_back == {
        "message_decoding": "AttributeError: 'Session' object has no attribute '_add_digest'"
    }
    assert paths.uses("socket_views")

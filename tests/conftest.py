"""Shared fixtures: a real Jupyter Server with the extension enabled.

Tests marked ``collaboration`` need jupyter-collaboration and run only when selected
(``-m collaboration``), in the environments ``scripts/check.sh`` makes for them. With
``XCSH_TEST_RTC=1`` every test server also runs jupyter-collaboration (no room is open unless a
test opens one): the file-path tests then prove nothing changed for notebooks nobody has open.
``XCSH_TEST_SERVER_DOCUMENTS=1`` does the same with jupyter-server-documents (marker
``server_documents``), which also replaces the server's session manager and kernel websocket.
With ``XCSH_TEST_FAST_PATHS=off`` every test server runs with ``XcshSettings.fast_paths =
False`` (the public API everywhere, ``jupyter_xcsh.fast_paths``): the same tests then prove the
results do not depend on a fast path; tests marked ``fast_path`` check a fast path's own
mechanism and are deselected there.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import re
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.events.activity import NOTEBOOK_SCHEMA
from jupyter_xcsh.events.inplace import RUN_SCHEMA
from tests.support.mcp_client import tool_via_mcp
from tests.support.threads import stop_anyio_workers

pytest_plugins = ["pytest_jupyter.jupyter_server"]


def fast_paths_off() -> bool:
    """Whether this test run turns every fast path off (``XCSH_TEST_FAST_PATHS=off``)."""
    return os.environ.get("XCSH_TEST_FAST_PATHS") == "off"


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    """Enable the extension on the test server (modules extend this with their own config)."""
    config = Config(jp_server_config)
    extensions = dict(config.ServerApp.get("jpserver_extensions", {}))
    config.ServerApp.jpserver_extensions = {**extensions, "jupyter_xcsh": True}
    # In-process servers share pytest's process: no freeze of its heap at each server's start
    # (on jupyter_server < 2.16, where the extension starts it; test_startup_heap.py starts
    # real server processes with the default).
    config.XcshSettings.freeze_startup_heap = False
    if fast_paths_off():
        config.XcshSettings.fast_paths = False
    if os.environ.get("XCSH_TEST_RTC") == "1":
        from tests.support.rtc import rtc_config

        config = rtc_config(config, jp_root_dir, tmp_path_factory.mktemp("rtc"))
    if os.environ.get("XCSH_TEST_SERVER_DOCUMENTS") == "1":
        from tests.support.rtc import server_documents_config

        config = server_documents_config(config, jp_root_dir, tmp_path_factory.mktemp("sd"))
    return config


@pytest.fixture
def transport():
    """How the tool tests reach a tool: ``rest`` (its endpoint) or ``mcp`` (``tools/call``).

    Shared cases run through both with ``@pytest.mark.parametrize("transport", TRANSPORTS)``
    (``tests/support/mcp_client.py``).
    """
    return "rest"


@pytest.fixture
def notebook_tool(jp_fetch, transport):
    """Call ``POST /api/xcsh/notebook``; return ``(status, json body)`` for success and error.

    Over MCP when ``transport`` says so: the tool result, shaped as REST would answer it.
    """
    if transport == "mcp":
        return tool_via_mcp(jp_fetch, "notebook")

    async def call(body: Any, raw: bytes | None = None, **kwargs: Any) -> tuple[int, Any]:
        data = raw if raw is not None else json.dumps(body).encode()
        try:
            response = await jp_fetch("api", "xcsh", "notebook", method="POST", body=data, **kwargs)
        except HTTPClientError as e:
            assert e.response is not None
            return e.code, json.loads(e.response.body)
        return response.code, json.loads(response.body)

    return call


def pytest_unconfigure(config):
    """Let the test process end: stop the AnyIO worker threads the servers left behind."""
    stop_anyio_workers()


def pytest_collection_modifyitems(config, items):
    """Run each environment-dependent test only where it can pass (scripts/check.sh runs all).

    ``pillow`` tests need the ``images`` extra installed (``.venv-images``), ``without_pillow``
    tests need it absent (the main environment); ``fast_path`` tests need the fast paths on
    (not ``XCSH_TEST_FAST_PATHS=off``); ``collaboration`` tests need
    jupyter-collaboration, ``server_documents`` tests jupyter-server-documents and ``s3``
    tests s3contents and moto, ``jupyter_ai`` tests jupyter-ai: they run only when a marker
    expression selects tests (``-m collaboration``, ``-m server_documents``, ``-m s3``, ``-m
    jupyter_ai``), ``s3`` tests only where s3contents is installed, ``jupyter_ai`` tests only
    where jupyter-ai is. The others are deselected, not skipped.

    Every test whose kernels are on a gateway (the ``gateway`` value of a parametrized
    fixture, :data:`tests.support.gateway.KERNELS`) is marked ``process``: it needs the Kernel
    Gateway
    this worker starts.
    """
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "gateway" in callspec.params.values():
            item.add_marker(pytest.mark.process)
    unwanted = {"without_pillow" if importlib.util.find_spec("PIL") else "pillow"}
    if fast_paths_off():
        unwanted.add("fast_path")
    # An environment's tests run only where the marker expression names them: `-m "not
    # slow"` (the quick loop) leaves them out as a run without -m does.
    markexpr = config.getoption("markexpr") or ""
    unwanted |= {
        name
        for name in ("collaboration", "server_documents", "s3", "jupyter_ai")
        if not re.search(rf"\b{name}\b", markexpr)
    }
    if importlib.util.find_spec("s3contents") is None:
        unwanted.add("s3")
    if importlib.util.find_spec("jupyter_ai_persona_manager") is None:
        unwanted.add("jupyter_ai")

    def wanted(item):
        return not any(item.get_closest_marker(name) for name in unwanted)

    deselected = [item for item in items if not wanted(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if wanted(item)]


def collect_events(serverapp: Any, schema_id: str) -> list[dict[str, Any]]:
    """The list every event of ``schema_id`` the server emits is appended to, as the lab gets it."""
    seen: list[dict[str, Any]] = []

    async def listener(logger: Any, schema_id: str, data: Any) -> None:
        seen.append(dict(data))

    serverapp.event_logger.add_listener(schema_id=schema_id, listener=listener)
    return seen


@pytest.fixture
def events(jp_serverapp: Any) -> list[dict[str, Any]]:
    """Every notebook tool event the server emits."""
    return collect_events(jp_serverapp, NOTEBOOK_SCHEMA)


@pytest.fixture
def run_events(jp_serverapp: Any) -> list[dict[str, Any]]:
    """Every event of runs in place the server emits, as the lab receives them."""
    return collect_events(jp_serverapp, RUN_SCHEMA)


@pytest.fixture
def collector_on():
    """Python's cyclic collector enabled for the test, and as it was afterwards."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()

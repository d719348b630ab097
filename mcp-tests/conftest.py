"""End-to-end tests with the official MCP Python SDK client against a live Jupyter Server.

They run in their own environment (``.venv-mcp``: ``pip install ".[mcp-test]"``, see
``scripts/check.sh``), apart from ``tests/``: the SDK's dependency tree (pydantic, httpx2,
starlette, ...) is the client's business, not the server's, and must not leak into the main
test environment. The server is pytest-jupyter's in-process one, with real kernels.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from traitlets.config import Config

pytest_plugins = ["pytest_jupyter.jupyter_server"]

#: Generous: two cores shared with other test runs, and kernels to start.
REQUEST_TIMEOUT = 180


@pytest.fixture
def jp_server_config(jp_server_config):
    """Enable the extension on the test server."""
    config = Config(jp_server_config)
    extensions = dict(config.ServerApp.get("jpserver_extensions", {}))
    config.ServerApp.jpserver_extensions = {**extensions, "jupyter_xcsh": True}
    return config


@pytest.fixture
def mcp_url(http_server, jp_http_port, jp_base_url):
    """The server's MCP endpoint, as a client is configured with it (the server listening)."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/xcsh/mcp"


#: The SDK client's connection modes, one per era: ``auto`` negotiates 2026-07-28 (it probes
#: ``server/discover``), ``legacy`` the newest 2025 revision through ``initialize``.
ERAS = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.fixture(params=list(ERAS))
def era(request) -> str:
    """The SDK client's mode: every test with ``connect`` runs in both eras (a test names one
    with ``@pytest.mark.parametrize("era", [...])``)."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def connect(mcp_url, jp_auth_header, era) -> Callable[[], Any]:
    """Open SDK clients (``async with connect() as client``) with the server's token header.

    Keyword arguments go to ``Client`` (e.g. ``elicitation_callback``, ``mode``); the mode is
    the test's ``era`` unless given.
    """

    @asynccontextmanager
    async def open_client(**options: Any) -> AsyncIterator[Client]:
        timeout = httpx2.Timeout(30, read=REQUEST_TIMEOUT)
        http = httpx2.AsyncClient(headers=jp_auth_header, timeout=timeout)
        transport = streamable_http_client(mcp_url, http_client=http)
        options.setdefault("mode", era)
        async with http, Client(transport, **options) as client:
            yield client

    return open_client


async def sessions(jp_fetch: Any) -> list[dict[str, Any]]:
    """The python tool's sessions (REST)."""
    response = await jp_fetch("api", "xcsh", "sessions", request_timeout=REQUEST_TIMEOUT)
    return json.loads(response.body)["sessions"]  # type: ignore[no-any-return]


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 30.0, interval: float = 0.02
) -> float:
    """Wait until ``await check()`` is true; return the seconds it took (fail after timeout)."""
    start = time.monotonic()
    while not await check():
        assert time.monotonic() - start < timeout, "condition not met in time"
        await asyncio.sleep(interval)
    return time.monotonic() - start

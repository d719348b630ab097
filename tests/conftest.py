"""Shared fixtures: a real Jupyter Server with the extension enabled."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from .mcp_client import tool_via_mcp

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def jp_server_config(jp_server_config):
    """Enable the extension on the test server (modules extend this with their own config)."""
    config = Config(jp_server_config)
    extensions = dict(config.ServerApp.get("jpserver_extensions", {}))
    config.ServerApp.jpserver_extensions = {**extensions, "jupyter_xcsh": True}
    return config


@pytest.fixture
def transport():
    """How the tool tests reach a tool: ``rest`` (its endpoint) or ``mcp`` (``tools/call``).

    Shared cases run through both with ``@pytest.mark.parametrize("transport", TRANSPORTS)``
    (``tests/mcp_client.py``).
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

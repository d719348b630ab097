"""Helpers shared by the python tool tests: call the endpoints, wait for conditions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tornado.httpclient import HTTPClientError

from .mcp_client import tool_via_mcp
from .openapi_check import assert_response_matches

#: Generous: two cores shared with other test runs, and kernels to start.
REQUEST_TIMEOUT = 180


def tool(jp_fetch: Any, transport: str = "rest") -> Callable[..., Awaitable[tuple[int, Any]]]:
    """Return ``call(body, **fetch_kwargs) -> (status, json)`` for ``POST /api/xcsh/python``.

    ``transport="mcp"`` calls the same tool through ``tools/call`` (see ``tests/mcp_client.py``).
    """
    if transport == "mcp":
        return _checked(tool_via_mcp(jp_fetch, "python"))

    async def call(body: Any, **kwargs: Any) -> tuple[int, Any]:
        kwargs.setdefault("request_timeout", REQUEST_TIMEOUT)
        try:
            response = await jp_fetch(
                "api", "xcsh", "python", method="POST", body=json.dumps(body), **kwargs
            )
        except HTTPClientError as e:
            assert e.response is not None
            result = json.loads(e.response.body)
            assert_response_matches("/api/xcsh/python", "post", e.code, result)
            return e.code, result
        result = json.loads(response.body)
        assert_response_matches("/api/xcsh/python", "post", 200, result)
        return 200, result

    return call


def _checked(
    call: Callable[..., Awaitable[tuple[int, Any]]],
) -> Callable[..., Awaitable[tuple[int, Any]]]:
    async def checked(body: Any, **kwargs: Any) -> tuple[int, Any]:
        status, result = await call(body)
        assert_response_matches("/api/xcsh/python", "post", status, result)
        return status, result

    return checked


async def run(jp_fetch: Any, *codes: str, transport: str = "rest", **options: Any) -> Any:
    """Run ``codes`` as cells (with request ``options``) and return the 200 result."""
    call = tool(jp_fetch, transport)
    status, result = await call({"cells": [{"code": c} for c in codes], **options})
    assert status == 200, result
    return result


async def sessions(jp_fetch: Any) -> list[dict[str, Any]]:
    """``GET /api/xcsh/sessions``, checked against the OpenAPI description."""
    response = await jp_fetch("api", "xcsh", "sessions", request_timeout=REQUEST_TIMEOUT)
    body = json.loads(response.body)
    assert_response_matches("/api/xcsh/sessions", "get", 200, body)
    return body["sessions"]  # type: ignore[no-any-return]


async def kernel_ids(jp_fetch: Any) -> set[str]:
    """The ids of the kernels the server runs (``GET /api/kernels``)."""
    response = await jp_fetch("api", "kernels", request_timeout=REQUEST_TIMEOUT)
    return {k["id"] for k in json.loads(response.body)}


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 30.0, interval: float = 0.1
) -> None:
    """Wait until ``await check()`` is true; fail after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < end, "condition not met in time"
        await asyncio.sleep(interval)

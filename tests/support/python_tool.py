"""Helpers shared by the python tool tests: call the endpoints, wait for conditions."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tornado.httpclient import HTTPClientError

from tests.support.mcp_client import tool_via_mcp
from tests.support.openapi_check import assert_response_matches

#: Generous: two cores shared with other test runs, and kernels to start.
REQUEST_TIMEOUT = 180


def tool(jp_fetch: Any, transport: str = "rest") -> Callable[..., Awaitable[tuple[int, Any]]]:
    """Return ``call(body, **fetch_kwargs) -> (status, json)`` for ``POST /api/xcsh/python``.

    ``transport="mcp"`` calls the same tool through ``tools/call`` (see
    ``tests/support/mcp_client.py``).
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


class StreamedCall:
    """A python tool call streamed as NDJSON in the background; its events as they arrive.

    Waiting on ``events`` (with ``eventually``) replaces guessing with sleeps when a test
    must act while the call runs: once its start line (``call_id``) or a chunk has arrived.
    """

    def __init__(self, jp_fetch: Any, body: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self._pending = bytearray()
        self.task = asyncio.ensure_future(self._run(jp_fetch, body))

    async def _run(self, jp_fetch: Any, body: dict[str, Any]) -> None:
        await jp_fetch(
            "api",
            "xcsh",
            "python",
            method="POST",
            body=json.dumps(body),
            headers={"Accept": "application/x-ndjson"},
            streaming_callback=self._receive,
            request_timeout=REQUEST_TIMEOUT,
        )

    def _receive(self, data: bytes) -> None:
        self._pending.extend(data)
        while b"\n" in self._pending:
            line, _, rest = bytes(self._pending).partition(b"\n")
            self._pending[:] = rest
            self.events.append(json.loads(line))

    @property
    def call_id(self) -> str | None:
        """The call's id, from its start line (None until that has arrived)."""
        return next((e["callId"] for e in self.events if e["type"] == "start"), None)

    async def started(self) -> bool:
        """Whether the start line has arrived (for ``eventually``)."""
        if self.task.done():
            self.task.result()  # a failed request fails the wait at once
        return self.call_id is not None

    def printed(self, text: str) -> Callable[[], Awaitable[bool]]:
        """A check for ``eventually``: has a chunk containing ``text`` arrived?"""

        async def check() -> bool:
            if self.task.done():
                self.task.result()
            return any(e["type"] == "chunk" and text in e["text"] for e in self.events)

        return check

    async def result(self, timeout: float = 120) -> Any:
        """Wait for the call to end; return its result (the last line)."""
        await asyncio.wait_for(self.task, timeout)
        last = self.events[-1]
        assert last["type"] == "result", last
        result = last["result"]
        assert_response_matches("/api/xcsh/python", "post", 200, result)
        return result


async def interrupt_call(jp_fetch: Any, call_id: str) -> Any:
    """``POST /api/xcsh/calls/<callId>/interrupt``; return the JSON body."""
    response = await jp_fetch("api", "xcsh", "calls", call_id, "interrupt", method="POST", body=b"")
    return json.loads(response.body)


async def answer(jp_fetch: Any, run_id: str, value: str, **kwargs: Any) -> tuple[int, Any]:
    """``POST /api/xcsh/runs/<runId>/input``; ``(status, body)`` for success and error."""
    body = kwargs.pop("body", json.dumps({"value": value}))
    try:
        response = await jp_fetch(
            "api",
            "xcsh",
            "runs",
            run_id,
            "input",
            method="POST",
            body=body,
            request_timeout=REQUEST_TIMEOUT,
            **kwargs,
        )
    except HTTPClientError as e:
        assert e.response is not None
        result = json.loads(e.response.body)
        assert_response_matches("/api/xcsh/runs/{runId}/input", "post", e.code, result)
        return e.code, result
    if kwargs.get("headers", {}).get("Accept") == "application/x-ndjson":
        return 200, [json.loads(line) for line in response.body.decode().splitlines()]
    result = json.loads(response.body)
    assert_response_matches("/api/xcsh/runs/{runId}/input", "post", 200, result)
    return 200, result


def write_python_kernel_spec(
    kernel_dir: Any, name: str, display_name: str, code: str, *args: str
) -> str:
    """Write a local kernel spec ``name`` that runs ``python -c code {connection_file} *args``.

    ``code`` stands in for ipykernel's launcher (and may hand over to it); returns ``name``.
    """
    folder = kernel_dir / name
    folder.mkdir()
    spec = {
        "argv": [sys.executable, "-c", code, "{connection_file}", *args],
        "display_name": display_name,
        "language": "python",
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return name

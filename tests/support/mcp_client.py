"""A raw JSON-RPC client of ``POST /api/xcsh/mcp`` for the main suite, and the MCP transport
of the shared tool tests (the official SDK client is used in ``mcp-tests/``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema
from tornado.httpclient import HTTPClientError

from jupyter_xcsh.mcp.summary import (
    BODY,
    LEFT_OUT,
    LIMIT,
    OUTPUT_SCHEMAS,
    STRUCTURED_META,
    counted,
    summarize,
)
from jupyter_xcsh.mcp.summary import size as json_size
from tests.support.openapi_check import assert_response_matches, spec

ENDPOINT = "/api/xcsh/mcp"
VERSION = "2025-11-25"
#: The transports the shared tool tests run through (the ``transport`` fixture's values).
TRANSPORTS = ["rest", "mcp"]
#: Generous: two cores shared with other test runs, and kernels to start.
REQUEST_TIMEOUT = 180


async def post(
    jp_fetch: Any,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: dict[str, str | None] | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], Any]:
    """Send one HTTP request to the endpoint: ``(status, headers, JSON body or None)``.

    ``headers`` add to (or, with None, remove) the protocol version and JSON ``Accept``.
    Every answer is checked against ``rest-api.yml``.
    """
    given = {"MCP-Protocol-Version": VERSION, "Accept": "application/json", **(headers or {})}
    sent = {name: value for name, value in given.items() if value is not None}
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        response = await jp_fetch(
            "api",
            "xcsh",
            "mcp",
            method=method,
            body=data,
            headers=sent,
            request_timeout=REQUEST_TIMEOUT,
            allow_nonstandard_methods=True,
        )
    except HTTPClientError as e:
        assert e.response is not None
        response = e.response
    text = response.body.decode() if response.body else ""
    operation = spec()["paths"][ENDPOINT].get(method.lower())
    if operation is None:  # an undocumented method
        assert response.code == 405, (method, response.code)
    else:
        assert str(response.code) in operation["responses"], (response.code, text)
        if text:
            assert_response_matches(ENDPOINT, method, response.code, text)
    return response.code, dict(response.headers), json.loads(text) if text else None


async def request(jp_fetch: Any, method: str, params: Any = None, request_id: Any = 1) -> Any:
    """One JSON-RPC request that must answer 200: its response object."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    status, _, response = await post(jp_fetch, message)
    assert status == 200, response
    assert response["id"] == request_id
    return response


async def call_tool(
    jp_fetch: Any, name: str, arguments: Any, *, whole: bool = False
) -> dict[str, Any]:
    """``tools/call``: the tool result (a JSON-RPC error fails the test).

    ``structuredContent`` is checked as every client may check it: valid for the tool's
    ``outputSchema``, within ``LIMIT``, no text, output or image data in it. With ``whole`` it
    is the REST body instead (asked for in ``_meta``), and its summary is checked so.
    """
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if whole:
        params["_meta"] = {STRUCTURED_META: BODY}
    response = await request(jp_fetch, "tools/call", params)
    assert "result" in response, response
    result: dict[str, Any] = response["result"]
    structured = result.get("structuredContent")
    if structured is not None and name in OUTPUT_SCHEMAS:
        check_summary(name, summarize(structured) if whole else structured)
        if whole:  # a REST body fits the outputSchema too
            jsonschema.validate(structured, OUTPUT_SCHEMAS[name])
    return result


def check_summary(name: str, summary: Any) -> None:
    """``summary`` is what tool ``name``'s ``structuredContent`` may be (``mcp/summary.py``)."""
    jsonschema.validate(summary, OUTPUT_SCHEMAS[name])
    assert json_size(summary) <= LIMIT, json_size(summary)
    assert not LEFT_OUT & set(_keys(summary)), summary


def _keys(node: Any) -> list[str]:
    """The keys of ``node`` whose values may be text or data (a count is neither)."""
    if isinstance(node, dict):
        own = [key for key, value in node.items() if not counted(value)]
        return [*own, *(k for value in node.values() for k in _keys(value))]
    if isinstance(node, list):
        return [k for value in node for k in _keys(value)]
    return []


def as_rest(result: dict[str, Any]) -> tuple[int, Any]:
    """A tool result asked for ``whole`` as REST would have answered: ``(status, body)``.

    Checks what MCP adds: the first content is the text (or the error message), and
    ``isError`` agrees with the body.
    """
    body = result["structuredContent"]
    text = result["content"][0]
    assert text["type"] == "text"
    if "status" in body:  # a refused call: REST's 4xx
        assert result["isError"] is True
        assert text["text"] == body["message"]
        body = {k: v for k, v in body.items() if k != "status"}
        return result["structuredContent"]["status"], body
    assert text["text"] == body["text"]
    assert result["isError"] is body.get("isError", False)
    return 200, body


def tool_via_mcp(jp_fetch: Any, name: str) -> Callable[..., Awaitable[tuple[int, Any]]]:
    """``call(body) -> (status, body)`` for tool ``name`` over MCP, shaped as the REST helpers."""

    async def call(body: Any, raw: bytes | None = None, **kwargs: Any) -> tuple[int, Any]:
        assert raw is None, "raw bodies are a REST matter"
        return as_rest(await call_tool(jp_fetch, name, body, whole=True))

    return call


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a ``text/event-stream`` body, in order (comments skipped)."""
    messages = []
    for block in text.split("\n\n"):
        lines = block.split("\n")
        data = [line.removeprefix("data:").lstrip() for line in lines if line.startswith("data:")]
        if data:
            assert "event: message" in lines, block
            messages.append(json.loads("\n".join(data)))
    return messages


async def stream_call(
    jp_fetch: Any,
    name: str,
    arguments: Any,
    *,
    request_id: Any = 1,
    progress_token: Any = None,
    headers: dict[str, str] | None = None,
    on_text: Callable[[str], None] | None = None,
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``tools/call`` asking for Server-Sent Events: ``(response headers, messages)``.

    ``on_text`` sees the stream's text so far after each chunk.
    """
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    received: list[str] = []

    def chunk(data: bytes) -> None:
        received.append(data.decode())
        if on_text is not None:
            on_text("".join(received))

    response = await jp_fetch(
        "api",
        "xcsh",
        "mcp",
        method="POST",
        body=json.dumps(body),
        headers={
            "MCP-Protocol-Version": VERSION,
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
        streaming_callback=chunk,
        request_timeout=REQUEST_TIMEOUT,
    )
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return dict(response.headers), sse_messages("".join(received))

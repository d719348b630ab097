"""Helpers of the policy tests: set policies, act as the person's lab, call tools both ways."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tornado.httpclient import HTTPClientError

from tests.support.mcp_client import tool_via_mcp
from tests.support.openapi_check import assert_response_matches

POLICIES = "/api/xcsh/policies"
APPROVALS = "/api/xcsh/approvals"
APPROVAL = "/api/xcsh/approvals/{approvalId}"


async def fetch_json(
    jp_fetch: Any, *parts: str, spec_path: str | None = None, **kwargs: Any
) -> tuple[int, Any]:
    """``(status, json body)`` of a request, errors included; checked against rest-api.yml."""
    kwargs.setdefault("request_timeout", 180)
    method = kwargs.get("method", "GET")
    try:
        response = await jp_fetch(*parts, **kwargs)
        status, raw = response.code, response.body
    except HTTPClientError as e:
        assert e.response is not None
        status, raw = e.code, e.response.body
    body = json.loads(raw) if raw else None
    if spec_path is not None:
        assert_response_matches(spec_path, method, status, body if raw else "")
    return status, body


async def set_policy(jp_fetch: Any, path: str, kind: str = "notebook", **rule: Any) -> Any:
    """``PUT /api/xcsh/policies`` (``preset=...`` or ``classes={...}``); the 200 body."""
    body = json.dumps({"path": path, "kind": kind, **rule})
    status, answer = await fetch_json(
        jp_fetch, "api", "xcsh", "policies", method="PUT", body=body, spec_path=POLICIES
    )
    assert status == 200, answer
    return answer


async def pending(jp_fetch: Any) -> list[dict[str, Any]]:
    """``GET /api/xcsh/approvals`` (as the lab does, which marks a lab open)."""
    status, body = await fetch_json(jp_fetch, "api", "xcsh", "approvals", spec_path=APPROVALS)
    assert status == 200, body
    return body["approvals"]  # type: ignore[no-any-return]


async def answer(
    jp_fetch: Any, approval_id: str, decision: str, reason: str | None = None
) -> tuple[int, Any]:
    """``POST /api/xcsh/approvals/<id>``: ``(status, body)``."""
    body: dict[str, Any] = {"decision": decision}
    if reason is not None:
        body["reason"] = reason
    return await fetch_json(
        jp_fetch,
        "api",
        "xcsh",
        "approvals",
        approval_id,
        method="POST",
        body=json.dumps(body),
        spec_path=APPROVAL,
    )


async def asked(jp_fetch: Any, count: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
    """Act as the lab: poll the approvals until ``count`` are pending (fail after ``timeout``)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        found = await pending(jp_fetch)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{count} approval(s) were not asked within {timeout} s")


async def answer_next(
    jp_fetch: Any, decision: str, reason: str | None = None, *, seen: set[str] | None = None
) -> dict[str, Any]:
    """Act as the lab: poll the approvals until a new one is asked, answer it; return it."""
    seen = set() if seen is None else seen
    for _ in range(600):
        for approval in await pending(jp_fetch):
            if approval["id"] not in seen:
                seen.add(approval["id"])
                status, body = await answer(jp_fetch, approval["id"], decision, reason)
                assert status == 200, body
                return approval
        await asyncio.sleep(0.05)
    raise AssertionError("no approval was asked")


def tool(jp_fetch: Any, transport: str, name: str, headers: dict[str, str] | None = None) -> Any:
    """``call(body) -> (status, body)`` for tool ``name`` over REST or MCP."""
    if transport == "mcp" and name == "run":  # MCP's notebook tool runs cells (action run)
        notebook = tool_via_mcp(jp_fetch, "notebook")

        async def run(body: Any) -> tuple[int, Any]:
            return await notebook({"action": "run", **body})

        return run
    if transport == "mcp":
        return tool_via_mcp(jp_fetch, name)
    route = {"notebook": ("notebook",), "run": ("notebook", "run")}.get(name, (name,))

    async def call(body: Any) -> tuple[int, Any]:
        return await fetch_json(
            jp_fetch,
            "api",
            "xcsh",
            *route,
            method="POST",
            body=json.dumps(body),
            headers=headers or {},
        )

    return call

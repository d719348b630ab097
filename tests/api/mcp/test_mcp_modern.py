"""Protocol 2026-07-28 over raw HTTP: no handshake, the envelope and routing headers checked.

The era is chosen per request by its ``MCP-Protocol-Version`` header, from the same endpoint
as the 2025 revisions (``test_mcp_endpoint.py``), with the same auth and limits.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient

from jupyter_xcsh.handlers.mcp import NO_TOKEN
from tests.support.mcp_client import post

pytestmark = pytest.mark.timeout(300)

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern(method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A 2026-07-28 request: the envelope in ``params._meta``."""
    given = dict(params or {})
    given["_meta"] = {**ENVELOPE, **meta}
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": given}


def routing(method: str, name: str | None = None, **more: str | None) -> dict[str, str | None]:
    """The routing headers a 2026-07-28 client sends with ``method``."""
    headers: dict[str, str | None] = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return {**headers, **more}


async def test_server_discover_says_what_initialize_said_and_hands_out_no_session(jp_fetch):
    status, headers, response = await post(
        jp_fetch, modern("server/discover"), headers=routing("server/discover")
    )

    assert status == 200
    result = response["result"]
    assert result["supportedVersions"] == ["2025-03-26", "2025-06-18", "2025-11-25", MODERN]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["instructions"].startswith("Tools of a running Jupyter Server")
    assert result["resultType"] == "complete"
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
    info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info["name"] == "jupyter-xcsh"
    assert "Mcp-Session-Id" not in headers


async def test_lists_carry_cache_hints_and_a_call_its_result_type(jp_fetch):
    _, _, tools = await post(jp_fetch, modern("tools/list"), headers=routing("tools/list"))
    call = modern("tools/call", {"name": "files", "arguments": {"action": "list"}})
    status, _, called = await post(jp_fetch, call, headers=routing("tools/call", "files"))

    assert (tools["result"]["ttlMs"], tools["result"]["cacheScope"]) == (0, "private")
    assert [tool["name"] for tool in tools["result"]["tools"]][:2] == ["notebook", "python"]
    assert status == 200
    assert called["result"]["resultType"] == "complete"
    assert called["result"]["isError"] is False
    assert "ttlMs" not in called["result"]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (routing("tools/list"), "Mcp-Method header (tools/list) does not match"),
        (routing("tools/call", "python"), "Mcp-Name header (python) does not match"),
        (routing("tools/call"), "Mcp-Name header (None) does not match"),
        (
            routing("tools/call", "files", **{"MCP-Protocol-Version": "2025-11-25"}),
            None,  # a 2025 request then: its body's envelope means nothing to it
        ),
    ],
)
async def test_routing_headers_that_disagree_with_the_body_are_a_clear_400(
    jp_fetch, headers, message
):
    call = modern("tools/call", {"name": "files", "arguments": {"action": "list"}})
    status, _, response = await post(jp_fetch, call, headers=headers)

    if message is None:
        assert status == 200 and response["result"]["isError"] is False
        assert "resultType" not in response["result"]
        return
    assert status == 400
    assert response["id"] == 7
    assert response["error"]["code"] == -32020
    assert response["error"]["message"].startswith(message)


async def test_a_version_in_the_body_unlike_the_header_is_a_mismatch(jp_fetch):
    body = modern("tools/list", **{"io.modelcontextprotocol/protocolVersion": "2027-01-01"})
    status, _, response = await post(jp_fetch, body, headers=routing("tools/list"))

    assert status == 400
    assert response["error"]["code"] == -32020
    assert "MCP-Protocol-Version header (2026-07-28)" in response["error"]["message"]


async def test_a_request_without_its_envelope_is_invalid_params(jp_fetch):
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
    status, _, response = await post(jp_fetch, body, headers=routing("tools/list"))

    assert status == 400
    assert response["error"]["code"] == -32602
    assert "io.modelcontextprotocol/protocolVersion" in response["error"]["message"]


async def test_an_unknown_version_names_the_served_ones(jp_fetch):
    status, _, response = await post(
        jp_fetch, modern("tools/list"), headers={"MCP-Protocol-Version": "2099-01-01"}
    )

    assert status == 400
    assert response["error"]["code"] == -32022
    assert MODERN in response["error"]["data"]["supported"]
    assert response["id"] == 7  # the client can match it


@pytest.mark.parametrize("method", ["initialize", "ping", "resources/subscribe"])
async def test_methods_the_2026_era_removed_are_not_found(jp_fetch, method):
    status, _, response = await post(jp_fetch, modern(method), headers=routing(method))

    assert status == 404
    assert response["error"]["code"] == -32601
    assert (
        response["error"]["message"] == f"Method not found: {method} at protocol version {MODERN}"
    )


async def test_a_notification_is_acknowledged_and_a_batch_refused(jp_fetch):
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    noted, _, _ = await post(jp_fetch, cancel, headers=routing("notifications/cancelled"))
    batch, _, refused = await post(jp_fetch, [modern("tools/list")], headers=routing("tools/list"))

    assert noted == 202
    assert batch == 400
    assert refused["error"]["code"] == -32600


async def test_the_2026_era_needs_the_token_as_the_2025_one_does(
    jp_fetch, jp_http_port, jp_base_url, jp_root_dir
):
    code = "open('ran', 'w').close()"
    call = modern("tools/call", {"name": "python", "arguments": {"cells": [{"code": code}]}})
    response = await AsyncHTTPClient().fetch(
        f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/xcsh/mcp",
        method="POST",
        body=json.dumps(call),
        headers={k: v for k, v in routing("tools/call", "python").items() if v is not None},
        raise_error=False,
    )

    assert response.code == 403
    assert json.loads(response.body)["message"] == NO_TOKEN
    assert not (jp_root_dir / "ran").exists()


async def test_a_resource_that_does_not_exist_is_invalid_params_in_2026(jp_fetch):
    # SEP-2164: -32602 from 2026-07-28 on; the 2025 revisions keep -32002
    # (test_mcp_resources.py).
    for uri in ("notebook:///missing.ipynb", "artifact://0123456789abcdef", "test://other"):
        request = modern("resources/read", {"uri": uri})
        status, _, response = await post(jp_fetch, request, headers=routing("resources/read", uri))

        assert status == 400, response  # an error of the request's params, as the SDK answers
        assert response["error"]["code"] == -32602, response
        assert response["error"]["data"] == {"uri": uri}


async def test_listen_without_event_streams_accepted_is_a_406(jp_fetch):
    request = modern("subscriptions/listen", {"notifications": {}})

    status, _, body = await post(jp_fetch, request, headers=routing("subscriptions/listen"))

    # post() checks the answer against rest-api.yml, where the 406 is declared.
    assert status == 406
    assert body["message"] == "subscriptions/listen answers as text/event-stream"

"""``GET /api/xcsh/mcp-config``: the lab's "Connect an agent" configurations
(docs/developers/contract.md §10.4), the same the command prints, usable by an MCP client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.mcp.client_config import CLIENTS, HIDDEN_TOKEN
from tests.support.mcp_client import VERSION
from tests.support.openapi_check import assert_response_matches

ENDPOINT = "/api/xcsh/mcp-config"


async def config(jp_fetch: Any, **query: str) -> tuple[int, Any]:
    """``GET /api/xcsh/mcp-config?<query>``: the status and the body, checked against the spec."""
    try:
        response = await jp_fetch("api", "xcsh", "mcp-config", params=query)
    except HTTPClientError as e:
        assert e.response is not None
        response = e.response
    text = response.body.decode()
    assert_response_matches(ENDPOINT, "get", response.code, text)
    return response.code, json.loads(text)


def server_token(jp_serverapp: Any) -> str:
    return str(jp_serverapp.identity_provider.token)


async def test_every_agent_has_a_configuration_with_the_token_hidden(jp_fetch, jp_serverapp):
    status, body = await config(jp_fetch)

    assert status == 200
    assert body["tokenShown"] is False and body["hub"] is False
    # The server's URL as the request reached it, base URL included.
    assert body["url"].startswith("http://")
    assert body["url"].endswith(jp_serverapp.base_url + "api/xcsh/mcp")
    titles = {c["title"] for c in body["clients"]}
    assert {"Claude Code", "Codex", "Gemini CLI", "VS Code", "Cursor", "Jupyter AI"} <= titles
    assert [c["client"] for c in body["clients"]] == list(CLIENTS)
    token = server_token(jp_serverapp)
    assert token
    for client in body["clients"]:
        assert token not in client["text"]
        assert HIDDEN_TOKEN in client["text"]


async def test_the_claude_code_configuration_connects_a_real_mcp_client(jp_fetch, jp_serverapp):
    status, body = await config(jp_fetch, client="claude-json", show_token="true")
    assert status == 200 and body["tokenShown"] is True
    [claude] = body["clients"]
    assert claude["title"] == "Claude Code"
    server = json.loads(claude["text"])["mcpServers"]["jupyter"]
    assert server["headers"] == {"Authorization": f"token {server_token(jp_serverapp)}"}

    # A client that knows only this configuration: its URL and headers, nothing of the test's.
    http = AsyncHTTPClient()

    async def rpc(request_id: int, method: str, params: Any = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        response = await http.fetch(
            server["url"],
            method="POST",
            body=json.dumps(message),
            headers={
                **server["headers"],
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": VERSION,
            },
            request_timeout=120,
        )
        return json.loads(response.body)["result"]

    hello = await rpc(
        1,
        "initialize",
        {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "config-test", "version": "1"},
        },
    )
    assert hello["serverInfo"]["name"]
    tools = await rpc(2, "tools/list")
    assert {t["name"] for t in tools["tools"]} >= {"notebook", "python", "files", "artifact"}
    # Without the token the same URL is refused: the configuration's header is what connects.
    with pytest.raises(HTTPClientError) as refused:
        await http.fetch(
            server["url"],
            method="POST",
            body=json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
    assert refused.value.code == 403


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"client": "emacs"}, "client must be one of claude, claude-json, codex"),
        ({"show_token": "yes"}, "show_token must be true or false: 'yes'"),
    ],
)
async def test_a_bad_query_is_a_400(jp_fetch, query, message):
    status, body = await config(jp_fetch, **query)

    assert status == 400
    assert message in body["message"]


class TestAuthorization:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_the_token_is_shown_only_to_who_may_write_on_the_server(
        self, jp_fetch, jp_serverapp
    ):
        status, body = await config(jp_fetch)
        assert status == 200 and body["tokenShown"] is False

        status, body = await config(jp_fetch, show_token="true")
        assert status == 403
        assert server_token(jp_serverapp) not in json.dumps(body)


async def test_behind_jupyterhub_the_hub_url_and_how_to_get_a_token(
    jp_fetch, jp_serverapp, monkeypatch
):
    # The environment JupyterHub gives a single-user server.
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    monkeypatch.setenv("JUPYTERHUB_PUBLIC_URL", "https://hub.example/user/ada/")

    status, body = await config(jp_fetch, client="claude-json", show_token="true")

    assert status == 200 and body["hub"] is True
    assert body["url"] == "https://hub.example/user/ada/api/xcsh/mcp"
    text = body["clients"][0]["text"]
    assert server_token(jp_serverapp) not in text
    assert "access:servers!user=ada" in text

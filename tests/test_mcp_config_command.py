"""``jupyter xcsh mcp-config``: the printed configuration reaches the running server's endpoint."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from tornado.httpclient import AsyncHTTPClient

from jupyter_xcsh.cli import main
from jupyter_xcsh.mcp.client_config import McpEndpoint, choose_server, render

from .mcp_client import VERSION

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})


async def test_the_printed_configuration_connects_to_the_running_server(
    jp_serverapp, http_server, jp_base_url, capsys, monkeypatch, jp_root_dir
):
    monkeypatch.chdir(jp_root_dir)
    args = ["mcp-config", "--runtime-dir", jp_serverapp.runtime_dir, "--client", "vscode"]
    assert main(args) == 0
    server = json.loads(capsys.readouterr().out)["servers"]["jupyter"]

    assert server["type"] == "http"
    assert server["url"].endswith(f"{jp_base_url}api/xcsh/mcp")
    response = await AsyncHTTPClient().fetch(
        server["url"],
        method="POST",
        body=PING,
        headers={**server["headers"], "MCP-Protocol-Version": VERSION},
    )
    assert json.loads(response.body)["result"] == {}


async def test_the_claude_code_command_carries_the_token_header(
    jp_serverapp, capsys, monkeypatch, jp_root_dir
):
    monkeypatch.chdir(jp_root_dir)
    args = ["mcp-config", "--runtime-dir", jp_serverapp.runtime_dir, "--client", "claude"]
    assert main(args) == 0
    words = shlex.split(capsys.readouterr().out)

    token = jp_serverapp.identity_provider.token
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", "jupyter"]
    assert words[6].endswith("api/xcsh/mcp")
    assert words[7:] == ["--header", f"Authorization: token {token}"]


async def test_without_a_client_every_client_is_printed(jp_serverapp, capsys):
    assert main(["mcp-config", "--runtime-dir", jp_serverapp.runtime_dir]) == 0
    out = capsys.readouterr().out

    for title in ("## Claude Code", "## VS Code", "## Cursor", "## Any streamable-HTTP client"):
        assert title in out
    assert f"# Header: Authorization: token {jp_serverapp.identity_provider.token}" in out


def test_no_running_server_is_an_error_that_says_what_to_do(tmp_path, capsys):
    assert main(["mcp-config", "--runtime-dir", str(tmp_path)]) == 1
    assert "No running Jupyter Server found" in capsys.readouterr().err


def test_the_server_is_chosen_by_url_then_root_then_start_time(tmp_path):
    (tmp_path / "work" / "deep").mkdir(parents=True)
    servers = [
        {"url": "http://h:1/", "root_dir": "/", "started": 3},
        {"url": "http://h:2/", "root_dir": str(tmp_path / "work"), "started": 1},
        {"url": "http://h:3/", "root_dir": str(tmp_path / "other"), "started": 2},
    ]

    assert choose_server(servers, cwd=str(tmp_path / "work" / "deep"))["url"] == "http://h:2/"
    assert choose_server(servers[2:], cwd=str(tmp_path / "work"))["url"] == "http://h:3/"
    assert choose_server(servers, cwd="/", url="http://h:3/?token=x")["url"] == "http://h:3/"
    assert choose_server(servers, cwd="/", url="http://h:9/") is None
    assert choose_server([], cwd="/") is None


def test_a_server_without_a_token_gets_no_header():
    endpoint = McpEndpoint.of({"url": "http://h:8888/user/alice", "token": "", "root_dir": "/"})

    assert endpoint.url == "http://h:8888/user/alice/api/xcsh/mcp"
    assert json.loads(render(endpoint, client="cursor"))["mcpServers"]["jupyter"]["headers"] == {}
    assert "need no Authorization header" in render(endpoint)


def test_jupyter_dispatches_the_xcsh_subcommand():
    # The console script `jupyter-xcsh` comes with the installed package (pyproject).
    jupyter = os.path.join(os.path.dirname(sys.executable), "jupyter")
    done = subprocess.run(
        [jupyter, "xcsh", "mcp-config", "--help"], capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert "--client {claude,cursor,generic,vscode}" in done.stdout


HUB_ENVIRON = {
    "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
    "JUPYTERHUB_USER": "alice",
    "JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/user/alice/",
    "JUPYTERHUB_PUBLIC_HUB_URL": "https://hub.example.org/hub/",
}
#: A single-user server's runtime info: its own address on the node, and its own token.
SINGLE_USER = {"url": "http://127.0.0.1:45321/user/alice/", "token": "s3cr3t", "root_dir": "/h"}


def test_behind_jupyterhub_the_hubs_public_url_and_a_scoped_token_are_named():
    endpoint = McpEndpoint.of(SINGLE_USER, HUB_ENVIRON)
    out = render(endpoint)

    assert endpoint.url == "https://hub.example.org/user/alice/api/xcsh/mcp"
    assert "s3cr3t" not in out  # the server's own token is not the agent's
    assert "# Header: Authorization: token <a token of alice with the scope " in out
    assert "#   https://hub.example.org/hub/token" in out
    assert "#   POST https://hub.example.org/hub/api/users/alice/tokens" in out
    assert '#   {"scopes": ["access:servers!user=alice"], "note": "MCP agent"}' in out


def test_behind_a_hub_without_a_public_url_the_prefix_is_kept_and_the_gap_said():
    environ = {k: v for k, v in HUB_ENVIRON.items() if "PUBLIC" not in k}
    endpoint = McpEndpoint.of(SINGLE_USER, environ)
    out = render(endpoint)

    assert endpoint.url == "http://127.0.0.1:45321/user/alice/api/xcsh/mcp"
    assert "c.JupyterHub.public_url" in out and "keeping /user/alice/" in out
    assert "#   https://<your hub>/hub/token" in out


def test_outside_jupyterhub_the_servers_own_url_and_token_are_used():
    endpoint = McpEndpoint.of(SINGLE_USER, {})
    assert (endpoint.url, endpoint.token, endpoint.hub) == (
        "http://127.0.0.1:45321/user/alice/api/xcsh/mcp",
        "s3cr3t",
        None,
    )

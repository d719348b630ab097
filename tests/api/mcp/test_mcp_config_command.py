"""``jupyter xcsh mcp-config``: the printed configuration reaches the running server's endpoint."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from tornado.httpclient import AsyncHTTPClient

from jupyter_xcsh.cli import main
from jupyter_xcsh.mcp.client_config import McpEndpoint, choose_server, render
from tests.support.mcp_client import VERSION

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

    titles = ("## Claude Code", "## Codex", "## Gemini CLI", "## VS Code", "## Cursor", "## Any")
    for title in titles:
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


@pytest.mark.process  # a child: the `jupyter` command dispatching to `jupyter-xcsh`
def test_jupyter_dispatches_the_xcsh_subcommand():
    # The console script `jupyter-xcsh` comes with the installed package (pyproject).
    jupyter = os.path.join(os.path.dirname(sys.executable), "jupyter")
    done = subprocess.run(
        [jupyter, "xcsh", "mcp-config", "--help"], capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert "--client {claude,claude-json,codex,cursor,gemini,generic,jupyter-ai,vscode}" in (
        done.stdout
    )


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


def printed(runtime_dir, client, capsys):
    """What ``jupyter xcsh mcp-config --client <client>`` prints for the test server."""
    assert main(["mcp-config", "--runtime-dir", runtime_dir, "--client", client]) == 0
    return capsys.readouterr().out


def _endpoint_of(jp_serverapp, jp_base_url):
    token = jp_serverapp.identity_provider.token
    return f"{jp_base_url}api/xcsh/mcp", {"Authorization": f"token {token}"}


async def test_each_agents_own_configuration_file_parses_and_names_the_server(
    jp_serverapp, http_server, jp_base_url, capsys, monkeypatch, jp_root_dir
):
    import tomllib

    monkeypatch.chdir(jp_root_dir)
    runtime = jp_serverapp.runtime_dir
    path, headers = _endpoint_of(jp_serverapp, jp_base_url)

    claude = json.loads(printed(runtime, "claude-json", capsys))  # .mcp.json
    codex = tomllib.loads(printed(runtime, "codex", capsys))  # ~/.codex/config.toml
    gemini = json.loads(printed(runtime, "gemini", capsys))  # ~/.gemini/settings.json
    vscode = json.loads(printed(runtime, "vscode", capsys))  # .vscode/mcp.json

    servers = {
        "claude": (claude["mcpServers"]["jupyter"], "url", "headers"),
        "codex": (codex["mcp_servers"]["jupyter"], "url", "http_headers"),
        "gemini": (gemini["mcpServers"]["jupyter"], "httpUrl", "headers"),
        "vscode": (vscode["servers"]["jupyter"], "url", "headers"),
    }
    assert claude["mcpServers"]["jupyter"]["type"] == "http"
    assert vscode["servers"]["jupyter"]["type"] == "http"
    assert set(codex["mcp_servers"]["jupyter"]) == {"url", "http_headers"}
    assert set(gemini["mcpServers"]["jupyter"]) == {"httpUrl", "headers"}
    for client, (server, url_key, headers_key) in servers.items():
        assert server[url_key].startswith("http://"), client
        assert server[url_key].endswith(path), client
        assert server[headers_key] == headers, client
        # Each one reaches the running server with its own URL and headers.
        response = await AsyncHTTPClient().fetch(
            server[url_key],
            method="POST",
            body=PING,
            headers={**server[headers_key], "MCP-Protocol-Version": VERSION},
        )
        assert json.loads(response.body)["result"] == {}, client


def test_codex_names_and_values_are_quoted_as_toml_needs():
    import tomllib

    endpoint = McpEndpoint.of({"url": 'http://h:1/a"b\\', "token": "t\u00e9\n", "root_dir": "/"})
    table = tomllib.loads(render(endpoint, client="codex", name="my jupyter.lab"))

    assert table["mcp_servers"]["my jupyter.lab"] == {
        "url": 'http://h:1/a"b\\/api/xcsh/mcp',
        "http_headers": {"Authorization": "token t\u00e9\n"},
    }
    no_token = McpEndpoint.of({"url": "http://h:1/", "token": "", "root_dir": "/"})
    assert tomllib.loads(render(no_token, client="codex"))["mcp_servers"]["jupyter"] == {
        "url": "http://h:1/api/xcsh/mcp"
    }


def test_a_jupyter_ai_persona_is_named_by_persona_and_chat():
    from jupyter_xcsh.mcp.jupyter_ai import persona_identity

    persona = "jupyter-ai-personas::jupyter_ai_acp_client::ClaudeAcpPersona"
    assert persona_identity(persona, "1a2b3c4d-5e6f") == (
        "Claude (Jupyter AI chat 1a2b3c4d)",
        f"jupyter-ai {persona} 1a2b3c4d-5e6f",
    )
    assert persona_identity(persona, "") == ("Claude (Jupyter AI)", f"jupyter-ai {persona}")
    assert persona_identity("someone", "c") is None
    assert persona_identity(persona, "bad chat\n")[1] == f"jupyter-ai {persona}"


def test_the_jupyter_ai_settings_file_is_its_persona_managers_shape():
    endpoint = McpEndpoint.of({"url": "http://h:1/", "token": "t", "root_dir": "/"})
    settings = json.loads(render(endpoint, client="jupyter-ai"))

    assert settings == {
        "mcp_servers": [
            {
                "type": "http",
                "name": "jupyter",
                "url": "http://h:1/api/xcsh/mcp",
                "headers": [{"name": "Authorization", "value": "token t"}],
            }
        ]
    }

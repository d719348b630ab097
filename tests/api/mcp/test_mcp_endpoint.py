"""POST /api/xcsh/mcp over raw HTTP: the protocol, its faults, auth, origins and base_url."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import AsyncHTTPClient
from traitlets.config import Config

from jupyter_xcsh.handlers.mcp import NO_TOKEN
from tests.support.mcp_client import TRANSPORTS, call_tool, post, request
from tests.support.notebooks import jupyter_text, load, sample_notebook
from tests.support.python_tool import REQUEST_TIMEOUT, kernel_ids

pytestmark = pytest.mark.timeout(300)

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture
def notebook(jp_root_dir):
    """A Jupyter-written notebook ``a.ipynb`` in the root; returns its os path."""
    path = jp_root_dir / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
async def test_initialize_answers_the_clients_version_when_served_else_the_newest(
    jp_fetch, asked, answered
):
    params = {
        "protocolVersion": asked,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    status, headers, response = await post(
        jp_fetch, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    )

    assert status == 200
    result = response["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["capabilities"]["logging"] == {}
    assert result["serverInfo"]["name"] == "jupyter-xcsh"
    # Keys the client's resource subscriptions only: nothing else is kept for it.
    assert headers["Mcp-Session-Id"].startswith("xcsh-session-")


async def test_notifications_are_accepted_with_202_and_no_body(jp_fetch):
    for method in ("notifications/initialized", "notifications/cancelled", "notifications/x"):
        status, _, body = await post(jp_fetch, {"jsonrpc": "2.0", "method": method})
        assert (status, body) == (202, None)
    # A client's answer to a server request is acknowledged the same way.
    status, _, body = await post(jp_fetch, {"jsonrpc": "2.0", "id": 3, "result": {}})
    assert (status, body) == (202, None)


async def test_ping_answers_an_empty_result(jp_fetch):
    assert await request(jp_fetch, "ping", request_id="p") == {
        "jsonrpc": "2.0",
        "id": "p",
        "result": {},
    }


async def test_a_tool_call_works_without_initialize_or_session(jp_fetch, notebook):
    result = await call_tool(jp_fetch, "notebook", {"action": "read", "notebook_path": "a.ipynb"})

    assert result["isError"] is False
    assert result["structuredContent"]["details"]["totalCells"] == 4
    assert result["content"][0]["text"].startswith("Notebook a.ipynb")
    assert "text" not in result["structuredContent"]  # said once, in content


async def test_delete_without_a_session_and_a_get_without_event_stream_are_405(jp_fetch):
    for method in ("GET", "DELETE", "PUT"):
        status, headers, _ = await post(
            jp_fetch, method=method, raw=None if method != "PUT" else b""
        )
        assert status == 405
        assert "POST" in headers["Allow"].split(", ")


async def test_delete_ends_the_session_initialize_handed_out(jp_fetch):
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "d"}}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    _, headers, _ = await post(jp_fetch, initialize)
    session = {"Mcp-Session-Id": headers["Mcp-Session-Id"]}

    status, _, body = await post(jp_fetch, method="DELETE", headers=session)

    # What the SDK client sends when it closes: a 204, not a 405 logged as a warning.
    assert (status, body) == (204, None)


async def test_delete_of_the_2026_era_is_a_405_it_has_no_sessions(jp_fetch):
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Session-Id": "any"}

    status, _, _ = await post(jp_fetch, method="DELETE", headers=headers)

    assert status == 405


@pytest.mark.parametrize(
    ("raw", "code", "message", "answer_id"),
    [
        (b"{not json", -32700, "Parse error", None),
        (b"\xff\xfe", -32700, "Parse error", None),
        (b"42", -32600, "Invalid Request: expected a JSON-RPC object or batch", None),
        (b"[]", -32600, "Invalid Request: protocol version 2025-11-25 has no batches", None),
        (b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}', -32600, "Invalid Request", 4),
        (b'{"jsonrpc": "2.0", "id": 5, "method": 7}', -32600, "Invalid Request", 5),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, "Invalid Request", None),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, "Invalid Request", None),
        (b'{"jsonrpc": "2.0", "id": 6}', -32600, "Invalid Request", 6),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1]}', -32602, "Invalid", 7),
        (
            b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": NaN}}',
            -32700,
            "Parse",
            None,
        ),
        (
            b"[" * 100 + b"]" * 100,
            -32600,
            "Invalid Request: Request body is nested too deeply",
            None,
        ),
        (b"[" * 99999 + b"]" * 99999, -32700, "Parse error", None),
        (
            rb'{"jsonrpc": "2.0", "id": 9, "method": "x\ud800"}',
            -32600,
            "Invalid Request: Invalid Unicode",
            None,
        ),
    ],
)
async def test_malformed_json_rpc_is_a_json_rpc_error_never_a_5xx(
    jp_fetch, raw, code, message, answer_id
):
    status, _, response = await post(jp_fetch, raw=raw)

    assert status == 400
    assert response["error"]["code"] == code
    assert response["error"]["message"].startswith(message)
    assert response["id"] == answer_id


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
async def test_odd_bodies_never_get_a_5xx(jp_fetch, version):
    odd = [
        b"",
        b"null",
        b'"ping"',
        b"[[]]",
        b'[{"jsonrpc": "2.0"}]',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 99999999999999999999999, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "python"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "notebook",'
        b' "arguments": {"action": ["read"], "notebook_path": {}}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": 5}}',
        rb'{"jsonrpc": "2.0", "id": "\u0000", "method": "initialize", "params": {"x": []}}',
        '{"jsonrpc": "2.0", "id": "é", "method": "ünknown"}'.encode(),
    ]
    for raw in odd:
        status, _, _ = await post(jp_fetch, raw=raw, headers={"MCP-Protocol-Version": version})
        assert status in (200, 202, 400), (raw, status)


async def test_a_log_level_of_mcp_is_accepted_any_other_refused(jp_fetch):
    for level in ("debug", "warning", "emergency"):
        answer = await request(jp_fetch, "logging/setLevel", {"level": level})
        assert answer["result"] == {}, answer
    for params in ({"level": "verbose"}, {"level": 3}, {}):
        refused = await request(jp_fetch, "logging/setLevel", params)
        assert refused["error"]["code"] == -32602, refused
        assert refused["error"]["message"].startswith("level must be one of debug, info"), refused


async def test_unknown_methods_and_bad_params_are_json_rpc_errors(jp_fetch):
    unknown = await request(jp_fetch, "tools/destroy")
    assert unknown["error"] == {"code": -32601, "message": "Method not found: tools/destroy"}
    nameless = await request(jp_fetch, "tools/call", {"name": 3})
    assert nameless["error"]["code"] == -32602


async def test_an_unsupported_protocol_version_header_is_a_400(jp_fetch):
    status, _, response = await post(jp_fetch, PING, headers={"MCP-Protocol-Version": "1999-01-01"})

    assert status == 400
    assert response["error"]["message"].startswith("Unsupported MCP-Protocol-Version: 1999-01-01")


async def test_batches_are_answered_under_2025_03_26_only(jp_fetch, notebook):
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "initialize", "params": {}},
        "not a message",
        {"jsonrpc": "2.0", "id": "c", "method": "tools/list"},
    ]
    old = {"MCP-Protocol-Version": "2025-03-26"}

    status, _, answers = await post(jp_fetch, batch, headers=old)

    assert status == 200
    assert [a["id"] for a in answers] == ["a", "b", None, "c"]
    assert answers[0]["result"] == {}
    assert answers[1]["error"]["message"] == "Invalid Request: initialize cannot be batched"
    assert answers[2]["error"]["code"] == -32600
    assert len(answers[3]["result"]["tools"]) == 5
    status, _, _ = await post(jp_fetch, [{"jsonrpc": "2.0", "method": "x"}], headers=old)
    assert status == 202
    status, _, response = await post(jp_fetch, batch)
    assert status == 400
    assert response["error"]["message"].endswith("has no batches")


async def test_an_unknown_tool_or_non_object_arguments_are_protocol_errors(jp_fetch):
    # The MCP specification: "Unknown tools" and "Invalid arguments" are JSON-RPC errors -32602.
    call = {"name": "shell", "arguments": {"cmd": "ls"}}
    unknown = await request(jp_fetch, "tools/call", call)
    message = "Unknown tool: shell (tools: notebook, python, artifact, files, kernel)"
    assert unknown["error"] == {"code": -32602, "message": message}
    listed = await request(jp_fetch, "tools/call", {"name": "python", "arguments": ["print(1)"]})
    message = "Invalid params: arguments must be a JSON object"
    assert listed["error"] == {"code": -32602, "message": message}
    missing = await request(jp_fetch, "tools/call", {"name": "python", "arguments": None})
    assert missing["result"]["isError"] is True  # no arguments: the tool's own 400, as a result
    assert missing["result"]["structuredContent"]["status"] == 400


async def test_bad_arguments_are_error_results_with_the_rest_message_and_status(jp_fetch, notebook):
    result = await call_tool(jp_fetch, "notebook", {"action": "explode", "notebook_path": "a"})

    message = (
        "Invalid action: explode "
        "(actions: edit, insert, delete, move, read, find, create, changes, run)"  # MCP's: run too
    )
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": message}]
    assert result["structuredContent"] == {"reason": None, "status": 400}
    whole = await call_tool(
        jp_fetch, "notebook", {"action": "explode", "notebook_path": "a"}, whole=True
    )
    assert whole["structuredContent"] == {"message": message, "reason": None, "status": 400}
    missing = await call_tool(jp_fetch, "notebook", {"action": "read", "notebook_path": "no.ipynb"})
    assert missing["structuredContent"]["status"] == 404


async def test_structured_content_and_links_start_with_2025_06_18(jp_fetch, notebook):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "notebook", "arguments": {"action": "read", "notebook_path": "a.ipynb"}},
    }
    # No header: 2025-03-26, as the transport spec says a stateless server must assume.
    cases = [("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True), (None, False)]
    for version, structured in cases:
        _, _, response = await post(jp_fetch, body, headers={"MCP-Protocol-Version": version})
        assert ("structuredContent" in response["result"]) is structured, version
        assert response["result"]["content"][0]["text"].startswith("Notebook a.ipynb")


CODE_WRITING_A_FILE = "import pathlib\npathlib.Path('ran').write_text('x')"


class TestNoToken:
    async def test_requests_without_a_token_are_refused_and_run_nothing(
        self, jp_fetch, jp_http_port, jp_base_url, jp_root_dir
    ):
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/xcsh/mcp"
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "python", "arguments": {"cells": [{"code": CODE_WRITING_A_FILE}]}},
        }
        wrong = {"Authorization": "token not-the-token"}
        ping = json.dumps(PING)
        for body, headers in ((json.dumps(call), {}), (ping, {}), (ping, wrong)):
            response = await AsyncHTTPClient().fetch(
                url,
                method="POST",
                body=body,
                headers=headers,
                raise_error=False,
                request_timeout=REQUEST_TIMEOUT,
            )
            assert response.code in (401, 403), (body, response.code)
            # What the client lacks is said, and how to pass it.
            assert json.loads(response.body)["message"] == NO_TOKEN
        assert not (jp_root_dir / "ran").exists()
        assert await kernel_ids(jp_fetch) == set()


class TestDenyingAuthorizer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyAllAuthorizer"
        return config

    async def test_the_endpoint_is_refused_before_any_message_is_read(self, jp_fetch):
        status, _, body = await post(jp_fetch, PING)

        assert status == 403
        assert body["message"] == "User is not authorized to read on resource: api."


class TestToolsDenied:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.ApiReadOnlyAuthorizer"
        return config

    async def test_every_tool_asks_the_authorizer_as_rest_does(
        self, jp_fetch, jp_serverapp, notebook
    ):
        before = notebook.read_bytes()
        calls = {
            "notebook": (
                {"action": "read", "notebook_path": "a.ipynb"},
                "User is not authorized to read on resource: contents.",
            ),
            "python": (
                {"cells": [{"code": CODE_WRITING_A_FILE}]},
                "User is not authorized to execute on resource: kernels.",
            ),
            "artifact": (
                {"id": "20250101T120000-0123456789ab"},
                "User is not authorized to read on resource: contents.",
            ),
            "files": (
                {"action": "list"},
                "User is not authorized to read on resource: contents.",
            ),
            "kernel": (
                {"action": "sessions"},
                "User is not authorized to read on resource: kernels.",
            ),
        }
        listed = await request(jp_fetch, "tools/list")
        assert [t["name"] for t in listed["result"]["tools"]] == list(calls)

        for name, (arguments, message) in calls.items():
            result = await call_tool(jp_fetch, name, arguments)
            assert result["isError"] is True, name
            assert result["content"] == [{"type": "text", "text": message}]
            assert result["structuredContent"] == {"reason": None, "status": 403}
        edit = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}
        result = await call_tool(jp_fetch, "notebook", edit)
        assert result["structuredContent"]["status"] == 403
        assert notebook.read_bytes() == before
        assert not (notebook.parent / "ran").exists()
        assert jp_serverapp.kernel_manager.list_kernel_ids() == []


class TestAskedAsRestAsks:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.NoContentsReadAuthorizer"
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_an_edit_needs_the_read_its_rest_verb_asks_for(self, notebook_tool, notebook):
        # Writing is allowed; the REST verb also asks for read, and so does MCP.
        before = notebook.read_bytes()
        edit = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}

        status, body = await notebook_tool(edit)

        assert status == 403
        assert body["message"] == "User is not authorized to read on resource: contents."
        assert notebook.read_bytes() == before


class TestOrigins:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.allow_origin_pat = r"https://allowed\.example"
        return config

    async def test_a_foreign_origin_is_refused_even_with_a_token(self, jp_fetch, jp_root_dir):
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "python", "arguments": {"cells": [{"code": CODE_WRITING_A_FILE}]}},
        }
        status, _, body = await post(jp_fetch, call, headers={"Origin": "http://evil.example"})

        assert status == 403
        assert body["message"] == "Origin not allowed: http://evil.example"
        assert not (jp_root_dir / "ran").exists()
        assert await kernel_ids(jp_fetch) == set()

    async def test_the_servers_own_and_allowed_origins_pass(self, jp_fetch, jp_http_port):
        for origin in (f"http://127.0.0.1:{jp_http_port}", "https://allowed.example"):
            status, _, body = await post(jp_fetch, PING, headers={"Origin": origin})
            assert (status, body["result"]) == (200, {}), origin


class TestUnderAHubPrefix:
    @pytest.fixture
    def jp_base_url(self):
        return "/user/alice/"

    async def test_the_endpoint_works_under_a_single_user_base_url(
        self, jp_fetch, jp_serverapp, notebook
    ):
        assert jp_serverapp.base_url == "/user/alice/"
        initialized = await request(jp_fetch, "initialize", {"protocolVersion": "2025-11-25"})
        assert initialized["result"]["protocolVersion"] == "2025-11-25"
        edit = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "# Hub"}

        result = await call_tool(jp_fetch, "notebook", edit)

        assert result["isError"] is False
        assert load(notebook.read_text(encoding="utf-8")).cells[0].source == "# Hub"

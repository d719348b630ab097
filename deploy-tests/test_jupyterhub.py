"""jupyter-xcsh behind a real JupyterHub: only the user's scoped token reaches the tools (issue 23).

Everything goes through the hub's public URL (its proxy), as an agent outside the hub does.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from conftest import ARTIFACTS, PASSWORD, http
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": ["# Title"]},
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "c1",
            "metadata": {},
            "outputs": [],
            "source": ["print(6 * 7)"],
        },
    ],
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}
#: The code a refused caller tries to run: it would leave this file in alice's home.
MARKER = "pwned.txt"
INTRUDER = f"open({MARKER!r}, 'w').write('x')"


@asynccontextmanager
async def mcp_client(url: str, token: str | None):
    """The official SDK client on ``url`` with ``token`` (none: no Authorization header)."""
    headers = {"Authorization": f"token {token}"} if token else {}
    timeout = httpx2.Timeout(30, read=180)
    http_client = httpx2.AsyncClient(headers=headers, timeout=timeout)
    async with http_client, Client(streamable_http_client(url, http_client=http_client)) as client:
        yield client


def call(url: str, token: str | None, tool: str, arguments: dict[str, Any]) -> Any:
    """One ``tools/call`` with a new client (the hub's proxy in between)."""

    async def one() -> Any:
        async with mcp_client(url, token) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(one())


@pytest.fixture(scope="module")
def alice(hub):
    """Alice's server (started), her home with a notebook, and a token scoped to her server."""
    url = hub.start_server("alice")
    (hub.home("alice") / "demo.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    token = hub.token("alice", ["access:servers!user=alice"])
    return {"url": url, "mcp": f"{url}api/xcsh/mcp", "token": token}


def test_alices_scoped_token_lists_and_calls_every_tool_through_the_proxy(hub, alice):
    async def session() -> dict[str, Any]:
        async with mcp_client(alice["mcp"], alice["token"]) as client:
            listed = await client.list_tools()
            first = await client.call_tool("python", {"cells": [{"code": "x = 41"}]})
            second = await client.call_tool("python", {"cells": [{"code": "print(x + 1)"}]})
            insert = await client.call_tool(
                "notebook",
                {
                    "action": "insert",
                    "notebook_path": "demo.ipynb",
                    "cell_index": 2,
                    "content": "y = 1",
                },
            )
            run = await client.call_tool(
                "notebook", {"action": "run", "notebook_path": "demo.ipynb", "cell_id": "c1"}
            )
            return {"tools": listed.tools, "results": [first, second, insert, run]}

    got = asyncio.run(session())

    assert [tool.name for tool in got["tools"]] == [
        "notebook",
        "python",
        "artifact",
        "files",
        "kernel",
    ]
    _, second, insert, run = got["results"]
    assert not any(result.is_error for result in got["results"]), got["results"]
    assert second.content[0].text == "42"  # the session's state was kept between calls
    assert insert.structured_content["details"]["totalCells"] == 3
    assert run.content[0].text == "42"
    saved = json.loads((hub.home("alice") / "demo.ipynb").read_text())
    assert [c["source"] for c in saved["cells"]][2] == ["y = 1"]
    assert saved["cells"][1]["outputs"][0]["text"] == ["42\n"]


@pytest.mark.parametrize("who", ["bob's token", "a token without access:servers", "no token"])
def test_other_tokens_are_refused_and_nothing_runs(hub, alice, who):
    token = {
        "bob's token": lambda: hub.token("bob"),
        "a token without access:servers": lambda: hub.token("alice", ["read:users!user=alice"]),
        "no token": lambda: None,
    }[who]()
    kernels_before = http("GET", f"{alice['url']}api/kernels", token=alice["token"]).body
    notebook_before = (hub.home("alice") / "demo.ipynb").read_bytes()
    intrusions = [
        ("POST", "api/xcsh/python", {"cells": [{"code": INTRUDER}]}),
        (
            "POST",
            "api/xcsh/notebook",
            {"action": "delete", "notebook_path": "demo.ipynb", "cell_index": 0},
        ),
        ("POST", "api/xcsh/notebook/run", {"notebook_path": "demo.ipynb", "cell_id": "c1"}),
        ("GET", "api/xcsh/sessions", None),
    ]
    for method, path, body in intrusions:
        answer = http(method, f"{alice['url']}{path}", token=token, body=body)
        # No token: the single-user server sends a browser to log in (302) or refuses (403).
        assert answer.status in ((302, 403) if token is None else (403,)), (path, answer)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": "python", "arguments": {"cells": [{"code": INTRUDER}]}}
    headers = {"Accept": "application/json, text/event-stream"}
    answer = http("POST", alice["mcp"], token=token, body=message, headers=headers)
    assert answer.status in ((302, 403) if token is None else (403,)), answer

    assert not (hub.home("alice") / MARKER).exists()
    assert (hub.home("alice") / "demo.ipynb").read_bytes() == notebook_before
    kernels_after = http("GET", f"{alice['url']}api/kernels", token=alice["token"]).body
    assert {k["id"] for k in kernels_after} == {k["id"] for k in kernels_before}


def test_rest_calls_with_alices_token_work_through_the_proxy(alice):
    body = {"cells": [{"code": "print('via REST')"}], "session": "rest"}
    answer = http("POST", f"{alice['url']}api/xcsh/python", token=alice["token"], body=body)
    assert answer.status == 200, answer
    assert answer.body["text"] == "via REST"
    read = {"action": "read", "notebook_path": "demo.ipynb"}
    answer = http("POST", f"{alice['url']}api/xcsh/notebook", token=alice["token"], body=read)
    assert answer.status == 200, answer


def test_mcp_config_in_alices_server_prints_the_hubs_public_url_and_how_to_get_a_token(hub, alice):
    # Run where a person of the hub runs it: a terminal (here: a kernel) of her own server,
    # which has the single-user server's environment.
    code = (
        "import subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'jupyter_xcsh.cli', 'mcp-config'],"
        " capture_output=True, text=True)\n"
        "print(done.stdout + done.stderr)"
    )
    result = call(alice["mcp"], alice["token"], "python", {"cells": [{"code": code}]})
    text = result.content[0].text
    assert not result.is_error, text
    assert f"# URL:    {alice['mcp']}" in text, text
    assert "access:servers!user=alice" in text, text
    assert f"{hub.url}hub/token" in text, text
    assert f"POST {hub.url}hub/api/users/alice/tokens" in text, text


def test_a_browser_on_alices_lab_through_the_hub_sees_her_agents_call(hub, alice, browser):
    from playwright.sync_api import expect

    page = browser.new_page()
    try:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{hub.url}hub/login")
        page.fill("input#username_input", "alice")
        page.fill("input#password_input", PASSWORD)
        page.click("#login_submit")
        page.wait_for_url("**/user/alice/lab**", timeout=120_000)
        page.wait_for_function(
            "() => document.querySelector('#jp-main-dock-panel')", timeout=120_000
        )
        panel = page.locator("#jupyter-xcsh-activity")
        if not panel.is_visible():
            page.locator('.jp-SideBar li[data-id="jupyter-xcsh-activity"]').click()
        expect(panel).to_be_visible(timeout=60_000)

        body = {"cells": [{"code": "print('seen through the hub')", "title": "hub call"}]}
        answer = http("POST", f"{alice['url']}api/xcsh/python", token=alice["token"], body=body)
        assert answer.status == 200, answer

        expect(panel).to_contain_text("seen through the hub", timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "alice-activity.png"))
        assert errors == []
    finally:
        page.close()

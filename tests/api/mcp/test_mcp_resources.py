"""MCP resources over raw HTTP: notebooks listed in pages, read, subscribed to, and updates.

A real server; the changes that must be notified are made as people and agents make them: a
save through the contents API (what the lab does), and the notebook tool.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from jupyter_xcsh.mcp import resources
from jupyter_xcsh.mcp.resources import notebook_path, notebook_uri
from tests.support.mcp_client import (
    REQUEST_TIMEOUT,
    VERSION,
    call_tool,
    post,
    request,
    sse_messages,
)
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.python_tool import eventually

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def notebooks(jp_root_dir):
    """``a.ipynb``, ``sub/B c.ipynb`` and a hidden ``.h/x.ipynb``; a text file besides."""
    (jp_root_dir / "sub").mkdir()
    (jp_root_dir / ".h").mkdir()
    for name in ("a.ipynb", "sub/B c.ipynb", ".h/x.ipynb"):
        (jp_root_dir / name).write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    (jp_root_dir / "notes.txt").write_text("not a notebook", encoding="utf-8")
    return jp_root_dir


def test_uris_keep_the_path_exactly_and_refuse_other_shapes():
    for path in ("a.ipynb", "Sub Dir/Ü b.ipynb", "x/y/z%.ipynb"):
        assert notebook_path(notebook_uri(path)) == path
    assert notebook_uri("Sub Dir/a.ipynb") == "notebook:///Sub%20Dir/a.ipynb"
    for uri in ("artifact://x", "notebook://host/a.ipynb", "notebook:///", "notebook:///a?x=1"):
        assert notebook_path(uri) is None


async def test_initialize_advertises_subscriptions(jp_fetch):
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t"}}
    response = await request(jp_fetch, "initialize", params)

    assert response["result"]["capabilities"]["resources"] == {
        "subscribe": True,
        "listChanged": False,
    }


async def test_list_shows_the_notebooks_the_contents_api_shows(jp_fetch, notebooks):
    response = await request(jp_fetch, "resources/list", {})

    listed = response["result"]["resources"]
    assert [r["uri"] for r in listed] == ["notebook:///a.ipynb", "notebook:///sub/B%20c.ipynb"]
    assert listed[1]["name"] == "sub/B c.ipynb" and listed[1]["title"] == "B c.ipynb"
    assert "nextCursor" not in response["result"]


async def test_list_pages_with_a_cursor(jp_fetch, jp_root_dir, monkeypatch):
    monkeypatch.setattr(resources, "PAGE_SIZE", 2)
    monkeypatch.setattr("jupyter_xcsh.mcp.server.PAGE_SIZE", 2)
    for k in range(5):
        (jp_root_dir / f"n{k}.ipynb").write_text(jupyter_text(sample_notebook()), "utf-8")
    seen, cursor = [], None
    while True:
        response = await request(jp_fetch, "resources/list", {"cursor": cursor} if cursor else {})
        seen += [r["name"] for r in response["result"]["resources"]]
        cursor = response["result"].get("nextCursor")
        if cursor is None:
            break

    assert seen == [f"n{k}.ipynb" for k in range(5)]
    bad = await request(jp_fetch, "resources/list", {"cursor": "nonsense"})
    assert bad["error"]["code"] == -32602


async def test_read_gives_the_read_view_of_the_notebook(jp_fetch, notebooks):
    response = await request(jp_fetch, "resources/read", {"uri": "notebook:///sub/B%20c.ipynb"})
    view = await call_tool(
        jp_fetch, "notebook", {"action": "read", "notebook_path": "sub/B c.ipynb"}
    )

    (content,) = response["result"]["contents"]
    assert content["uri"] == "notebook:///sub/B%20c.ipynb"
    assert content["mimeType"] == "text/plain"
    assert content["text"] == view["content"][0]["text"]


@pytest.mark.parametrize("uri", ["notebook:///missing.ipynb", "notebook:///.h/x.ipynb"])
async def test_a_missing_or_hidden_notebook_is_not_found(jp_fetch, notebooks, uri):
    for method in ("resources/read", "resources/subscribe"):
        response = await request(jp_fetch, method, {"uri": uri})
        assert response["error"]["code"] == -32002, response


async def test_a_path_outside_the_root_is_refused(jp_fetch, notebooks):
    response = await request(jp_fetch, "resources/read", {"uri": "notebook:///../x.ipynb"})

    assert response["error"]["code"] in (-32600, -32002), response


class NotificationStream:
    """``GET /api/xcsh/mcp`` (``text/event-stream``) in the background; its messages so far."""

    def __init__(self, jp_fetch: Any, session: str) -> None:
        self.received: list[str] = []
        self.task = asyncio.ensure_future(
            jp_fetch(
                "api",
                "xcsh",
                "mcp",
                method="GET",
                headers={"Accept": "text/event-stream", "Mcp-Session-Id": session},
                streaming_callback=lambda data: self.received.append(data.decode()),
                request_timeout=REQUEST_TIMEOUT,
            )
        )

    @property
    def messages(self) -> list[dict[str, Any]]:
        return sse_messages("".join(self.received))

    async def opened(self) -> bool:
        if self.task.done():
            self.task.result()
        return bool(self.received)

    def close(self) -> None:
        self.task.cancel()


async def subscribe(jp_fetch: Any, session: str, uri: str, method: str = "subscribe") -> Any:
    message = {"jsonrpc": "2.0", "id": 1, "method": f"resources/{method}", "params": {"uri": uri}}
    status, _, response = await post(jp_fetch, message, headers={"Mcp-Session-Id": session})
    assert status == 200
    return response


async def save_as_the_lab_does(jp_fetch: Any, path: str, source: str) -> None:
    response = await jp_fetch("api", "contents", path)
    model = json.loads(response.body)
    model["content"]["cells"][0]["source"] = source
    body = {"type": "notebook", "format": "json", "content": model["content"]}
    await jp_fetch("api", "contents", path, method="PUT", body=json.dumps(body))


@pytest.mark.slow
async def test_a_subscriber_is_told_of_a_lab_save_and_an_agents_edit_not_others(
    jp_fetch, notebooks
):
    stream = NotificationStream(jp_fetch, "xcsh-session-one")
    other = NotificationStream(jp_fetch, "xcsh-session-two")  # subscribed to nothing
    try:
        await eventually(stream.opened)
        await eventually(other.opened)
        assert (await subscribe(jp_fetch, "xcsh-session-one", "notebook:///a.ipynb")) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        await subscribe(jp_fetch, "xcsh-session-one", "notebook:///sub/B%20c.ipynb")
        updated = {"uri": "notebook:///a.ipynb"}

        await asyncio.sleep(1.2)  # nothing changed: nothing told
        assert stream.messages == []

        await save_as_the_lab_does(jp_fetch, "a.ipynb", "saved by a person")

        async def told(count: int) -> bool:
            return len(stream.messages) >= count

        await eventually(lambda: told(1), timeout=20)
        assert stream.messages == [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": updated}
        ]

        await call_tool(
            jp_fetch,
            "notebook",
            {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 1, "content": "y = 2"},
        )
        await eventually(lambda: told(2), timeout=20)
        assert stream.messages[1]["params"] == updated

        await subscribe(jp_fetch, "xcsh-session-one", "notebook:///a.ipynb", "unsubscribe")
        await save_as_the_lab_does(jp_fetch, "a.ipynb", "again")
        await asyncio.sleep(1.5)
        assert len(stream.messages) == 2  # unsubscribed: not told
        assert other.messages == []
    finally:
        stream.close()
        other.close()


class Listening:
    """A 2026 ``subscriptions/listen`` request in the background; its messages so far."""

    def __init__(
        self,
        jp_fetch: Any,
        notifications: dict[str, Any],
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        from tests.api.mcp.test_mcp_modern import modern, routing

        body = modern("subscriptions/listen", {"notifications": notifications})
        if capabilities is not None:
            body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
        headers = {
            **routing("subscriptions/listen"),
            "Accept": "application/json, text/event-stream",
        }
        self.received: list[str] = []
        self.task = asyncio.ensure_future(
            jp_fetch(
                "api",
                "xcsh",
                "mcp",
                method="POST",
                body=json.dumps(body),
                headers={name: value for name, value in headers.items() if value is not None},
                streaming_callback=lambda data: self.received.append(data.decode()),
                request_timeout=REQUEST_TIMEOUT,
            )
        )

    @property
    def messages(self) -> list[dict[str, Any]]:
        return sse_messages("".join(self.received))

    async def acknowledged(self) -> bool:
        if self.task.done():
            self.task.result()  # the request failed: its error
        return bool(self.messages)

    def close(self) -> None:
        self.task.cancel()


class TestANotebookDeletedWhileSubscribing:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        from traitlets.config import Config

        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.VanishingContentsManager"
        config.VanishingContentsManager.vanish = "a.ipynb"
        return config

    async def test_resources_subscribe_answers_not_found(self, jp_fetch, notebooks):
        response = await request(jp_fetch, "resources/subscribe", {"uri": "notebook:///a.ipynb"})

        assert response["error"]["code"] == -32002, response
        assert response["error"]["data"] == {"uri": "notebook:///a.ipynb"}

    async def test_listen_leaves_it_out_of_its_acknowledgment(self, jp_fetch, notebooks):
        uris = ["notebook:///a.ipynb", "notebook:///sub/B%20c.ipynb"]
        listening = Listening(jp_fetch, {"resourceSubscriptions": uris})
        try:
            await eventually(listening.acknowledged)
            (acknowledged,) = listening.messages
        finally:
            listening.close()

        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"]["notifications"] == {"resourceSubscriptions": uris[1:]}

"""An agent in a collaboration room: undo (docs/developers/contract.md §4.3) and presence (§4.4).

Run in an environment with jupyter-collaboration (``-m collaboration``). The agent changes cells
through the notebook tool; a person — a real Yjs client over the room's websocket, as a lab tab —
types into the same cells afterwards; ``POST /api/xcsh/notebook/undo`` takes the agent's change
back and the person's typing stays, in the room and in the file the room saves. The person also
sees the agent among the room's collaborators (its awareness state), its cursor in the cell.
"""

from __future__ import annotations

import asyncio
import json
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from tornado.httpclient import HTTPClientError

from tests.support.notebooks import jupyter_text
from tests.support.openapi_check import assert_response_matches, request_is_valid
from tests.support.rtc import rtc_config

pytestmark = pytest.mark.collaboration

P = "undo.ipynb"


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    import jupyter_server_ydoc  # noqa: F401  (fail, never skip, where it is missing)

    return rtc_config(jp_server_config, jp_root_dir, tmp_path_factory.mktemp("rtc"))


@pytest.fixture
def notebook(jp_root_dir):
    nb = new_notebook(
        cells=[
            new_code_cell("x = 0", id="c0"),
            new_code_cell("a = 1", id="c1"),
            new_markdown_cell("## b", id="c2"),
            new_code_cell("c = 3", id="c3"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    path = jp_root_dir / P
    path.write_text(jupyter_text(nb), encoding="utf-8")
    return path


@pytest.fixture
def room(jp_fetch, jp_http_port, jp_base_url, jp_auth_header, notebook):
    """Join the notebook's room as a person would: ``async with room() as person``."""
    from tests.support.yroom import RoomClient

    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    return lambda path=P: RoomClient(url, dict(jp_auth_header), path)


@pytest.fixture
def undo(jp_fetch):
    """``POST /api/xcsh/notebook/undo``; ``(status, json body)``, checked against rest-api.yml."""

    async def call(body):
        try:
            response = await jp_fetch(
                "api", "xcsh", "notebook", "undo", method="POST", body=json.dumps(body)
            )
        except HTTPClientError as e:
            assert e.response is not None
            code, answer = e.code, json.loads(e.response.body)
        else:
            code, answer = response.code, json.loads(response.body)
        assert_response_matches("/api/xcsh/notebook/undo", "post", code, answer)
        if isinstance(body, dict) and code != 400:
            assert request_is_valid("/api/xcsh/notebook/undo", "post", body)
        return code, answer

    return call


async def _ok(notebook_tool, headers=None, **body):
    extra = {} if headers is None else {"headers": headers}
    status, result = await notebook_tool({"notebook_path": P, **body}, **extra)
    assert status == 200, result
    return result


@pytest.fixture
def sources(jp_serverapp):
    """The cells' sources as the server's room has them (the store reads the live document)."""
    store = jp_serverapp.web_app.settings["xcsh"].notebook_store

    async def look():
        snapshot = await store.snapshot(P)
        assert snapshot.via == "document"
        return [key.source for key in snapshot.keys]

    return look


async def _wait(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _saved_sources(path):
    try:
        nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # the room is writing it: look again
        return None
    return [c.source for c in nb.cells]


async def _file_has(path, expected):
    async def saved():
        return _saved_sources(path) == expected

    await _wait(saved, f"the room to save {expected}")


async def _server_sees(person, index, text):
    """Wait until the person's typing reached the server's document."""
    await person.wait_for(lambda: person.sources()[index] == text, "the person's typing")


async def test_undo_takes_the_agents_change_back_and_keeps_the_persons_later_typing(
    notebook_tool, notebook, room, undo, sources, jp_serverapp
):
    store = jp_serverapp.web_app.settings["xcsh"].notebook_store
    async with room() as person:
        edit = await _ok(notebook_tool, action="edit", cell_id="c1", content="b = 2")
        assert edit["details"]["via"] == "document"
        await person.wait_for(lambda: person.sources()[1] == "b = 2", "the agent's edit")
        # The person types into the cell the agent just changed, after the change.
        person.type(1, "  # mine")
        await _server_sees(person, 1, "b = 2  # mine")

        async def arrived():
            return (await sources())[1] == "b = 2  # mine"

        await _wait(arrived, "the typing to reach the server")

        status, result = await undo({"path": P, "call_id": edit["callId"]})
        assert status == 200, result
        assert result == {"path": P, "callId": edit["callId"], "cellId": None, "undone": ["c1"]}
        # The agent's text is gone, the person's stays — in the room, in their tab, in the file.
        assert (await sources())[1] == "a = 1  # mine"
        await person.wait_for(lambda: person.sources()[1] == "a = 1  # mine", "the undo")
        await _file_has(notebook, ["x = 0", "a = 1  # mine", "## b", "c = 3"])

        # Twice: the call is undone already.
        status, result = await undo({"path": P, "call_id": edit["callId"], "cell_id": None})
        assert status == 409, result
        assert result["reason"] == "already-undone"
    assert len(store.room_undo) >= 1


async def test_one_cell_of_a_batch_then_the_rest_of_it(
    notebook_tool, notebook, room, undo, sources
):
    async with room() as person:
        batch = await _ok(
            notebook_tool,
            changes=[
                {"action": "edit", "cell_id": "c0", "content": "x = 10"},
                {"action": "edit", "cell_id": "c3", "content": "c = 33"},
                {"action": "insert", "cell_index": 4, "content": "new = 5"},
            ],
        )
        call = batch["callId"]
        new_id = batch["details"]["changes"][2]["cellId"]
        expected = ["x = 10", "a = 1", "## b", "c = 33", "new = 5"]
        await person.wait_for(lambda: person.sources() == expected, "the agent's batch")
        person.type(3, "  # typed", at=0)
        expected[3] = "  # typedc = 33"
        await _server_sees(person, 3, expected[3])

        # The inserted cell goes with the whole call only.
        status, result = await undo({"path": P, "call_id": call, "cell_id": new_id})
        assert status == 404 and result["reason"] == "not-held", result
        status, result = await undo({"path": P, "call_id": call, "cell_id": "c2"})
        assert status == 404 and result["reason"] == "cell-not-changed", result

        # One cell: only its change is undone (the person's typing in it stays).
        status, result = await undo({"path": P, "call_id": call, "cell_id": "c3"})
        assert status == 200 and result["undone"] == ["c3"], result
        expected[3] = "  # typedc = 3"
        await person.wait_for(lambda: person.sources() == expected, "the one cell's undo")
        status, result = await undo({"path": P, "call_id": call, "cell_id": "c3"})
        assert status == 409 and result["reason"] == "already-undone", result

        # The rest of the call: the other edit and the insert; c3 is not restored twice.
        status, result = await undo({"path": P, "call_id": call})
        assert status == 200 and sorted(result["undone"]) == sorted(["c0", new_id]), result
        expected = ["x = 0", "a = 1", "## b", "  # typedc = 3"]
        await person.wait_for(lambda: person.sources() == expected, "the call's undo")
        assert await sources() == expected
        await _file_has(notebook, expected)
        status, result = await undo({"path": P, "call_id": call, "cell_id": "c0"})
        assert status == 409, result


async def test_undo_keeps_a_later_agent_call(notebook_tool, notebook, room, undo):
    async with room() as person:
        first = await _ok(notebook_tool, action="edit", cell_id="c1", content="a = 10")
        await _ok(notebook_tool, action="edit", cell_id="c1", content="# later\na = 10")
        status, result = await undo({"path": P, "call_id": first["callId"], "cell_id": "c1"})
        assert status == 200, result
        await person.wait_for(lambda: person.sources()[1] == "# later\na = 1", "the undo")


async def test_a_call_without_a_room_is_not_held(notebook_tool, notebook, undo):
    edit = await _ok(notebook_tool, action="edit", cell_id="c1", content="a = 2")
    assert edit["details"]["via"] == "file"
    status, result = await undo({"path": P, "call_id": edit["callId"]})
    assert status == 404, result
    assert result["reason"] == "not-held"
    assert "No open collaboration room" in result["message"]


async def test_a_call_of_an_earlier_room_is_not_held(notebook_tool, notebook, room, undo):
    async with room():
        edit = await _ok(notebook_tool, action="edit", cell_id="c1", content="a = 2")
    unknown = "0" * 32
    async with room():
        status, result = await undo({"path": P, "call_id": unknown})
        assert status == 404 and result["reason"] == "not-held", result
        status, result = await undo({"path": "other.ipynb", "call_id": edit["callId"]})
        assert status == 404, result


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"call_id": "0" * 32}, "path is required"),
        ({"path": P}, "call_id is required"),
        ({"path": P, "call_id": "xyz"}, "call_id must be 32 lowercase hex digits"),
        ({"path": P, "call_id": 5}, "call_id must be a string"),
        ({"path": P, "call_id": "0" * 32, "cell_id": 3}, "cell_id must be a string"),
        ({"path": P, "call_id": "0" * 32, "extra": 1}, "Unknown field: extra"),
        ([P], "JSON object"),
    ],
)
async def test_a_bad_body_is_a_400(notebook, undo, body, message):
    status, result = await undo(body)
    assert status == 400, result
    assert message in result["message"]


async def test_a_path_outside_the_root_is_refused(undo):
    status, result = await undo({"path": "../outside.ipynb", "call_id": "0" * 32})
    assert status == 403, result


def test_the_registry_is_bounded_and_forgets_closed_rooms():
    import gc

    from jupyter_ydoc import YNotebook

    from jupyter_xcsh.notebook.rooms.undo import RoomUndo

    registry = RoomUndo(max_calls=2)
    doc = YNotebook()
    doc.set({"cells": [{"cell_type": "code", "source": "a", "metadata": {}, "id": "c"}]})
    for n in range(3):
        capture = registry.capture("n.ipynb", f"{n:032x}")
        capture.begin(doc)
        with doc.ydoc.transaction(origin=capture.origin):
            doc.ycells[0]["source"].insert(0, str(n))
        capture.end(doc, {"c": True})
    assert len(registry) == 2
    with pytest.raises(Exception, match="No open collaboration room") as raised:
        registry.held("n.ipynb", f"{0:032x}", doc)  # the oldest was dropped
    assert raised.value.reason == "not-held"
    assert registry.held("n.ipynb", f"{2:032x}", doc).cells == {"c": True}
    del doc, raised  # (the error's traceback holds the document too)
    gc.collect()
    capture = registry.capture("m.ipynb", "f" * 32)
    other = YNotebook()
    other.set({"cells": [{"cell_type": "code", "source": "b", "metadata": {}, "id": "d"}]})
    capture.begin(other)
    with other.ydoc.transaction(origin=capture.origin):
        other.ycells[0]["source"].insert(0, "x")
    capture.end(other, {"d": True})
    assert len(registry) == 1  # the closed room's calls went with it
    # Released here, on this thread: pycrdt < 0.14 fails when the collector of another thread
    # (the activity history's writer) drops a document's objects.
    del other, capture, registry
    gc.collect()


# -- presence ---------------------------------------------------------------------------------


def _agents(person):
    return [s for s in person.others() if s.get("user", {}).get("username", "").startswith("xcsh-")]


def _cursor_offset(person, state, index):
    """Where the agent's cursor is in the source of cell ``index`` (a UTF-8 byte offset)."""
    from pycrdt import StickyIndex

    ytext = person.doc.ycells[index]["source"]
    head = StickyIndex.from_json(state["cursors"][0]["head"], ytext)
    return head.get_index()


async def test_the_agent_appears_with_its_name_and_cursor_in_the_cell_it_edited(
    notebook_tool, notebook, room, jp_serverapp
):
    async with room() as person:
        headers = {"X-Agent-Name": "Claude Code"}
        await _ok(notebook_tool, action="edit", cell_id="c1", content="a = 100", headers=headers)
        await person.wait_for(lambda: len(_agents(person)) == 1, "the agent's awareness")
        [state] = _agents(person)
        user = state["user"]
        assert user["name"] == user["display_name"] == "Claude Code"
        assert user["initials"] == "CC"
        assert user["color"].startswith("#")
        cursor = state["cursors"][0]
        assert cursor["primary"] is True and cursor["empty"] is True
        # Just after the text the agent put in ("00"), in cell c1's source.
        await person.wait_for(lambda: person.sources()[1] == "a = 100", "the edit")
        assert _cursor_offset(person, state, 1) == len("a = 100")

        # The room's own awareness holds it too, under a client id of its own.
        store = jp_serverapp.web_app.settings["xcsh"].notebook_store
        document = await store.live.find(P)
        agents = {
            client: s
            for client, s in document.awareness.states.items()
            if s.get("user", {}).get("name") == "Claude Code"
        }
        assert len(agents) == 1 and document.awareness.client_id not in agents

        # The next change moves the cursor to the cell it changes.
        await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 3  # x", headers=headers)

        def moved():
            [state] = _agents(person)
            return person.sources()[3] == "c = 3  # x" and (
                _cursor_offset(person, state, 3) == len("c = 3  # x")
            )

        await person.wait_for(moved, "the cursor on cell c3")


async def test_an_agent_without_a_name_is_agent_and_leaves_once_idle(
    notebook_tool, notebook, room, jp_serverapp
):
    presence = jp_serverapp.web_app.settings["xcsh"].notebook_store.presence
    presence.idle_seconds, presence.renew_seconds = 1.5, 0.3
    async with room() as person:
        await _ok(notebook_tool, action="insert", cell_index=0, content="first = 1")
        await person.wait_for(lambda: len(_agents(person)) == 1, "the agent's awareness")
        [state] = _agents(person)
        assert state["user"]["name"] == "Agent" and state["user"]["initials"] == "A"
        assert _cursor_offset(person, state, 0) == len("first = 1")
        await person.wait_for(lambda: not _agents(person), "the idle agent to leave", 30)
    assert presence.shown() == []


async def test_an_mcp_client_is_shown_by_its_client_info_name(notebook, room, jp_fetch):
    """2025: the name given at ``initialize``, kept under the session id handed out then."""
    from tests.support.mcp_client import post

    async with room() as person:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "codex-cli", "version": "1.0"},
            },
        }
        status, headers, _ = await post(jp_fetch, initialize)
        assert status == 200
        # As every client does, later requests repeat the session id initialize handed out.
        session = {"Mcp-Session-Id": headers["Mcp-Session-Id"]}
        edit = {"notebook_path": P, "action": "edit", "cell_id": "c0", "content": "x = 1"}
        call = {"name": "notebook", "arguments": edit}
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        status, _, response = await post(jp_fetch, message, headers=session)
        assert status == 200 and not response["result"].get("isError"), response
        await person.wait_for(lambda: len(_agents(person)) == 1, "the agent's awareness")
        assert _agents(person)[0]["user"]["name"] == "codex-cli"


async def test_a_2026_mcp_client_is_shown_by_the_name_each_request_carries(
    notebook, room, jp_fetch
):
    from tests.support.mcp_client import post

    async with room() as person:
        edit = {"notebook_path": P, "action": "edit", "cell_id": "c0", "content": "x = 1"}
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        call = {"name": "notebook", "arguments": edit, "_meta": meta}
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        routing = {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "notebook",
        }
        status, _, response = await post(jp_fetch, message, headers=routing)
        assert status == 200 and not response["result"].get("isError"), response
        await person.wait_for(lambda: len(_agents(person)) == 1, "the agent's awareness")
        assert _agents(person)[0]["user"]["name"] == "claude-code"


async def test_a_browser_session_is_no_agent(notebook, room, jp_serverapp):
    """The lab's own changes (a person reverting from the panel) show no agent."""
    from jupyter_xcsh.calls.caller import Caller

    tool = jp_serverapp.web_app.settings["xcsh"].notebook
    async with room() as person:
        result = await tool.call(
            {"notebook_path": P, "action": "edit", "cell_id": "c0", "content": "x = 5"},
            Caller.trusted(),
        )
        assert result["details"]["via"] == "document"
        await person.wait_for(lambda: person.sources()[0] == "x = 5", "the edit")
        await asyncio.sleep(0.3)
        assert _agents(person) == []


async def test_the_agents_cursor_goes_to_the_cell_it_runs(notebook, room, jp_fetch):
    """A run in place in a room shows the agent at the cell it runs (a real kernel)."""
    from tests.support.inplace import call_run

    async with room() as person:
        status, result = await call_run(
            jp_fetch,
            {"notebook_path": P, "cell_id": "c3"},
            headers={"X-Agent-Name": "Runner"},
        )
        assert status == 200 and result["isError"] is False, result
        await person.wait_for(lambda: len(_agents(person)) == 1, "the agent's awareness")
        [state] = _agents(person)
        assert state["user"]["name"] == "Runner"
        # At the end of cell c3's source, the cell it ran.
        assert _cursor_offset(person, state, 3) == len("c = 3")


async def test_undo_of_a_delete_and_a_move_puts_the_cells_back(notebook_tool, notebook, room, undo):
    async with room() as person:
        deleted = await _ok(notebook_tool, action="delete", cell_id="c2")
        moved = await _ok(notebook_tool, action="move", cell_id="c3", to_index=0)
        await person.wait_for(lambda: person.ids() == ["c3", "c0", "c1"], "the agent's changes")
        for call in (moved, deleted):  # latest first, as a person would
            status, result = await undo({"path": P, "call_id": call["callId"]})
            assert status == 200, result
        await person.wait_for(lambda: person.ids() == ["c0", "c1", "c2", "c3"], "the undos")
        assert person.sources() == ["x = 0", "a = 1", "## b", "c = 3"]
        assert person.doc.get_cell(2)["cell_type"] == "markdown"
        await _file_has(notebook, ["x = 0", "a = 1", "## b", "c = 3"])

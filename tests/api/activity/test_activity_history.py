"""The activity history: calls kept in SQLite and served by ``GET /api/xcsh/activity``.

docs/developers/contract.md §13: what is kept (the lab's event payloads, never stdin answers), the
filters, the cursor, the bounds, several servers on one file, and the setting that turns it off.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.events.activity import NOTEBOOK_SCHEMA, PYTHON_SCHEMA
from jupyter_xcsh.events.history import NO_STDIN_OUTPUT, ActivityHistory
from tests.support.inplace import run_ok, write_notebook
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.openapi_check import assert_response_matches
from tests.support.processes import free_port, server_command, stop_process
from tests.support.python_tool import run


@pytest.fixture
def jp_server_config(jp_server_config, request):
    """The history on (the default), or off, or an authorizer, for the tests whose name says so."""
    config = Config(jp_server_config)
    if "turned_off" in request.node.name:
        config.XcshSettings.activity_history = False
    if "without_contents_read" in request.node.name:
        config.ServerApp.authorizer_class = "tests.support.fakes.NoContentsReadAuthorizer"
    return config


@pytest.fixture
def history(jp_serverapp) -> ActivityHistory:
    """The server's history."""
    kept = jp_serverapp.web_app.settings["xcsh"].activity.history
    assert kept is not None
    return kept


@pytest.fixture
def notebooks(jp_root_dir):
    """Two notebooks of the contents root."""
    for name in ("a.ipynb", "b.ipynb"):
        (jp_root_dir / name).write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return ["a.ipynb", "b.ipynb"]


async def get_activity(jp_fetch: Any, **params: str) -> tuple[int, Any]:
    """``GET /api/xcsh/activity`` with ``params``: (status, body), checked against rest-api.yml."""
    try:
        response = await jp_fetch("api", "xcsh", "activity", method="GET", params=params)
    except HTTPClientError as e:
        assert e.response is not None
        code, body = e.code, json.loads(e.response.body)
    else:
        code, body = response.code, json.loads(response.body)
    assert_response_matches("/api/xcsh/activity", "get", code, body)
    return code, body


async def kept(jp_fetch: Any, history: ActivityHistory, **params: str) -> Any:
    """The page after every write so far is done."""
    await asyncio.to_thread(history.flush)
    status, body = await get_activity(jp_fetch, **params)
    assert status == 200, body
    return body


async def insert(notebook_tool: Any, path: str, content: str) -> str:
    """Insert a cell; return the call's id."""
    body = {"action": "insert", "notebook_path": path, "cell_index": 0, "content": content}
    status, result = await notebook_tool(body)
    assert status == 200, result
    return str(result["callId"])


def notebook_event(call_id: str, path: str) -> dict[str, Any]:
    """A notebook event payload as the tool emits one."""
    return {"callId": call_id, "action": "insert", "path": path, "status": "ok", "cellIndex": 0}


@pytest.mark.slow
async def test_a_notebook_call_is_kept_and_served(jp_fetch, notebook_tool, notebooks, history):
    call_id = await insert(notebook_tool, "a.ipynb", "x = 1")
    body = await kept(jp_fetch, history)
    (entry,) = body["entries"]
    assert entry["callId"] == call_id and entry["kind"] == "notebook"
    assert entry["path"] == "a.ipynb"
    (event,) = entry["events"]  # the emission as the lab receives it on the bus
    assert event["schema_id"] == NOTEBOOK_SCHEMA and event["__timestamp__"]
    assert event["action"] == "insert" and event["source"] == "x = 1"
    assert event["callId"] == call_id
    assert body["cursor"] == entry["id"] and body["more"] is False


@pytest.mark.slow
async def test_a_python_call_is_kept_from_started_to_finished(jp_fetch, history):
    result = await run(jp_fetch, "print('hello history')")
    body = await kept(jp_fetch, history)
    (entry,) = body["entries"]
    assert entry["callId"] == result["callId"] and entry["kind"] == "python"
    assert entry["path"] is None
    names = [e["event"] for e in entry["events"]]
    assert names[0] == "started" and names[-1] == "finished"
    assert all(e["schema_id"] == PYTHON_SCHEMA for e in entry["events"])
    assert "hello history" in entry["events"][-1]["result"]["text"]


async def test_path_since_and_limit_select_the_calls(jp_fetch, notebook_tool, notebooks, history):
    ids = [
        await insert(notebook_tool, path, str(i))
        for i, path in enumerate(["a.ipynb", "b.ipynb", "a.ipynb", "a.ipynb"])
    ]
    body = await kept(jp_fetch, history)
    assert [e["callId"] for e in body["entries"]] == ids  # oldest first
    body = await kept(jp_fetch, history, path="a.ipynb")
    assert [e["callId"] for e in body["entries"]] == [ids[0], ids[2], ids[3]]
    # Without since: the newest `limit`, and `more` says older ones exist.
    newest = await kept(jp_fetch, history, limit="2")
    assert [e["callId"] for e in newest["entries"]] == ids[2:]
    assert newest["more"] is True
    # With since: the calls after the cursor, a page at a time.
    first = await kept(jp_fetch, history, since="0", limit="3")
    assert [e["callId"] for e in first["entries"]] == ids[:3] and first["more"] is True
    rest = await kept(jp_fetch, history, since=str(first["cursor"]), limit="3")
    assert [e["callId"] for e in rest["entries"]] == ids[3:] and rest["more"] is False
    # Nothing new: an empty page keeps the cursor.
    empty = await kept(jp_fetch, history, since=str(rest["cursor"]))
    assert empty == {"entries": [], "cursor": rest["cursor"], "more": False}
    later = await insert(notebook_tool, "b.ipynb", "later")
    body = await kept(jp_fetch, history, since=str(rest["cursor"]))
    assert [e["callId"] for e in body["entries"]] == [later]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": "0"}, "limit must be a whole number from 1 to 1000"),
        ({"limit": "1001"}, "limit must be a whole number from 1 to 1000"),
        ({"limit": "ten"}, "limit must be a whole number"),
        ({"since": "-1"}, "since must be a whole number at least 0"),
        ({"since": "9" * 40}, "since must be a whole number"),
    ],
)
async def test_a_bad_query_is_a_400(jp_fetch, params, message):
    status, body = await get_activity(jp_fetch, **params)
    assert status == 400
    assert message in body["message"]


async def test_a_parameter_given_twice_is_a_400(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "api", "xcsh", "activity", method="GET", params=[("limit", "1"), ("limit", "2")]
        )
    assert info.value.code == 400
    assert "limit must be given once" in json.loads(info.value.response.body)["message"]


async def test_a_request_without_a_token_is_refused(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "xcsh", "activity", method="GET", headers={"Authorization": ""})
    assert info.value.code in (401, 403)


async def test_a_caller_without_contents_read_is_refused(jp_fetch, notebook_tool, notebooks):
    status, body = await get_activity(jp_fetch)
    assert status == 403
    assert "not authorized to read on resource: contents" in body["message"]


async def test_turned_off_keeps_nothing_and_answers_404(jp_fetch, jp_serverapp, notebook_tool):
    assert jp_serverapp.web_app.settings["xcsh"].activity.history is None
    status, body = await get_activity(jp_fetch)
    assert status == 404
    assert "activity history is turned off" in body["message"]
    data_dir = Path(jp_serverapp.data_dir)
    assert not (data_dir / "xcsh" / "activity.sqlite").exists()


@pytest.mark.slow
async def test_stdin_answers_are_never_stored(jp_fetch, history):
    answer = "answer-never-kept-1f3c"
    code = "x = input('name? ')\nprint('got', x)"
    result = await run(jp_fetch, code, stdin=[answer])
    assert answer in result["text"]  # the caller sees the echo...
    body = await kept(jp_fetch, history)
    (entry,) = body["entries"]
    assert entry["callId"] == result["callId"]
    assert entry["events"][-1]["result"]["text"] == NO_STDIN_OUTPUT
    assert answer not in json.dumps(body)
    # ...and no byte of the history's files holds it (the database and its write-ahead log).
    files = list(Path(history.db_path).parent.glob(Path(history.db_path).name + "*"))
    assert files
    for file in files:
        assert answer.encode() not in file.read_bytes()


async def test_a_run_in_place_is_kept_without_its_stdin_answers(jp_fetch, jp_root_dir, history):
    answer = "run-answer-never-kept-9a7e"
    write_notebook(jp_root_dir / "ask.ipynb", "x = input('what? ')\nprint('len', len(x))")
    result = await run_ok(jp_fetch, notebook_path="ask.ipynb", all=True, stdin=[answer])
    assert answer in result["text"], result  # the caller sees the echo
    body = await kept(jp_fetch, history, path="ask.ipynb")
    (entry,) = body["entries"]
    assert entry["callId"] == result["callId"] and entry["kind"] == "run"
    names = [e["event"] for e in entry["events"]]
    assert names[0] == "started" and names[-1] == "finished" and "outputs" not in names
    assert answer not in json.dumps(body)
    for file in Path(history.db_path).parent.glob(Path(history.db_path).name + "*"):
        assert answer.encode() not in file.read_bytes()


async def test_calls_on_hidden_files_are_left_out(jp_fetch, jp_serverapp, history):
    assert jp_serverapp.contents_manager.allow_hidden is False
    history.record(NOTEBOOK_SCHEMA, notebook_event("a" * 32, ".secret/n.ipynb"))
    history.record(NOTEBOOK_SCHEMA, notebook_event("b" * 32, "shown.ipynb"))
    body = await kept(jp_fetch, history)
    assert [e["path"] for e in body["entries"]] == ["shown.ipynb"]


async def test_the_history_outlives_the_store(
    jp_fetch, jp_root_dir, notebook_tool, notebooks, history
):
    call_id = await insert(notebook_tool, "a.ipynb", "kept = True")
    await asyncio.to_thread(history.flush)
    # What a restarted server opens: a new store on the same file and root.
    reopened = ActivityHistory(history.db_path, root=str(jp_root_dir))
    try:
        page = await asyncio.to_thread(reopened.query_sync)
        assert [e["callId"] for e in page["entries"]] == [call_id]
        assert page["entries"][0]["events"][0]["source"] == "kept = True"
        # Another server's root shares the file but not the calls.
        other = ActivityHistory(history.db_path, root=str(jp_root_dir / "elsewhere"))
        try:
            assert (await asyncio.to_thread(other.query_sync))["entries"] == []
        finally:
            other.close()
    finally:
        reopened.close()


def _served_history(url: str, token: str, process: subprocess.Popen[bytes]) -> Any:
    """``GET url`` once the server at it answers (up to 120 s: a loaded machine)."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, "the second server stopped"
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # the server is starting: nothing to await in another process


@pytest.mark.slow
@pytest.mark.process
async def test_a_restarted_server_serves_the_history(
    jp_fetch, jp_serverapp, jp_root_dir, notebook_tool, notebooks, history, tmp_path
):
    call_id = await insert(notebook_tool, "a.ipynb", "still here")
    await asyncio.to_thread(history.flush)
    # Another server process on the same data directory and contents root: a restart.
    port, token = free_port(), "history-restart-token"
    command = server_command(jp_root_dir, tmp_path / "runtime", port, token)
    env = {**os.environ, "JUPYTER_DATA_DIR": jp_serverapp.data_dir}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/api/xcsh/activity"
        body = await asyncio.to_thread(_served_history, url, token, process)
    finally:
        await asyncio.to_thread(stop_process, process)
    assert [e["callId"] for e in body["entries"]] == [call_id]
    assert body["entries"][0]["events"][0]["source"] == "still here"


def test_the_history_is_bounded_by_count(tmp_path):
    store = ActivityHistory(str(tmp_path / "h.sqlite"), root=str(tmp_path), max_calls=3)
    try:
        for i in range(5):
            store.record(NOTEBOOK_SCHEMA, notebook_event(f"{i:032x}", "a.ipynb"))
        store.flush()
        page = store.query_sync()
        assert [e["callId"] for e in page["entries"]] == [f"{i:032x}" for i in (2, 3, 4)]
        rows = sqlite3.connect(store.db_path).execute("SELECT COUNT(*) FROM calls").fetchone()
        assert rows == (3,)
    finally:
        store.close()


def test_calls_finished_during_a_write_are_written_together_after_it(tmp_path):
    """Each finished call is one row; those that finish while the store's thread is busy are
    written in one transaction once it is free (one task for all), in the order they ended."""
    store = ActivityHistory(str(tmp_path / "h.sqlite"), root=str(tmp_path), max_calls=4)
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(30)

    try:
        store._executor.submit(hold)  # the store's one thread, busy (as with a long write)
        assert busy.wait(30)
        writes = [
            store.record(NOTEBOOK_SCHEMA, notebook_event(f"{i:032x}", "a.ipynb")) for i in range(6)
        ]
        assert writes[0] is not None
        assert all(write is writes[0] for write in writes)  # one write for the six
        release.set()
        writes[0].result(30)
        page = store.query_sync()
        assert [e["callId"] for e in page["entries"]] == [f"{i:032x}" for i in (2, 3, 4, 5)]
        after = store.record(NOTEBOOK_SCHEMA, notebook_event("f" * 32, "a.ipynb"))
        assert after is not None and after is not writes[0]  # the next call: a write of its own
        after.result(30)
        assert store.query_sync()["entries"][-1]["callId"] == "f" * 32
    finally:
        release.set()
        store.close()


def test_the_history_is_bounded_by_age(tmp_path):
    store = ActivityHistory(str(tmp_path / "h.sqlite"), root=str(tmp_path), max_age=1)
    try:
        store.record(NOTEBOOK_SCHEMA, notebook_event("0" * 32, "a.ipynb"))
        store.flush()
        assert len(store.query_sync()["entries"]) == 1
        time.sleep(1.2)  # the bound is a duration: nothing to await but time
        assert store.query_sync()["entries"] == []  # too old to serve...
        store.record(NOTEBOOK_SCHEMA, notebook_event("1" * 32, "a.ipynb"))
        store.flush()
        rows = sqlite3.connect(store.db_path).execute("SELECT call_id FROM calls").fetchall()
        assert rows == [("1" * 32,)]  # ...and removed by the next write
    finally:
        store.close()


@pytest.mark.parametrize("round_", range(5))
def test_two_stores_on_one_file_write_at_once(tmp_path, round_):
    # A new file each round: two processes setting up one file at once is the narrowest race.
    db = str(tmp_path / "shared" / "h.sqlite")
    stores = [ActivityHistory(db, root=str(tmp_path), max_calls=0) for _ in range(2)]
    count = 150

    def write(n: int) -> None:
        for i in range(count):
            stores[n].record(NOTEBOOK_SCHEMA, notebook_event(f"{n}{i:031x}", f"{n}.ipynb"))

    try:
        threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for store in stores:
            store.flush()
        page = stores[0].query_sync(limit=1000)
        assert len(page["entries"]) == 2 * count
        assert {e["callId"] for e in page["entries"]} == {
            f"{n}{i:031x}" for n in range(2) for i in range(count)
        }
        mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()
        assert mode == ("wal",)
    finally:
        for store in stores:
            store.close()


def test_a_python_call_keeps_only_the_last_tail_of_each_cell(tmp_path):
    store = ActivityHistory(str(tmp_path / "h.sqlite"), root=str(tmp_path))
    call = "c" * 32
    try:
        for event in (
            {"event": "started", "cells": [{"index": 0, "title": "t", "code": "x"}]},
            {"event": "chunk", "cellIndex": 0, "text": "one"},
            {"event": "chunk", "cellIndex": 0, "text": "two"},
            {"event": "finished", "result": {"text": "two"}},
        ):
            store.record(PYTHON_SCHEMA, {"callId": call, **event})
        store.flush()
        (entry,) = store.query_sync()["entries"]
        chunks = [e["text"] for e in entry["events"] if e["event"] == "chunk"]
        assert chunks == ["two"]
    finally:
        store.close()


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_an_mcp_call_is_kept_with_its_agent_and_trace(jp_fetch, notebooks, history):
    """2026: the name and trace context each request's _meta carries."""
    from tests.support.mcp_client import post

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": TRACEPARENT,
    }
    edit = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x = 1"}
    call = {"name": "notebook", "arguments": edit, "_meta": meta}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    status, _, _ = await post(jp_fetch, message, headers={**headers, "Mcp-Name": "notebook"})
    assert status == 200

    (entry,) = (await kept(jp_fetch, history))["entries"]
    (event,) = entry["events"]
    assert (event["agent"], event["traceparent"]) == ("claude-code", TRACEPARENT)


async def test_a_2025_python_call_is_kept_with_its_sessions_name_and_header_trace(
    jp_fetch, history
):
    from tests.support.mcp_client import post

    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "codex"}}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    _, headers, _ = await post(jp_fetch, initialize)
    session = {"Mcp-Session-Id": headers["Mcp-Session-Id"], "traceparent": TRACEPARENT}
    call = {"name": "python", "arguments": {"cells": [{"code": "print(1)"}]}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    status, _, _ = await post(jp_fetch, message, headers=session)
    assert status == 200
    # No session, no name: "Agent"; a malformed traceparent is not kept.
    status, _, _ = await post(jp_fetch, {**message, "id": 2}, headers={"traceparent": "00-x"})
    assert status == 200

    entries = (await kept(jp_fetch, history))["entries"]
    started = sorted((e["events"][0] for e in entries), key=lambda e: e["agent"])
    assert [(e["event"], e["agent"], e.get("traceparent")) for e in started] == [
        ("started", "Agent", None),
        ("started", "codex", TRACEPARENT),
    ]
    assert all("agent" not in e for entry in entries for e in entry["events"][1:])


async def test_a_rest_call_is_kept_with_its_agent_name_and_trace(jp_fetch, notebooks, history):
    """REST: the X-Agent-Name and traceparent headers, as MCP's clientInfo and trace."""
    edit = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x = 1"}
    name = "  my-script " + "x" * 100  # kept as MCP keeps a client's name: trimmed, 64 at most
    named = {"X-Agent-Name": name, "traceparent": TRACEPARENT}
    await jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(edit), headers=named)
    code = {"cells": [{"code": "print(1)"}]}
    await jp_fetch("api", "xcsh", "python", method="POST", body=json.dumps(code), headers=named)
    # A caller that names itself not is left unnamed; a malformed traceparent is not kept.
    bad = {"traceparent": "00-x"}
    await jp_fetch("api", "xcsh", "python", method="POST", body=json.dumps(code), headers=bad)

    entries = (await kept(jp_fetch, history))["entries"]
    started = [entry["events"][0] for entry in entries]
    assert [(e.get("agent"), e.get("traceparent")) for e in started] == [
        (name.strip()[:64], TRACEPARENT),
        (name.strip()[:64], TRACEPARENT),
        (None, None),
    ]


async def test_a_clients_name_is_kept_printable_and_at_most_64_characters(jp_fetch, history):
    """A client's name is in every call's events and history: never megabytes, never escapes."""
    from tests.support.mcp_client import post

    long = "\x1b[31m" + "n" * 100_000 + "\u202e"
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": long}}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    _, headers, _ = await post(jp_fetch, initialize)
    call = {"name": "python", "arguments": {"cells": [{"code": "1"}]}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    session = {"Mcp-Session-Id": headers["Mcp-Session-Id"]}
    assert (await post(jp_fetch, message, headers=session))[0] == 200
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": long, "version": "2"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern = {**message, "id": 2, "params": {**call, "_meta": meta}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    assert (await post(jp_fetch, modern, headers={**headers, "Mcp-Name": "python"}))[0] == 200

    entries = (await kept(jp_fetch, history))["entries"]
    agents = [entry["events"][0]["agent"] for entry in entries]
    assert agents == ["[31m" + "n" * 60] * 2

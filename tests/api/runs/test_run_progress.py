"""``GET /api/xcsh/runs/<runId>?after=<n>``: a run's state and its events after a cursor.

A client whose request timed out (or whose stream broke) picks the run up where it left off:
while the run goes on, the events after the ones it saw, never the whole output again; once
it has ended, its result (which holds the whole output), the events it no longer keeps
counted as ``skipped``. Real kernels; the bounds of the kept events on ``RunEvents`` itself.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_xcsh.runs.registry import CHUNK_ENVELOPE, RunEvents, RunRegistry
from tests.support.openapi_check import assert_response_matches
from tests.support.python_tool import REQUEST_TIMEOUT, answer, eventually, run

pytestmark = pytest.mark.timeout(300)

PATH = "/api/xcsh/runs/{runId}"


async def progress(jp_fetch: Any, run_id: str, after: Any) -> tuple[int, Any]:
    """``GET /api/xcsh/runs/<runId>?after=<after>``: ``(status, body)``, checked by the spec."""
    try:
        response = await jp_fetch(
            "api", "xcsh", "runs", run_id, params={"after": after}, request_timeout=REQUEST_TIMEOUT
        )
    except HTTPClientError as e:
        assert e.response is not None
        body = json.loads(e.response.body)
        assert_response_matches(PATH, "get", e.code, body)
        return e.code, body
    body = json.loads(response.body)
    assert_response_matches(PATH, "get", 200, body)
    return 200, body


def printed(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "chunk")


@pytest.mark.slow
async def test_a_waiting_run_then_its_end_each_after_the_events_already_seen(jp_fetch):
    waiting = await run(
        jp_fetch, "print('before')\nname = input('name? ')", "print('hi', name)", stdin="ask"
    )
    run_id = waiting["callId"]

    status, first = await progress(jp_fetch, run_id, 0)

    assert status == 200
    assert (first["runId"], first["state"], first["after"], first["skipped"]) == (
        run_id,
        "waiting",
        0,
        0,
    )
    assert first["awaitingInput"] == waiting["awaitingInput"]
    assert "result" not in first
    types = [e["type"] for e in first["events"]]
    assert types[0] == "start" and first["events"][0]["callId"] == run_id
    assert first["events"][-1] == {
        "type": "input",
        "index": 0,
        "state": "waiting",
        **waiting["awaitingInput"],
    }
    assert "before" in printed(first["events"])
    assert first["next"] == len(first["events"])

    # Nothing new yet: nothing again.
    status, again = await progress(jp_fetch, run_id, first["next"])
    assert (status, again["events"], again["next"]) == (200, [], first["next"])

    status, result = await answer(jp_fetch, run_id, "bob")
    assert status == 200

    # Ended: the result holds the output, the events after the cursor are no longer kept.
    status, rest = await progress(jp_fetch, run_id, first["next"])

    assert (rest["state"], rest["after"], rest["events"]) == ("finished", first["next"], [])
    assert rest["result"] == result and "awaitingInput" not in rest
    assert "hi bob" in result["text"]
    # The answer, the cell's output and the cells' ends: counted, each with its number.
    assert rest["skipped"] >= 3
    assert rest["next"] == first["next"] + rest["skipped"]

    # Everything seen: only the state and the result.
    status, end = await progress(jp_fetch, run_id, rest["next"])
    assert (status, end["events"], end["state"], end["result"]) == (200, [], "finished", result)
    assert end["skipped"] == 0


LOOP = """input('go? ')
import time
for i in range(6):
    print('tick', i, flush=True)
    time.sleep(0.4)"""


@pytest.mark.slow
async def test_a_running_run_is_read_in_pieces_that_add_up_to_its_output(jp_fetch):
    waiting = await run(jp_fetch, LOOP, stdin="ask")
    run_id = waiting["callId"]
    _, seen = await progress(jp_fetch, run_id, 0)
    cursor, events = seen["next"], list(seen["events"])
    # Whoever answers follows the run to its end; meanwhile this client reads it in pieces.
    answering = asyncio.ensure_future(answer(jp_fetch, run_id, ""))
    states = []

    async def caught_up() -> bool:
        nonlocal cursor
        status, piece = await progress(jp_fetch, run_id, cursor)
        assert status == 200 and piece["after"] == cursor
        states.append(piece["state"])
        if piece["state"] == "finished":  # the rest is in the result, not in events
            assert piece["events"] == [] and piece["skipped"] == piece["next"] - cursor
            return True
        assert piece["skipped"] == 0
        events.extend(piece["events"])
        cursor = piece["next"]
        return False

    await eventually(caught_up, timeout=120, interval=0.3)
    _, result = await answering

    assert "running" in states  # read while it ran
    output = "go? \n" + "".join(f"tick {i}\n" for i in range(6))
    assert output.startswith(printed(events))  # the pieces, in order, none twice
    assert result["text"].endswith("tick 5")
    _, everything = await progress(jp_fetch, run_id, 0)
    assert everything["events"] == [] and everything["skipped"] == everything["next"]
    assert everything["next"] >= len(events)


@pytest.mark.parametrize("after", ["x", "-1", "1.5", "", " 1", "99999999999999999999"])
async def test_a_cursor_that_is_not_an_event_number_is_a_400(jp_fetch, after):
    waiting = await run(jp_fetch, "input('? ')", stdin="ask")

    status, body = await progress(jp_fetch, waiting["callId"], after)

    assert status == 400
    assert "after must be an event number" in body["message"]
    await answer(jp_fetch, waiting["callId"], "")


@pytest.mark.slow
async def test_a_cursor_past_the_events_so_far_is_a_400(jp_fetch):
    waiting = await run(jp_fetch, "input('? ')", stdin="ask")
    _, seen = await progress(jp_fetch, waiting["callId"], 0)

    status, body = await progress(jp_fetch, waiting["callId"], seen["next"] + 1)

    assert status == 400
    assert (
        f"past the end of run {waiting['callId']}'s events ({seen['next']} so far)"
        in body["message"]
    )
    await answer(jp_fetch, waiting["callId"], "")


async def test_an_unknown_run_is_a_404(jp_fetch):
    status, body = await progress(jp_fetch, "0" * 32, 0)

    assert status == 404
    assert body["message"] == f"No such run: {'0' * 32}"


def test_the_oldest_events_are_dropped_past_the_bounds_and_cursors_keep_their_meaning():
    events = RunEvents(max_events=3, max_bytes=10_000)
    for i in range(5):
        events.chunk(0, str(i))

    assert (events.first, events.next) == (2, 5)
    kept, skipped = events.after(0)
    assert [e["text"] for e in kept] == ["2", "3", "4"] and skipped == 2
    kept, skipped = events.after(3)
    assert [e["text"] for e in kept] == ["3", "4"] and skipped == 0
    assert events.after(5) == ([], 0)


def test_the_bytes_bound_drops_old_events_but_never_the_newest():
    events = RunEvents(max_events=100, max_bytes=200)
    events.chunk(0, "a" * 50)
    events.chunk(0, "b" * 500)  # alone over the bound: kept, the older one dropped

    kept, skipped = events.after(0)
    assert [e["text"][0] for e in kept] == ["b"] and skipped == 1


def test_a_chunk_counts_the_text_it_holds_not_its_escaped_json():
    """A chunk is measured by its text (what it holds in memory) plus the envelope, never by
    serialising it (which took the event loop ~3 ms a MiB): 200 newlines count 200, where their
    JSON would be 400 characters and, with the next chunk, past this bound."""
    events = RunEvents(max_events=100, max_bytes=300)
    events.chunk(0, "\n" * 200)
    events.chunk(0, "x")

    assert events.bytes == 201 + 2 * CHUNK_ENVELOPE
    kept, skipped = events.after(0)
    assert [len(e["text"]) for e in kept] == [200, 1] and skipped == 0


@pytest.mark.slow
async def test_streamed_the_events_after_the_cursor_then_the_live_ones_then_the_result(jp_fetch):
    waiting = await run(jp_fetch, LOOP, stdin="ask")
    run_id = waiting["callId"]
    _, seen = await progress(jp_fetch, run_id, 0)
    answering = asyncio.ensure_future(answer(jp_fetch, run_id, ""))
    # Some of the run has gone by unseen: the stream starts at the cursor all the same.
    await eventually(lambda: _printed_since(jp_fetch, run_id, seen["next"], "tick 1"), timeout=120)

    response = await jp_fetch(
        "api",
        "xcsh",
        "runs",
        run_id,
        params={"after": seen["next"]},
        headers={"Accept": "application/x-ndjson"},
        request_timeout=REQUEST_TIMEOUT,
    )
    lines = [json.loads(line) for line in response.body.decode().splitlines()]
    _, result = await answering

    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert lines[-1] == {"type": "result", "result": result}
    assert lines[0] == {"type": "input", "state": "answered"}  # the first event after the cursor
    # The answer's echo ("" and a newline after the prompt), then every tick, none twice.
    assert printed(lines[:-1]) == "\n" + "".join(f"tick {i}\n" for i in range(6))
    # Ended: every event the stream had is counted, none kept.
    _, everything = await progress(jp_fetch, run_id, seen["next"])
    assert everything["events"] == [] and everything["skipped"] == len(lines) - 1


@pytest.mark.slow
async def test_a_finished_run_keeps_its_result_not_its_stream(jp_fetch, jp_serverapp):
    """A run is kept 10 minutes after its end for whoever follows it: with its result, which
    holds the output (the text, the rest in its artifact), not with its events, which held up
    to 4 MiB of output per run (a 20 MB print kept ~3.4 MB of the server's memory per call)."""
    code = "import sys\nfor _ in range(2048):\n    sys.stdout.write('x' * 1023 + '\\n')"
    result = await run(jp_fetch, code)
    assert result["totalBytes"] == 2 * 1024 * 1024 and result["artifactId"]
    runs: RunRegistry = jp_serverapp.web_app.settings["xcsh"].runs

    kept = runs.get(result["callId"])
    status, body = await progress(jp_fetch, result["callId"], 0)

    assert (kept.events.bytes, list(kept.events.after(0)[0])) == (0, [])
    assert status == 200 and body["state"] == "finished"
    assert body["result"] == result  # followed as before: the result is all there
    assert body["events"] == [] and body["skipped"] == body["next"] > 2


def test_a_closed_run_keeps_no_events_and_its_cursors_stay_valid():
    events = RunEvents()
    events.cell_status(0, "running")
    events.chunk(0, "x" * 100)

    events.close()

    assert (events.next, events.bytes) == (2, 0)
    assert events.after(0) == ([], 2) and events.after(2) == ([], 0)
    events.cell_status(0, "complete")  # counted, not kept
    assert events.after(1) == ([], 2) and events.next == 3


def test_a_cell_event_counts_its_json_without_being_serialised():
    events = RunEvents()
    events.cell_status(12, "complete")
    events.cell_status(3, "error")

    expected = [
        {"type": "cell", "index": 12, "status": "complete"},
        {"type": "cell", "index": 3, "status": "error"},
    ]
    assert events.bytes == sum(len(json.dumps(e)) for e in expected)
    assert events.after(0)[0] == expected


async def _printed_since(jp_fetch: Any, run_id: str, cursor: int, text: str) -> bool:
    _, piece = await progress(jp_fetch, run_id, cursor)
    return text in printed(piece["events"])


async def test_the_run_path_has_only_get(jp_fetch):
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("api", "xcsh", "runs", "0" * 32, method="POST", body="{}")

    assert caught.value.code == 405
    assert caught.value.response is not None
    assert caught.value.response.headers["Allow"].split(", ")[0] == "GET"
    assert "POST" not in caught.value.response.headers["Allow"]

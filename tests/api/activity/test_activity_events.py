"""Tool calls are reported on the server's event bus for the lab."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_xcsh.events.activity import PYTHON_SCHEMA
from tests.conftest import collect_events
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.python_tool import run


@pytest.fixture
def python_events(jp_serverapp):
    """The xcsh python events the server emits."""
    return collect_events(jp_serverapp, PYTHON_SCHEMA)


async def _wait_for(seen, count):
    # Listeners run as tasks after emit; give them a moment (2 s is ample on a loaded machine).
    for _ in range(200):
        if len(seen) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {count} events, got {seen}")


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


@pytest.mark.slow
async def test_a_successful_change_is_reported_with_what_the_lab_needs(
    notebook_tool, notebook, events
):
    body = {"action": "insert", "notebook_path": str(notebook), "cell_index": 1, "content": "a\nb"}
    status, result = await notebook_tool(body)
    assert status == 200
    await _wait_for(events, 1)
    event = events[0]
    assert event["action"] == "insert" and event["status"] == "ok"
    assert event["path"] == "a.ipynb"  # the API path, even for an absolute caller path
    assert event["cellIndex"] == 1 and event["cellType"] == "code"
    assert event["cellId"] == result["details"]["cellId"]
    assert event["source"] == "a\nb"
    assert event["totalCells"] == 5
    assert event["lastModified"] == result["details"]["lastModified"]
    assert event["callId"]


async def test_a_failed_call_is_reported_with_its_error(notebook_tool, notebook, events):
    body = {"action": "delete", "notebook_path": "a.ipynb", "cell_index": 7}
    status, result = await notebook_tool(body)
    assert status == 400
    await _wait_for(events, 1)
    assert events[0]["status"] == "error"
    assert events[0]["error"] == result["message"] == "Cell index 7 out of range (0-3) in a.ipynb"


async def test_a_malformed_body_reports_nothing(notebook_tool, notebook, events):
    status, _ = await notebook_tool({"action": "delete"})
    assert status == 400
    # A reported call after it: once its event is in, an event of the malformed one would be too.
    body = {"action": "delete", "notebook_path": "a.ipynb", "cell_index": 7}
    assert (await notebook_tool(body))[0] == 400
    await _wait_for(events, 1)
    assert [event["error"] for event in events] == ["Cell index 7 out of range (0-3) in a.ipynb"]


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_python_call_is_reported_from_start_to_finish(jp_fetch, python_events):
    code = (
        "import time\n"
        "for i in range(12):\n"
        "    print('\\x1b[31mline', i, 'x' * 1000, flush=True)\n"
        "    time.sleep(0.1)\n"
        "status('step', done=12)"
    )
    result = await run(jp_fetch, code, "1/0", session="events")
    # Listener tasks run right after each emit; the last one may trail the response slightly.
    await _wait_for_event(python_events, "finished")
    kinds = [e["event"] for e in python_events]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert {e["callId"] for e in python_events} == {python_events[0]["callId"]}
    assert python_events[0]["session"] == "events"
    assert [c["code"] for c in python_events[0]["cells"]] == [code, "1/0"]
    statuses = [(e["cellIndex"], e["status"]) for e in python_events if e["event"] == "cell"]
    assert (0, "running") in statuses and (0, "complete") in statuses and (1, "error") in statuses
    chunks = [e for e in python_events if e["event"] == "chunk" and e["cellIndex"] == 0]
    # Output arrives over ~1.2 s: throttled to a few events, each only the tail (<= 4 KiB).
    assert 1 <= len(chunks) <= 10
    assert all(len(e["text"]) <= 4096 for e in chunks)
    assert chunks[-1]["text"].endswith("x" * 1000 + "\n")
    assert "line 11" in chunks[-1]["text"]
    assert all("\x1b" not in e["text"] for e in chunks)  # terminal colours removed
    assert kinds.index("chunk") < kinds.index("finished")
    displays = [e["display"] for e in python_events if e["event"] == "display"]
    assert {"kind": "status", "data": {"op": "step", "done": 12}} in displays
    finished = python_events[-1]["result"]
    assert finished["isError"] is True and finished["text"] == result["text"]
    assert [c["status"] for c in finished["cells"]] == ["complete", "error"]


async def _wait_for_event(seen, kind):
    for _ in range(500):
        if any(e["event"] == kind for e in seen):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind} event in {seen}")

"""Notebook tool calls are reported on the server's event bus for the lab."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_xcsh.activity import NOTEBOOK_SCHEMA

from .notebooks import jupyter_text, sample_notebook


@pytest.fixture
def events(jp_serverapp):
    """Collect the xcsh notebook events the server emits."""
    seen: list[dict] = []

    async def listener(logger, schema_id, data):
        seen.append(dict(data))

    jp_serverapp.event_logger.add_listener(schema_id=NOTEBOOK_SCHEMA, listener=listener)
    return seen


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
    await asyncio.sleep(0.1)
    assert events == []

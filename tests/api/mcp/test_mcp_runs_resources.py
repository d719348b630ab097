"""Runs as MCP resources (``run://<run id>``), and task status notifications, over raw HTTP.

A run that outlives its request (here, one waiting for input) is read as ``run_id`` + ``wait:
0`` answers it, and its subscribers are told of its output, its prompts and its end: 2025 with
``resources/subscribe`` and the ``GET`` stream, 2026 with ``subscriptions/listen``, whose
``taskIds`` also get ``notifications/tasks`` as a task's status changes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from jupyter_xcsh.mcp.resources import run_id, run_uri
from tests.api.mcp.test_mcp_resources import Listening, NotificationStream, subscribe
from tests.api.mcp.test_mcp_tasks import TASKS, call, task
from tests.support.mcp_client import request
from tests.support.python_tool import eventually

pytestmark = pytest.mark.timeout(300)

#: Waits for a name, then prints twice a second apart.
ASKING = (
    "name = input('name? ')\nimport time\nprint('hello', name, flush=True)\ntime.sleep(1)\n"
    "print('bye')"
)


async def waiting_run(jp_fetch: Any) -> str:
    """A python call (REST) whose run waits for input after its request answered: its id."""
    body = {"cells": [{"code": ASKING}], "stdin": "ask"}
    response = await jp_fetch("api", "xcsh", "python", method="POST", body=json.dumps(body))
    result = json.loads(response.body)
    return str(result["awaitingInput"]["runId"])


async def answer(jp_fetch: Any, run: str, value: str) -> Any:
    """Answer the run's prompt over REST: its next stop (here, its end)."""
    body = json.dumps({"value": value})
    response = await jp_fetch("api", "xcsh", "runs", run, "input", method="POST", body=body)
    return json.loads(response.body)


def test_run_uris_name_a_run_id_and_nothing_else():
    run = "0123456789abcdef0123456789abcdef"
    assert run_uri(run) == f"run://{run}"
    assert run_id(run_uri(run)) == run
    for uri in (
        "run://x",
        f"run:///{run}",
        f"run://{run}/x",
        f"run://{run}?a",
        f"artifact://{run}",
    ):
        assert run_id(uri) is None


async def test_runs_are_a_resource_template(jp_fetch):
    response = await request(jp_fetch, "resources/templates/list", {})

    templates = {t["name"]: t for t in response["result"]["resourceTemplates"]}
    assert templates["run"]["uriTemplate"] == "run://{id}"


@pytest.mark.slow
async def test_a_run_is_read_as_its_output_so_far_then_its_result(jp_fetch):
    run = await waiting_run(jp_fetch)

    waiting = await request(jp_fetch, "resources/read", {"uri": run_uri(run)})
    (content,) = waiting["result"]["contents"]
    assert content["uri"] == run_uri(run) and content["mimeType"] == "text/plain"
    assert content["text"].startswith("name? ")
    assert f'"run_id": "{run}"' in content["text"]  # how to answer it
    # Reading it answered nothing: the run still waits.
    progress = json.loads((await jp_fetch("api", "xcsh", "runs", run, params={"after": 0})).body)
    assert progress["state"] == "waiting"

    await answer(jp_fetch, run, "ann")
    ended = await request(jp_fetch, "resources/read", {"uri": run_uri(run)})
    assert ended["result"]["contents"][0]["text"] == "name? ann\nhello ann\nbye"


async def test_an_unknown_run_is_not_found(jp_fetch):
    uri = run_uri("0" * 32)
    for method in ("resources/read", "resources/subscribe"):
        response = await request(jp_fetch, method, {"uri": uri})
        assert response["error"]["code"] == -32002, response
        assert response["error"]["data"] == {"uri": uri}


@pytest.mark.slow
async def test_a_subscriber_is_told_of_a_runs_output_and_end_2025(jp_fetch):
    run = await waiting_run(jp_fetch)
    stream = NotificationStream(jp_fetch, "xcsh-session-runs")
    try:
        await eventually(stream.opened)
        assert (await subscribe(jp_fetch, "xcsh-session-runs", run_uri(run)))["result"] == {}

        ended = await answer(jp_fetch, run, "bob")
        assert ended["text"].endswith("bye")

        async def told_twice() -> bool:  # its answer and output, and its end a second on
            return len(stream.messages) >= 2

        await eventually(told_twice, timeout=20)
    finally:
        stream.close()
    assert {m["method"] for m in stream.messages} == {"notifications/resources/updated"}
    assert {m["params"]["uri"] for m in stream.messages} == {run_uri(run)}


@pytest.mark.slow
async def test_a_listener_is_told_of_a_runs_changes_and_a_tasks_statuses_2026(jp_fetch):
    run = await waiting_run(jp_fetch)
    code = "import time\ntime.sleep(2.5)\nname = input('who? ')\nprint('hi', name)"
    created = await call(jp_fetch, "python", {"cells": [{"code": code}], "session": "t"})
    assert created["resultType"] == "task"
    task_id = created["taskId"]

    filters = {"resourceSubscriptions": [run_uri(run)], "taskIds": [task_id, "nope"]}
    listening = Listening(jp_fetch, filters, capabilities=TASKS)
    try:
        await eventually(listening.acknowledged)
        acknowledged = listening.messages[0]["params"]["notifications"]
        assert acknowledged == {"resourceSubscriptions": [run_uri(run)], "taskIds": [task_id]}

        async def statuses() -> list[str]:
            return [
                m["params"]["status"]
                for m in listening.messages
                if m["method"] == "notifications/tasks"
            ]

        async def asks() -> bool:
            return "input_required" in await statuses()

        await eventually(asks, timeout=30)
        response = {"stdin": {"action": "accept", "content": {"answer": "eve"}}}
        await task(jp_fetch, "tasks/update", task_id, inputResponses=response)
        await answer(jp_fetch, run, "dan")

        async def done() -> bool:
            updated = [m for m in listening.messages if m["method"].endswith("updated")]
            return "completed" in await statuses() and bool(updated)

        await eventually(done, timeout=30)
    finally:
        listening.close()

    told = [m for m in listening.messages if m["method"] == "notifications/tasks"]
    assert [m["params"]["status"] for m in told][-2:] == ["input_required", "completed"] or [
        m["params"]["status"] for m in told
    ][-3:] == ["input_required", "working", "completed"]
    assert told[0]["params"]["status"] in ("working", "input_required")
    last = told[-1]["params"]
    assert last["taskId"] == task_id
    assert last["result"]["content"][0]["text"] == "who? eve\nhi eve"
    assert all(m["params"]["_meta"] for m in listening.messages)  # the subscription's id
    updated = [m for m in listening.messages if m["method"] == "notifications/resources/updated"]
    assert {m["params"]["uri"] for m in updated} == {run_uri(run)}


async def test_task_ids_need_the_tasks_extension_declared(jp_fetch):
    created = await waiting_run(jp_fetch)
    listening = Listening(jp_fetch, {"taskIds": [created]})
    try:
        await eventually(listening.acknowledged)
    finally:
        listening.close()

    assert listening.messages[0]["params"]["notifications"] == {}

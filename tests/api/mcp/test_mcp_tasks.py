"""The Tasks extension of MCP 2026-07-28 over raw HTTP: a run that outlives its request.

A python call or a run in place still running ``XcshSettings.mcp_task_after`` seconds on (2 by
default) answers with a task
(its run); ``tasks/get`` follows it, ``tasks/update`` answers its prompt, ``tasks/cancel``
interrupts it, its output kept for its run id.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_xcsh.settings import XcshSettings
from tests.api.mcp.test_mcp_modern import ENVELOPE, routing
from tests.support.inplace import write_notebook
from tests.support.mcp_client import post

pytestmark = pytest.mark.timeout(300)

#: Seconds a run's call answers in before it becomes a task, by default.
TASK_AFTER = XcshSettings.mcp_task_after.default_value

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


async def send(jp_fetch: Any, method: str, params: dict[str, Any], name: str | None = None):
    """A 2026-07-28 request of a client declaring the Tasks extension: its JSON-RPC answer."""
    meta = {**ENVELOPE, CAPABILITIES: TASKS}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    status, _, response = await post(jp_fetch, body, headers=routing(method, name))
    assert status == 200, response
    return response["result"]


async def call(jp_fetch: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return await send(jp_fetch, "tools/call", params, tool)


async def task(jp_fetch: Any, method: str, task_id: str, **more: Any) -> dict[str, Any]:
    return await send(jp_fetch, method, {"taskId": task_id, **more}, task_id)


async def until(jp_fetch: Any, task_id: str, status: str, timeout: float = 60) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        state = await task(jp_fetch, "tasks/get", task_id)
        if state["status"] == status:
            return state
        assert time.monotonic() < end, state
        await asyncio.sleep(0.2)


async def test_a_quick_call_is_a_result_and_discover_names_the_extension(jp_fetch):
    discovered = await send(jp_fetch, "server/discover", {})
    first = await call(jp_fetch, "python", {"cells": [{"code": "0"}]})
    if first["resultType"] == "task":  # the kernel's start took longer than TASK_AFTER
        await until(jp_fetch, first["taskId"], "completed")
    quick = await call(jp_fetch, "python", {"cells": [{"code": "print(1)"}]})

    assert discovered["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert quick["resultType"] == "complete"
    assert quick["content"][0]["text"] == "1"


@pytest.mark.slow
async def test_a_long_call_becomes_a_task_followed_to_its_result(jp_fetch):
    first = await call(jp_fetch, "python", {"cells": [{"code": "import time"}]})
    if first["resultType"] == "task":  # the kernel's start took longer than TASK_AFTER
        await until(jp_fetch, first["taskId"], "completed")
    code = "print('begun', flush=True)\ntime.sleep(3)\nprint('done')"
    started = time.monotonic()
    created = await call(jp_fetch, "python", {"cells": [{"code": code}]})
    answered = time.monotonic() - started

    assert TASK_AFTER <= answered < TASK_AFTER + 10  # two loaded cores
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["pollIntervalMs"] == 1000 and created["ttlMs"] is None
    working = await task(jp_fetch, "tasks/get", created["taskId"])
    assert working["status"] == "working"
    assert working["resultType"] == "complete"
    assert working["statusMessage"].endswith(": begun")
    done = await until(jp_fetch, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "begun\ndone"
    assert done["result"]["isError"] is False
    assert done["createdAt"] == created["createdAt"]


@pytest.mark.slow
async def test_a_tasks_prompt_is_answered_with_tasks_update(jp_fetch):
    code = "import time\ntime.sleep(3)\nname = input('name? ')\nprint('hello', name)"
    created = await call(jp_fetch, "python", {"cells": [{"code": code}]})
    assert created["resultType"] == "task"

    asking = await until(jp_fetch, created["taskId"], "input_required")
    question = asking["inputRequests"]["stdin"]
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "name?"
    answer = {"stdin": {"action": "accept", "content": {"answer": "ann"}}}
    assert await task(jp_fetch, "tasks/update", created["taskId"], inputResponses=answer) == {
        "resultType": "complete",
        "_meta": asking["_meta"],
    }
    done = await until(jp_fetch, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "name? ann\nhello ann"


@pytest.mark.slow
async def test_tasks_cancel_interrupts_a_run_in_place_its_output_kept(jp_fetch, jp_root_dir):
    write_notebook(
        jp_root_dir / "t.ipynb", "import time\nprint('first', flush=True)\ntime.sleep(60)", "2"
    )
    arguments = {"action": "run", "notebook_path": "t.ipynb", "all": True}
    created = await call(jp_fetch, "notebook", arguments)
    assert created["resultType"] == "task"
    # Under load the kernel may still be starting: cancel once the cell has printed.
    end = time.monotonic() + 60
    while not (await task(jp_fetch, "tasks/get", created["taskId"]))["statusMessage"].endswith(
        ": first"
    ):
        assert time.monotonic() < end
        await asyncio.sleep(0.2)

    assert (await task(jp_fetch, "tasks/cancel", created["taskId"]))["resultType"] == "complete"
    cancelled = await until(jp_fetch, created["taskId"], "cancelled")
    kept = await call(jp_fetch, "notebook", {"run_id": created["taskId"], "wait": 0})

    assert created["taskId"] in cancelled["statusMessage"]
    assert kept["structuredContent"]["cancelled"] is True
    assert kept["content"][0]["text"].startswith("[Command cancelled]")
    assert "first" in kept["content"][0]["text"]


async def test_an_unknown_task_and_a_header_unlike_its_id_are_refused(jp_fetch):
    meta = {**ENVELOPE, CAPABILITIES: TASKS}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}
    body["params"] = {"taskId": "nope", "_meta": meta}
    status, _, unknown = await post(jp_fetch, body, headers=routing("tasks/get", "nope"))
    mismatch_status, _, mismatch = await post(jp_fetch, body, headers=routing("tasks/get", "other"))

    assert (status, unknown["error"]["code"]) == (400, -32602)
    assert unknown["error"]["message"] == "Unknown task: nope"
    assert (mismatch_status, mismatch["error"]["code"]) == (400, -32020)


@pytest.mark.slow
async def test_a_client_without_the_extension_gets_no_task(jp_fetch):
    code = "import time\ntime.sleep(3)\nprint('waited')"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": "python", "arguments": {"cells": [{"code": code}]}}
    body["params"]["_meta"] = ENVELOPE
    status, _, response = await post(jp_fetch, body, headers=routing("tools/call", "python"))

    assert status == 200
    assert response["result"]["resultType"] == "complete"
    assert response["result"]["content"][0]["text"] == "waited"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_need_the_extension_declared(jp_fetch, method):
    body = {"jsonrpc": "2.0", "id": 4, "method": method}
    body["params"] = {"taskId": "t", "_meta": ENVELOPE}
    status, _, response = await post(jp_fetch, body, headers=routing(method, "t"))

    assert status == 400
    assert response["error"]["code"] == -32021
    required = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert response["error"]["data"] == {"requiredCapabilities": required}


@pytest.mark.slow
async def test_a_call_that_said_detach_false_still_becomes_a_task_and_is_not_cancelled(jp_fetch):
    # Its request stops following it after TASK_AFTER seconds: the run must go on as the task.
    await call(jp_fetch, "python", {"cells": [{"code": "0"}]})  # the kernel started
    code = "import time\ntime.sleep(4)\nprint('went on')"
    created = await call(jp_fetch, "python", {"cells": [{"code": code}], "detach": False})

    assert created["resultType"] == "task"
    done = await until(jp_fetch, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "went on"
    assert done["result"]["structuredContent"]["cancelled"] is False


class TestTheThresholdIsASetting:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.mcp_task_after = 0.5
        return config

    @pytest.mark.slow
    async def test_a_call_longer_than_the_setting_becomes_a_task_sooner(self, jp_fetch):
        first = await call(jp_fetch, "python", {"cells": [{"code": "import time"}]})
        if first["resultType"] == "task":  # the kernel's start took longer than 0.5 s
            await until(jp_fetch, first["taskId"], "completed")
        started = time.monotonic()
        created = await call(jp_fetch, "python", {"cells": [{"code": "time.sleep(1.5)"}]})
        answered = time.monotonic() - started

        assert created["resultType"] == "task"  # under the default 2 s it would be a result
        assert 0.5 <= answered < 1.5
        await until(jp_fetch, created["taskId"], "completed")


class TestACallRefusedAfterItBecameATask:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.kernel_manager_class = "tests.support.fakes.SlowMissingSpecKernelManager"
        config.SlowMissingSpecKernelManager.start_delay = 1.0
        config.XcshSettings.mcp_task_after = 0.2
        return config

    async def test_its_task_completes_with_the_error_result_of_the_call(self, jp_fetch):
        created = await call(jp_fetch, "python", {"cells": [{"code": "1"}]})
        assert created["resultType"] == "task"

        done = await until(jp_fetch, created["taskId"], "completed")

        # The tools/call's own answer to the refusal (REST's 400), not an internal error.
        assert done["result"]["isError"] is True
        assert done["result"]["content"][0]["text"] == "No such kernel: python3"
        assert done["result"]["structuredContent"]["status"] == 400


@pytest.mark.slow
async def test_a_password_prompt_of_a_task_gets_end_of_file_unpolled(jp_fetch):
    code = (
        "import getpass, time\ntime.sleep(3)\n"
        "try:\n    getpass.getpass('pw? ')\nexcept EOFError:\n    print('no password')"
    )
    created = await call(jp_fetch, "python", {"cells": [{"code": code}]})
    assert created["resultType"] == "task"

    # Nobody polls the task: the run's end comes all the same (a poll only reports).
    response = await jp_fetch("api", "xcsh", "runs", created["taskId"], request_timeout=120)
    followed = json.loads(response.body)

    assert "awaitingInput" not in followed
    assert "never asked through MCP" in followed["text"]
    assert followed["text"].endswith("no password")
    done = await until(jp_fetch, created["taskId"], "completed")
    assert "never asked through MCP" in done["result"]["content"][0]["text"]

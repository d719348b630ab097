"""Agent policies on code: runs in place, the python tool, and ``ask-before-run`` cells.

Real kernels. A run reaching a cell tagged ``ask-before-run`` waits for the person's answer
(given here by a concurrent task polling ``GET /api/xcsh/approvals``, as the lab does): the
cells before it have run, nothing after it runs until then, and a refusal stops the run there
with the earlier outputs kept.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from tests.support.mcp_client import TRANSPORTS, stream_call
from tests.support.notebooks import jupyter_text
from tests.support.policies import answer, answer_next, asked, fetch_json, pending, set_policy, tool

APPROVAL_TIMEOUT = 20.0


@pytest.fixture
def jp_server_config(jp_server_config, tmp_path):
    """The extension with a short approval timeout; the person's rules in ``tmp_path``."""
    config = Config(jp_server_config)
    config.XcshSettings.approval_timeout = APPROVAL_TIMEOUT
    config.XcshSettings.policy_store_path = str(tmp_path / "state" / "policies.json")
    return config


def write(path: Any, *sources: str, tagged: tuple[int, ...] = ()) -> None:
    """A notebook of code cells ``c0``, ``c1``... (``tagged``: ``ask-before-run``)."""
    cells = []
    for i, source in enumerate(sources):
        cell = new_code_cell(source, id=f"c{i}")
        if i in tagged:
            cell.metadata["tags"] = ["ask-before-run"]
        cells.append(cell)
    nb = new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    )
    path.write_text(jupyter_text(nb), encoding="utf-8")


def outputs(path: Any) -> list[str]:
    """Each cell's stream text as stored in the notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))

    def text(output: dict[str, Any]) -> str:
        value = output.get("text", "")
        return value if isinstance(value, str) else "".join(value)

    return ["".join(text(o) for o in cell.get("outputs", [])) for cell in nb["cells"]]


THREE = ("print('one')", "print('two')", "print('three')")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_run_stops_at_an_ask_before_run_cell_and_goes_on_when_approved(
    jp_fetch, jp_root_dir, transport
):
    write(jp_root_dir / "a.ipynb", *THREE, tagged=(1,))
    await pending(jp_fetch)
    run = asyncio.ensure_future(
        tool(jp_fetch, transport, "run")({"notebook_path": "a.ipynb", "all": True})
    )
    approval = (await asked(jp_fetch))[0]
    # Waiting: the cell before it has run, the tagged cell and those after it have not.
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n", "", ""]
    assert approval["cellIds"] == ["c1"] and approval["class"] == "run"
    assert approval["detail"]["code"] == "print('two')"
    assert "ask-before-run" in approval["summary"]
    await asyncio.sleep(1)  # nothing more runs while it waits
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n", "", ""]
    assert not run.done()
    status, body = await fetch_json(
        jp_fetch,
        "api",
        "xcsh",
        "approvals",
        approval["id"],
        method="POST",
        body=json.dumps({"decision": "allow-once"}),
    )
    assert status == 200, body
    status, result = await run
    assert status == 200, result
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n", "two\n", "three\n"]
    assert not result.get("isError"), result


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("decision", ["deny", None])
async def test_a_refused_ask_before_run_cell_stops_the_run_there(
    jp_fetch, jp_root_dir, transport, decision
):
    write(jp_root_dir / "a.ipynb", *THREE, tagged=(1,))
    call = tool(jp_fetch, transport, "run")({"notebook_path": "a.ipynb", "all": True})
    if decision is None:  # no lab open: refused at once
        status, result = await call
        reason = "approval_required"
    else:
        await pending(jp_fetch)
        (status, result), _ = await asyncio.gather(call, answer_next(jp_fetch, decision, "no"))
        reason = "approval_denied"
    assert status == 200, result
    assert result["isError"] is True
    assert result["refusal"]["reason"] == reason
    assert "ask-before-run" in result["text"] and "cells before it ran" in result["text"]
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n", "", ""]
    statuses = [cell["status"] for cell in result["cells"]]
    assert statuses[0] == "complete" and statuses[1] == "skipped"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_allow_for_the_notebook_lets_later_tagged_runs_go(jp_fetch, jp_root_dir, transport):
    write(jp_root_dir / "a.ipynb", "print('one')", tagged=(0,))
    await pending(jp_fetch)
    run = tool(jp_fetch, transport, "run")
    (status, result), _ = await asyncio.gather(
        run({"notebook_path": "a.ipynb", "cell_id": "c0"}), answer_next(jp_fetch, "allow-notebook")
    )
    assert status == 200 and not result.get("isError"), result
    status, result = await run({"notebook_path": "a.ipynb", "cell_id": "c0"})
    assert status == 200 and not result.get("isError"), result  # no lab answers: not asked


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_run_policy_asks_before_a_run_and_python_on_the_notebooks_kernel(
    jp_fetch, jp_root_dir, transport
):
    write(jp_root_dir / "a.ipynb", "print('one')")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-running")
    await pending(jp_fetch)
    (status, result), asked = await asyncio.gather(
        tool(jp_fetch, transport, "run")({"notebook_path": "a.ipynb", "cell_id": "c0"}),
        answer_next(jp_fetch, "allow-once"),
    )
    assert status == 200 and not result.get("isError"), result
    assert asked["class"] == "run" and asked["summary"] == "run cell 0 (id c0) of a.ipynb"
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n"]
    seen = {asked["id"]}
    python = tool(jp_fetch, transport, "python")
    body = {"notebook_path": "a.ipynb", "cells": [{"code": "print(41 + 1)"}]}
    (status, result), asked = await asyncio.gather(
        python(body), answer_next(jp_fetch, "deny", "not now", seen=seen)
    )
    assert (status, result["reason"]) == (403, "approval_denied"), result
    assert asked["tool"] == "python" and asked["detail"]["code"] == "print(41 + 1)"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_python_on_its_own_kernels_is_its_own_class(jp_fetch, jp_root_dir, transport):
    (jp_root_dir / "lab").mkdir()
    await set_policy(jp_fetch, "lab", "folder", classes={"python": "deny"})
    python = tool(jp_fetch, transport, "python")
    status, result = await python({"cwd": "lab", "cells": [{"code": "open('x', 'w')"}]})
    assert (status, result["reason"]) == (403, "policy_denied"), result
    assert not (jp_root_dir / "lab" / "x").exists()
    # Nothing else is refused by it: the run class is another.
    described = await set_policy(jp_fetch, "lab", "folder", classes={"run": "deny"})
    assert described["effective"]["python"] == "allow"


async def test_a_waiting_rest_stream_reports_the_approval(jp_fetch, jp_root_dir):
    (jp_root_dir / "lab").mkdir()
    await set_policy(jp_fetch, "lab", "folder", preset="ask-running")
    await pending(jp_fetch)
    lines: list[dict[str, Any]] = []

    def chunk(data: bytes) -> None:
        lines.extend(json.loads(line) for line in data.decode().splitlines() if line)

    call = jp_fetch(
        "api",
        "xcsh",
        "python",
        method="POST",
        body=json.dumps({"cwd": "lab", "cells": [{"code": "1"}]}),
        headers={"Accept": "application/x-ndjson"},
        streaming_callback=chunk,
        request_timeout=180,
    )
    _, asked = await asyncio.gather(call, answer_next(jp_fetch, "deny", "no"))
    first = lines[0]
    assert first["type"] == "status" and first["event"]["op"] == "approval"
    assert first["event"]["approval"]["id"] == asked["id"]
    assert lines[-1]["type"] == "error" and lines[-1]["reason"] == "approval_denied"


async def test_a_waiting_mcp_call_sends_progress(jp_fetch, jp_root_dir):
    (jp_root_dir / "lab").mkdir()
    await set_policy(jp_fetch, "lab", "folder", preset="ask-running")
    await pending(jp_fetch)
    call = stream_call(
        jp_fetch, "python", {"cwd": "lab", "cells": [{"code": "1"}]}, progress_token="p"
    )
    (_, messages), _ = await asyncio.gather(call, answer_next(jp_fetch, "deny", "no"))
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert any("approval" in m["params"]["message"] for m in progress), messages
    assert messages[-1]["result"]["isError"] is True


async def test_asks_answers_and_refusals_are_in_the_activity_history(jp_fetch, jp_root_dir):
    (jp_root_dir / "lab").mkdir()
    await set_policy(jp_fetch, "lab", "folder", classes={"python": "ask", "edit": "deny"})
    await pending(jp_fetch)
    python = tool(jp_fetch, "rest", "python")
    await asyncio.gather(
        python({"cwd": "lab", "cells": [{"code": "1"}]}), answer_next(jp_fetch, "deny", "why")
    )
    await tool(jp_fetch, "rest", "files")({"action": "mkdir", "path": "lab/sub"})
    kinds: list[str] = []
    for _ in range(100):
        _, page = await fetch_json(
            jp_fetch, "api", "xcsh", "activity", spec_path="/api/xcsh/activity"
        )
        events = [e for entry in page["entries"] for e in entry["events"]]
        kinds = [e["kind"] for e in events if e.get("schema_id", "").endswith("approval/v1")]
        if len(kinds) >= 3:
            break
        await asyncio.sleep(0.1)
    assert kinds == ["asked", "answered", "refused"], page
    answered = next(e for e in events if e.get("kind") == "answered")
    assert answered["decision"] == "deny" and answered["reason"] == "why"


@pytest.mark.slow
async def test_a_run_waiting_for_approval_is_a_working_task_that_says_so(jp_fetch, jp_root_dir):
    # MCP 2026 with the Tasks extension: the run outlives its request while the person decides;
    # its task is ``working`` (the answer is the person's, not the client's), its status message
    # names the wait, and the approval lets it complete.
    from tests.api.mcp.test_mcp_tasks import call, task, until

    write(jp_root_dir / "a.ipynb", *THREE, tagged=(1,))
    await pending(jp_fetch)
    arguments = {"action": "run", "notebook_path": "a.ipynb", "all": True}
    created = await call(jp_fetch, "notebook", arguments)
    assert created["resultType"] == "task", created
    approval = (await asked(jp_fetch))[0]
    state = await task(jp_fetch, "tasks/get", created["taskId"])
    assert state["status"] == "working", state
    assert "waiting for the person's approval" in state["statusMessage"], state
    assert "ask-before-run" in state["statusMessage"], state

    status, body = await answer(jp_fetch, approval["id"], "allow-once")
    assert status == 200, body
    done = await until(jp_fetch, created["taskId"], "completed")
    assert done["result"]["isError"] is False, done
    assert outputs(jp_root_dir / "a.ipynb") == ["one\n", "two\n", "three\n"]

"""Runs in place never harm the person's work: queued cells, interrupts, rights, events."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import datetime

import pytest
from traitlets.config import Config

from tests.support.inplace import (
    call_run,
    run_ok,
    sessions,
    shared_with_a_person,
    wait_until,
    write_notebook,
)

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
async def test_a_cell_queued_behind_someone_elses_request_is_never_interrupted(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "queued.ipynb"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "print('agent')")
    try:
        # A widget-like message whose handler works for 4 s on the shell channel: not an
        # execution, so the run sends its cell, which queues behind it in the kernel.
        setup = (
            "import comm, time\n"
            "def slow(c, msg):\n"
            "    global handled\n"
            "    time.sleep(4)\n"
            "    handled = True\n"
            "comm.get_comm_manager().register_target('slow', slow)"
        )
        assert (await other.run(setup))["status"] == "ok"
        client = other.client
        opened = client.session.msg(
            "comm_open", {"comm_id": uuid.uuid4().hex, "target_name": "slow", "data": {}}
        )
        client.shell_channel.send(opened)
        await other.wait_for(opened["header"]["msg_id"], "busy")

        result = await run_ok(jp_fetch, notebook_path="queued.ipynb", cell_index=0, timeout=2)

        assert result["timedOut"] is True
        assert "still queued in the kernel" in result["text"]
        assert result["cells"][0]["exitCode"] is None
        # The handler was not interrupted, and the cell ran after it: its outputs are written.
        await other.wait_for(opened["header"]["msg_id"], "idle")
        assert (await other.run("assert handled"))["status"] == "ok"

        def written():
            try:
                cell = json.loads(path.read_text())["cells"][0]
            except ValueError:
                return False  # read while the contents manager rewrites it in place
            return cell["execution_count"] == 3 and cell["outputs"]  # after the setup (2)

        await wait_until(written)
    finally:
        other.close()


async def test_interrupting_a_run_by_its_call_id_stops_its_running_cell(jp_fetch, jp_root_dir):
    path = jp_root_dir / "i.ipynb"
    write_notebook(
        path, "x = 5", "import time\nprint('asleep', flush=True)\ntime.sleep(60)", "print(x)"
    )
    lines: list[dict] = []
    buffer = bytearray()

    def received(chunk: bytes) -> None:
        buffer.extend(chunk)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            lines.append(json.loads(line))

    response = asyncio.ensure_future(
        jp_fetch(
            "api",
            "xcsh",
            "notebook",
            "run",
            method="POST",
            body=json.dumps({"notebook_path": "i.ipynb", "all": True, "timeout": 120}),
            headers={"Accept": "application/x-ndjson"},
            streaming_callback=received,
            request_timeout=180,
        )
    )
    # The cell's own output: the kernel is in it (a "running" status alone may come before).
    await wait_until(lambda: any(ln["type"] == "chunk" and ln["index"] == 1 for ln in lines))
    call_id = lines[0]["callId"]

    answer = await jp_fetch("api", "xcsh", "calls", call_id, "interrupt", method="POST", body="")
    await response

    assert json.loads(answer.body) == {"interrupted": True}
    result = lines[-1]["result"]
    assert result["cancelled"] is True and result["timedOut"] is False
    assert [c["status"] for c in result["cells"]] == ["complete", "error", "pending"]
    assert "KeyboardInterrupt" in result["cells"][1]["output"]
    assert (await run_ok(jp_fetch, notebook_path="i.ipynb", cell_index=2))["text"] == "5"


async def test_run_events_tell_the_lab_what_runs_and_what_was_written(
    jp_fetch, jp_root_dir, run_events
):
    path = jp_root_dir / "ev.ipynb"
    write_notebook(path, "print('out')")

    result = await run_ok(jp_fetch, notebook_path="ev.ipynb", all=True)

    await wait_until(lambda: any(e["event"] == "finished" for e in run_events))
    assert {e["callId"] for e in run_events} == {result["callId"]}
    assert all(e["path"] == "ev.ipynb" for e in run_events)
    started = next(e for e in run_events if e["event"] == "started")
    assert started["cells"] == [
        {"index": 0, "title": "cell 0", "code": "print('out')", "cellId": "c0"}
    ]
    final = [e for e in run_events if e["event"] == "outputs" and e["final"]]
    assert len(final) == 1
    assert final[0]["cellId"] == "c0" and final[0]["executionCount"] == 1
    assert final[0]["outputs"] == [{"name": "stdout", "output_type": "stream", "text": "out\n"}]
    model = json.loads(
        (await jp_fetch("api", "contents", "ev.ipynb", params={"content": "0"})).body
    )
    assert datetime.fromisoformat(final[0]["lastModified"]) == datetime.fromisoformat(
        model["last_modified"]
    )
    assert [e["status"] for e in run_events if e["event"] == "cell"] == ["running", "complete"]


async def test_run_events_number_cells_by_their_position_in_the_run_to_the_end(
    jp_fetch, jp_root_dir, run_events
):
    write_notebook(jp_root_dir / "pos.ipynb", "a = 0", "b = 1", "c = 2")

    await run_ok(jp_fetch, notebook_path="pos.ipynb", cell_index=2)

    await wait_until(lambda: any(e["event"] == "finished" for e in run_events))
    started = next(e for e in run_events if e["event"] == "started")
    finished = next(e for e in run_events if e["event"] == "finished")
    assert [c["index"] for c in started["cells"]] == [0]
    assert [c["index"] for c in finished["result"]["cells"]] == [0]


@pytest.fixture
def jp_server_config(jp_server_config, request):
    config = Config(jp_server_config)
    authorizer = getattr(request, "param", None)
    if authorizer is not None:
        config.ServerApp.authorizer_class = authorizer
    return config


@pytest.mark.parametrize(
    ("jp_server_config", "message"),
    [
        (
            "tests.support.fakes.DenyWritesAuthorizer",
            "User is not authorized to write on resource: contents.",
        ),
        (
            "tests.support.fakes.DenyExecuteAuthorizer",
            "User is not authorized to execute on resource: kernels.",
        ),
    ],
    indirect=["jp_server_config"],
)
async def test_a_caller_needs_write_on_contents_and_execute_on_kernels(
    jp_fetch, jp_root_dir, message
):
    before = write_notebook(jp_root_dir / "auth.ipynb", "print(1)")

    code, answer = await call_run(jp_fetch, {"notebook_path": "auth.ipynb", "all": True})

    assert (code, answer["message"]) == (403, message)
    assert (jp_root_dir / "auth.ipynb").read_text() == before
    assert await sessions(jp_fetch) == []


async def test_a_run_cancelled_while_the_kernel_is_busy_ends_at_once_and_sends_nothing(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "wait.ipynb"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "print('agent')")
    lines: list[dict] = []
    try:
        await other.execute("import time; time.sleep(60)")  # the person's cell
        response = asyncio.ensure_future(
            jp_fetch(
                "api",
                "xcsh",
                "notebook",
                "run",
                method="POST",
                body=json.dumps({"notebook_path": "wait.ipynb", "cell_index": 0, "timeout": 120}),
                headers={"Accept": "application/x-ndjson"},
                streaming_callback=lambda chunk: lines.extend(
                    json.loads(line) for line in chunk.decode().splitlines() if line
                ),
                request_timeout=180,
            )
        )
        await wait_until(lambda: bool(lines))
        await jp_fetch(
            "api", "xcsh", "calls", lines[0]["callId"], "interrupt", method="POST", body=""
        )
        await response
        result = lines[-1]["result"]
        # The run ended while the person's cell still runs (60 s): it waited, then gave up.
        person_running = jp_serverapp.kernel_manager.get_kernel(other.kernel_id).execution_state
        assert person_running == "busy"
    finally:
        await jp_serverapp.kernel_manager.interrupt_kernel(other.kernel_id)
        other.close()

    assert result["cancelled"] is True and result["timedOut"] is False
    assert result["cells"][0]["status"] == "pending"
    assert result["text"] == "[Command cancelled]"
    # The agent's cell was not run again: the count is still that of the first run.
    assert json.loads(path.read_text())["cells"][0]["execution_count"] == 1

"""The python tool's ``notebook_path``: scratch code on a notebook's own kernel, no cell added
(docs/developers/contract.md §5.12), with the busy and queue rules of runs in place, real kernels.
"""

from __future__ import annotations

import asyncio
import time

import nbformat
import pytest
from traitlets.config import Config

from jupyter_xcsh.execution.inplace.executed import ExecutionLog
from tests.support.inplace import OtherClient, call_run, run_ok, sessions, write_notebook
from tests.support.mcp_client import TRANSPORTS
from tests.support.python_tool import tool

pytestmark = pytest.mark.timeout(300)


def stored(path):
    """The notebook as saved, validated against its nbformat schema."""
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


async def scratch(jp_fetch, path, *codes, transport="rest", **options):
    """Run ``codes`` on the kernel of notebook ``path``; ``(status, body)``."""
    call = tool(jp_fetch, transport)
    return await call({"cells": [{"code": c} for c in codes], "notebook_path": path, **options})


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_scratch_code_sees_the_notebooks_variables_and_adds_nothing(
    jp_fetch, jp_root_dir, transport
):
    path = jp_root_dir / "n.ipynb"
    write_notebook(path, "units = [20, 22]")
    first = await run_ok(jp_fetch, notebook_path="n.ipynb", cell_index=0)
    before = path.read_bytes()

    status, result = await scratch(jp_fetch, "n.ipynb", "sum(units)", transport=transport)

    assert status == 200, result
    assert result["text"] == "42" and result["isError"] is False
    assert result["session"] is None and result["stateLost"] is False
    assert result["kernel"] == {**first["kernel"], "started": False}
    assert result["notebook"] == {"path": "n.ipynb"}
    assert [(c["index"], c["status"]) for c in result["cells"]] == [(0, "complete")]
    assert path.read_bytes() == before  # no cell added, no output written
    # No execution count taken: the notebook's next run is [2], as if nothing had run.
    status, counted = await scratch(
        jp_fetch, "n.ipynb", "get_ipython().execution_count", "len(In)", transport=transport
    )
    assert counted["cells"][0]["output"] == "2\n" and counted["cells"][1]["output"] == "2\n"
    again = await run_ok(jp_fetch, notebook_path="n.ipynb", cell_index=0)
    assert again["cells"][0]["executionCount"] == 2


async def test_a_notebook_without_a_kernel_gets_the_one_a_run_would_start(jp_fetch, jp_root_dir):
    path = jp_root_dir / "work" / "fresh.ipynb"
    before = write_notebook(path, "x = 1")

    status, result = await scratch(jp_fetch, "work/fresh.ipynb", "import os\nprint(os.getcwd())")

    assert status == 200, result
    assert result["text"] == str(jp_root_dir / "work")  # in the notebook's folder
    assert result["kernel"]["started"] is True
    listed = await sessions(jp_fetch)
    assert [(s["path"], s["type"], s["kernel"]["id"]) for s in listed] == [
        ("work/fresh.ipynb", "notebook", result["kernel"]["id"])
    ]
    assert path.read_text(encoding="utf-8") == before
    # The run in place then uses that kernel, with what the scratch code left in it.
    ran = await run_ok(jp_fetch, notebook_path="work/fresh.ipynb", cell_index=0)
    assert ran["kernel"]["id"] == result["kernel"]["id"] and ran["kernel"]["started"] is False


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_notebook_path_refuses_what_does_not_go_with_it(jp_fetch, jp_root_dir, transport):
    write_notebook(jp_root_dir / "n.ipynb", "x = 1")
    cases = [
        (
            {"session": "s", "mode": "session"},
            400,
            "notebook_path runs the cells on the notebook's own kernel: not with session, mode",
        ),
        (
            {"reset": True, "cwd": "", "kernel_name": "python3"},
            400,
            "notebook_path runs the cells on the notebook's own kernel: not with reset, cwd, "
            "kernel_name",
        ),
        ({"notebook_path": "missing.ipynb"}, 404, "Notebook not found: missing.ipynb"),
        ({"notebook_path": ".hidden.ipynb"}, 404, "Notebook not found: .hidden.ipynb"),
        ({"notebook_path": "../out.ipynb"}, 403, None),
        ({"notebook_path": ""}, 400, "notebook_path must be a non-empty string"),
    ]
    for options, code, message in cases:
        options = {"notebook_path": "n.ipynb", **options}
        status, result = await scratch(jp_fetch, options.pop("notebook_path"), "1", **options)
        assert status == code, (options, result)
        if message is not None:
            assert result["message"] == message
    assert await sessions(jp_fetch) == []  # nothing ran anywhere


@pytest.mark.slow
async def test_scratch_code_waits_behind_a_persons_cell_and_never_interrupts_it(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "busy.ipynb"
    write_notebook(path, "done = []")
    first = await run_ok(jp_fetch, notebook_path="busy.ipynb", cell_index=0)
    person = OtherClient(jp_serverapp, first["kernel"]["id"])
    try:
        await person.ready()
        # A person's cell runs 3 s; a scratch call of 1 s gives up without sending anything.
        running = await person.execute("import time; time.sleep(3); done.append('person')")
        status, busy = await scratch(jp_fetch, "busy.ipynb", "done.append('scratch')", timeout=1)
        assert status == 200 and busy["timedOut"] is True, busy
        assert busy["text"].startswith("[Kernel busy: nothing was run within 1 seconds]")
        # One with time enough waits for the person's cell to end, then runs.
        started = time.monotonic()
        status, waited = await scratch(jp_fetch, "busy.ipynb", "print(done)", timeout=60)
        assert status == 200 and waited["text"] == "['person']", waited
        assert time.monotonic() - started > 0.5  # it waited for the sleep
        reply = await person.reply(running)
        assert reply["status"] == "ok"  # the person's cell was never interrupted
    finally:
        person.close()


async def test_scratch_code_is_refused_while_a_run_of_the_notebook_waits_for_input(
    jp_fetch, jp_root_dir
):
    write_notebook(jp_root_dir / "ask.ipynb", "name = input('name? ')")
    waiting = await run_ok(jp_fetch, notebook_path="ask.ipynb", cell_index=0, stdin="ask")
    assert "awaitingInput" in waiting

    status, refused = await scratch(jp_fetch, "ask.ipynb", "1 + 1")

    assert status == 409
    assert refused["message"].startswith(
        f"Session ask.ipynb is waiting for input: run {waiting['callId']}"
    )


@pytest.mark.slow
async def test_scratch_and_runs_of_one_notebook_take_turns(jp_fetch, jp_root_dir):
    write_notebook(
        jp_root_dir / "q.ipynb", "import time\nlog = []", "time.sleep(1.5); log.append('run')"
    )
    await run_ok(jp_fetch, notebook_path="q.ipynb", cell_index=0)

    run = asyncio.ensure_future(call_run(jp_fetch, {"notebook_path": "q.ipynb", "cell_index": 1}))
    await asyncio.sleep(0.3)  # the run holds the notebook's turn
    status, result = await scratch(jp_fetch, "q.ipynb", "log.append('scratch'); print(log)")

    assert status == 200 and result["text"] == "['run', 'scratch']", result
    assert (await run)[0] == 200


def test_the_kernels_log_records_no_count_for_scratch_code():
    log = ExecutionLog()
    log.uncounted.add("s1")

    def message(kind, parent, **content):
        return {"msg_type": kind, "parent_header": {"msg_id": parent}, "content": content}

    log.on_iopub(message("execute_input", "c1", code="x = 1", execution_count=1))
    log.on_iopub(message("status", "c1", execution_state="idle"))
    log.on_iopub(message("execute_input", "s1", code="x + 1", execution_count=2))

    assert log.running is not None and log.running.execution_count is None
    assert log.code_of(2) is None and log.last_count == 1
    log.on_iopub(message("status", "s1", execution_state="idle"))
    assert log.uncounted == set() and log.running is None


class TestDenyingContentsWrites:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyContentsWritesAuthorizer"
        return config

    async def test_scratch_code_needs_what_a_run_in_place_needs(self, jp_fetch, jp_root_dir):
        write_notebook(jp_root_dir / "n.ipynb", "x = 1")

        status, result = await scratch(jp_fetch, "n.ipynb", "1")

        assert status == 403
        assert result["message"] == "User is not authorized to write on resource: contents."

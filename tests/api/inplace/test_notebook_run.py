"""Running notebook cells in place on a real server and kernels (docs/developers/contract.md §6)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import uuid

import nbformat
import pytest
from traitlets.config import Config

from jupyter_xcsh.execution.kernel.stdin import stdin_notice
from jupyter_xcsh.notebook.model import revision_of
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from jupyter_xcsh.outputs.sizes import format_size
from tests.support.images import KERNEL_HELPERS
from tests.support.inplace import (
    OtherClient,
    call_run,
    markdown,
    run_ok,
    sessions,
    shared_with_a_person,
    wait_until,
    write_notebook,
)
from tests.support.notebooks import cell_texts

pytestmark = pytest.mark.timeout(300)


def stored(path):
    """The notebook as saved, validated against the nbformat schema."""
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


def _status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def texts(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.slow
async def test_a_notebook_without_a_session_runs_in_a_new_lab_style_session(jp_fetch, jp_root_dir):
    path = jp_root_dir / "work" / "three.ipynb"
    before = write_notebook(
        path,
        "import os\nx = 20\nprint(os.getcwd())\n"
        "print('PI_SESSION_FILE' in os.environ, 'ARTIFACTS' in os.environ, 'status' in dir())",
        markdown("# Notes", "m1"),
        "x + 22",
    )

    result = await run_ok(jp_fetch, notebook_path="work/three.ipynb", all=True)

    assert result["isError"] is False
    assert [c["status"] for c in result["cells"]] == ["complete", "skipped", "complete"]
    assert result["cells"][1]["skipReason"] == "markdown cell"
    assert result["kernel"]["started"] is True
    assert result["notebook"] == {
        "path": "work/three.ipynb",
        "via": "file",
        "revision": revision_of(NotebookDocument.parse(path.read_text())),
        "totalCells": 3,
    }
    nb = stored(path)
    first, last = nb.cells[0], nb.cells[2]
    # The kernel runs in the notebook's folder, with nothing of the python tool's prelude.
    assert texts(first) == f"{jp_root_dir / 'work'}\nFalse False False\n"
    assert first.execution_count == 1 and last.execution_count == 2
    assert last.outputs[0]["data"]["text/plain"] == "42"
    assert last.outputs[0]["execution_count"] == 2
    assert [c["executionCount"] for c in result["cells"]] == [1, None, 2]
    assert [c["outputsWritten"] for c in result["cells"]] == [True, False, True]
    # The markdown cell and everything around the cells kept their exact bytes.
    new = NotebookDocument.parse(path.read_text())
    assert cell_texts(path.read_text())[1] == cell_texts(before)[1]
    assert new.dumps().split('"cells": [')[0] == before.split('"cells": [')[0]
    assert new.dumps().rsplit("\n ],", 1)[1] == before.rsplit("\n ],", 1)[1]
    # The session is the one the lab would have made, so the lab adopts its kernel.
    [session] = await sessions(jp_fetch)
    assert (session["path"], session["name"], session["type"]) == (
        "work/three.ipynb",
        "three.ipynb",
        "notebook",
    )
    assert session["kernel"]["id"] == result["kernel"]["id"]
    # nbconvert renders what was stored.
    html = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--stdout", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "42" in html and str(jp_root_dir / "work") in html


async def test_only_the_run_cells_outputs_and_counts_change_in_the_file(jp_fetch, jp_root_dir):
    path = jp_root_dir / "a.ipynb"
    before = write_notebook(path, "a = 1", "print('two')", "print('three')")

    await run_ok(jp_fetch, notebook_path="a.ipynb", cell_index=1)

    old, new = cell_texts(before), cell_texts(path.read_text())
    assert new[0] == old[0]
    assert new[2] == old[2]
    changed = json.loads(new[1])
    assert changed["outputs"] == [{"name": "stdout", "output_type": "stream", "text": ["two\n"]}]
    assert changed["execution_count"] == 1
    assert {k: v for k, v in changed.items() if k not in ("outputs", "execution_count")} == {
        k: v for k, v in json.loads(old[1]).items() if k not in ("outputs", "execution_count")
    }


@pytest.mark.parametrize("renamed", [False, True], ids=["placeholder", "patched"])
async def test_the_labs_session_is_used_before_and_after_its_path_is_patched(
    jp_fetch, jp_root_dir, jp_serverapp, renamed
):
    write_notebook(jp_root_dir / "lab" / "nb.ipynb", "print(secret)")
    # As JupyterLab's SessionContext: a session at <dir>/<uuid>, then PATCHed to the real path.
    body = {
        "path": f"lab/{uuid.uuid4()}",
        "type": "notebook",
        "name": "nb.ipynb",
        "kernel": {"name": "python3"},
    }
    session = json.loads(
        (await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))).body
    )
    if renamed:
        await jp_fetch(
            "api",
            "sessions",
            session["id"],
            method="PATCH",
            body=json.dumps({"path": "lab/nb.ipynb"}),
        )
    other = OtherClient(jp_serverapp, session["kernel"]["id"])
    try:
        await other.ready()
        assert (await other.run("secret = 'from the person'"))["status"] == "ok"

        result = await run_ok(jp_fetch, notebook_path="lab/nb.ipynb", cell_id="c0")
    finally:
        other.close()

    assert result["text"] == "from the person"
    assert result["kernel"] == {
        "id": session["kernel"]["id"],
        "name": "python3",
        "sessionId": session["id"],
        "started": False,
    }
    assert len(await sessions(jp_fetch)) == 1


@pytest.mark.slow
async def test_each_notebook_finds_its_own_session_and_one_whose_kernel_died_is_replaced(
    jp_fetch, jp_root_dir, jp_serverapp
):
    for name in ("a", "b"):
        write_notebook(jp_root_dir / f"{name}.ipynb", f"import os\nname = {name!r}\nos.getpid()")
    first = {}
    for name in ("a", "b"):
        result = await run_ok(jp_fetch, notebook_path=f"{name}.ipynb", cell_index=0)
        assert result["kernel"]["started"] is True
        first[name] = result["kernel"]
    for name in ("b", "a"):  # each run finds its notebook's session among the others
        again = await run_ok(jp_fetch, notebook_path=f"{name}.ipynb", cell_index=0)
        assert again["kernel"] == {**first[name], "started": False}

    # The kernel of a's session dies behind the session manager's back (as a culled kernel):
    # the session is stale, and a run replaces it with a new lab-style session and kernel.
    await jp_serverapp.kernel_manager.shutdown_kernel(first["a"]["id"], now=True)
    result = await run_ok(jp_fetch, notebook_path="a.ipynb", cell_index=0)

    assert result["kernel"]["started"] is True
    assert result["kernel"]["id"] not in (first["a"]["id"], first["b"]["id"])
    by_path = {s["path"]: s for s in await sessions(jp_fetch)}
    assert sorted(by_path) == ["a.ipynb", "b.ipynb"]
    assert by_path["a.ipynb"]["kernel"]["id"] == result["kernel"]["id"]
    assert by_path["b.ipynb"]["kernel"]["id"] == first["b"]["id"]


async def test_with_two_sessions_at_one_path_the_run_uses_the_one_the_lab_finds(
    jp_fetch, jp_root_dir, jp_serverapp
):
    write_notebook(jp_root_dir / "twice.ipynb", "import os\nos.getpid()")
    first = await run_ok(jp_fetch, notebook_path="twice.ipynb", cell_index=0)
    # A second session at the same path (the sessions API would return the first instead).
    second = await jp_serverapp.session_manager.create_session(
        path="twice.ipynb", name="twice.ipynb", type="notebook", kernel_name="python3"
    )
    assert second["kernel"]["id"] != first["kernel"]["id"]

    again = await run_ok(jp_fetch, notebook_path="twice.ipynb", cell_index=0)

    # The first listed at the path: what the lab's findByPath and POST /api/sessions take.
    listed = [s for s in await sessions(jp_fetch) if s["path"] == "twice.ipynb"]
    assert [s["kernel"]["id"] for s in listed] == [first["kernel"]["id"], second["kernel"]["id"]]
    assert again["kernel"] == {**first["kernel"], "started": False}


@pytest.mark.slow
async def test_a_busy_kernel_is_waited_for_and_never_interrupted(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "busy.ipynb"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "print('agent ran')")
    try:
        # The person's cell runs for 5 s (sent by another client, as the lab does).
        person = await other.execute("import time; time.sleep(5); person = 'done'")

        short = await run_ok(jp_fetch, notebook_path="busy.ipynb", cell_index=0, timeout=2)
        long = await run_ok(jp_fetch, notebook_path="busy.ipynb", cell_index=0, timeout=10)

        assert (await other.reply(person))["status"] == "ok"  # not interrupted
    finally:
        other.close()
    assert short["timedOut"] is True and short["isError"] is True
    assert short["text"] == "[Kernel busy: nothing was run within 2 seconds]"
    assert short["cells"][0]["status"] == "pending"
    assert short["cells"][0]["outputsWritten"] is False
    assert long["isError"] is False and long["text"] == "agent ran"
    # Counts: the agent's first run (1), the person's cell (2), the long run (3).
    assert long["cells"][0]["executionCount"] == 3
    assert stored(path).cells[0].execution_count == 3


@pytest.mark.slow
async def test_a_timeout_interrupts_only_the_runs_own_cell_and_keeps_the_kernel(
    jp_fetch, jp_root_dir
):
    write_notebook(jp_root_dir / "t.ipynb", "kept = 7", "import time\ntime.sleep(60)", "kept")
    # The kernel first (its start counts against a run's timeout: on a loaded machine 3 s).
    await run_ok(jp_fetch, notebook_path="t.ipynb", cell_index=0)

    result = await run_ok(jp_fetch, notebook_path="t.ipynb", all=True, timeout=3)
    after = await run_ok(jp_fetch, notebook_path="t.ipynb", cell_index=2)

    assert result["timedOut"] is True
    assert [c["status"] for c in result["cells"]] == ["complete", "error", "pending"]
    assert result["cells"][1]["exitCode"] is None
    assert result["text"].startswith("[Command timed out after")
    assert "KeyboardInterrupt" in result["cells"][1]["output"]
    assert after["text"] == "7"  # the same kernel, its state kept
    assert after["kernel"]["id"] == result["kernel"]["id"]


async def test_clear_output_loops_and_updated_displays_store_their_final_state(
    jp_fetch, jp_root_dir
):
    path = jp_root_dir / "progress.ipynb"
    write_notebook(
        path,
        "from IPython.display import clear_output\n"
        "for i in range(20):\n    clear_output(wait=True)\n    print(f'step {i}')",
        "from IPython.display import display\n"
        "h = display('first', display_id=True)\nh.update('second')",
        "h.update('third')",
    )

    await run_ok(jp_fetch, notebook_path="progress.ipynb", all=True)

    nb = stored(path)
    assert nb.cells[0].outputs == [{"name": "stdout", "output_type": "stream", "text": "step 19\n"}]
    [shown] = nb.cells[1].outputs
    assert shown["output_type"] == "display_data"
    assert shown["data"]["text/plain"] == "'third'"  # updated by a later cell of the run
    assert "transient" not in shown
    assert nb.cells[2].outputs == []


@pytest.mark.slow
async def test_huge_output_is_stored_as_its_tail_and_kept_whole_in_an_artifact(
    jp_fetch, jp_root_dir
):
    path = jp_root_dir / "big.ipynb"
    # 200 MiB of numbered 1 KiB lines, sent in 1 MiB messages at most 50 MiB/s. (A kernel
    # that outpaces the server queues messages in ZMQ's receive buffer, whoever the client:
    # that is the socket's high-water mark at work, not output the server keeps.)
    big = (
        "import sys, time\n"
        "for i in range(200 * 1024):\n"
        "    sys.stdout.write(f'{i:09d}' + 'x' * 1014 + '\\n')\n"
        "    if i % 1024 == 1023:\n"
        "        sys.stdout.flush()\n"
        "        time.sleep(0.02)"
    )
    write_notebook(path, "print('warm')", big)
    assert (await run_ok(jp_fetch, notebook_path="big.ipynb", cell_index=0))["isError"] is False
    # The server runs in this process: reset its peak resident size (VmHWM), then compare
    # the peak during the run with the size before it.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before_kib = _status_kib("VmRSS")

    result = await run_ok(jp_fetch, notebook_path="big.ipynb", cell_index=1, timeout=600)

    peak_kib = _status_kib("VmHWM")
    assert result["isError"] is False, result["text"][-500:]
    assert result["truncated"] is True
    assert result["totalBytes"] == 200 * 1024 * 1024
    artifact = jp_root_dir / result["artifactPath"]
    assert artifact.stat().st_size == 200 * 1024 * 1024
    with open(artifact, "rb") as f:
        assert f.readline().startswith(b"000000000x")
        f.seek(-1024, os.SEEK_END)
        assert f.read().startswith(b"000204799x")
    [notice, tail] = stored(path).cells[1].outputs
    assert f"artifact://{result['artifactId']}" in notice["data"]["text/plain"]
    assert len(tail["text"].encode()) <= 262144
    assert tail["text"].endswith("x\n") and "000204799" in tail["text"]
    assert path.stat().st_size < 300 * 1024
    # The server did not hold the output: its peak grew by a few MiB, not by the 200 printed.
    assert peak_kib - before_kib < 32 * 1024, (before_kib, peak_kib)


@pytest.mark.slow
async def test_a_cell_deleted_while_it_runs_gets_nothing_written(
    jp_fetch, jp_root_dir, notebook_tool
):
    path = jp_root_dir / "del.ipynb"
    write_notebook(
        path, "import time\nopen('started', 'w').close()\ntime.sleep(3)\nprint('done')", "print(1)"
    )
    run = asyncio.ensure_future(run_ok(jp_fetch, notebook_path="del.ipynb", all=True))
    # Once the first cell runs (it sleeps 3 s), delete it and the next one.
    await wait_until((jp_root_dir / "started").exists)
    for _ in range(2):
        status, _ = await notebook_tool(
            {"action": "delete", "notebook_path": "del.ipynb", "cell_index": 0}
        )
        assert status == 200

    result = await run

    assert [c["outputsWritten"] for c in result["cells"]] == [False, False]
    assert result["cells"][0]["output"] == "done\n"
    assert (result["cells"][1]["status"], result["cells"][1]["skipReason"]) == (
        "skipped",
        "deleted",
    )
    assert stored(path).cells == []


@pytest.mark.slow
async def test_a_kernel_dying_mid_run_loses_state_and_nothing_is_rerun(
    jp_fetch, jp_root_dir, jp_serverapp
):
    marker = jp_root_dir / "ran.txt"
    write_notebook(
        jp_root_dir / "die.ipynb",
        "with open('ran.txt', 'a') as f:\n    f.write('once\\n')",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        "print('never')",
    )

    result = await run_ok(jp_fetch, notebook_path="die.ipynb", all=True, timeout=60)

    assert result["stateLost"] is True and result["isError"] is True
    assert [c["status"] for c in result["cells"]] == ["complete", "error", "pending"]
    assert marker.read_text() == "once\n"
    assert "Nothing was re-run" in result["text"]
    # The server's restarter brings the kernel back: let it finish before the server stops
    # (jupyter_client 8.0's shutdown fails on a kernel still restarting, leaving it running).
    kernels = jp_serverapp.kernel_manager
    kernel_id = result["kernel"]["id"]

    def restarted():
        if kernel_id not in kernels:
            return True
        kernel = kernels.get_kernel(kernel_id)
        process = getattr(kernel.provisioner, "process", None)  # the killed one until restarted
        return kernel.ready.done() and process is not None and process.poll() is None

    await wait_until(restarted)


@pytest.mark.slow
async def test_sources_are_read_when_each_cell_is_sent(jp_fetch, jp_root_dir, notebook_tool):
    write_notebook(
        jp_root_dir / "edit.ipynb",
        "import time\nopen('started', 'w').close()\ntime.sleep(2)",
        "print('old')",
    )
    run = asyncio.ensure_future(run_ok(jp_fetch, notebook_path="edit.ipynb", all=True))
    # While the first cell runs (it sleeps 2 s), the person edits the second.
    await wait_until((jp_root_dir / "started").exists)
    status, _ = await notebook_tool(
        {
            "action": "edit",
            "notebook_path": "edit.ipynb",
            "cell_index": 1,
            "content": "print('new')",
        }
    )
    assert status == 200

    result = await run

    assert result["cells"][1]["output"] == "new\n"
    assert texts(stored(jp_root_dir / "edit.ipynb").cells[1]) == "new\n"


async def test_concurrent_runs_of_one_notebook_queue_in_order(jp_fetch, jp_root_dir):
    write_notebook(
        jp_root_dir / "q.ipynb",
        "import time\nopen('started', 'w').close()\ntime.sleep(1)\nn = 1",
        "n += 1\nn",
    )

    # Two requests sent at once may reach the server in either order: the second is sent once
    # the first runs (its first cell sleeps 1 s), so it must queue behind the whole first run.
    first_run = asyncio.ensure_future(run_ok(jp_fetch, notebook_path="q.ipynb", all=True))
    await wait_until((jp_root_dir / "started").exists)
    second = await run_ok(jp_fetch, notebook_path="q.ipynb", cell_index=1)
    first = await first_run

    assert first["text"].endswith("2")
    assert second["text"] == "3"
    assert second["kernel"]["id"] == first["kernel"]["id"]
    assert len(await sessions(jp_fetch)) == 1


async def test_a_streamed_run_reports_progress_then_the_result(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "s.ipynb", "print('hi')")
    response = await jp_fetch(
        "api",
        "xcsh",
        "notebook",
        "run",
        method="POST",
        body=json.dumps({"notebook_path": "s.ipynb", "all": True}),
        headers={"Accept": "application/x-ndjson"},
        request_timeout=180,
    )
    lines = [json.loads(line) for line in response.body.decode().splitlines()]

    assert lines[0]["type"] == "start"
    assert lines[0]["cells"][0]["cellId"] == "c0"
    assert {"type": "cell", "index": 0, "status": "complete"} in lines
    assert lines[-1]["type"] == "result"
    assert lines[-1]["result"]["text"] == "hi"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"cell_index": 1}, 400, "Cell 1 is not a code cell in v.ipynb"),
        ({"cell_id": "m1"}, 400, "Cell 1 is not a code cell in v.ipynb"),
        ({"cell_index": 5}, 400, "Cell index 5 out of range (0-1) in v.ipynb"),
        ({"cell_id": "nope"}, 404, "Cell id not found: nope in v.ipynb"),
        ({"cell_index": 0, "end_index": 3}, 400, "end_index 3 out of range (1-2) in v.ipynb"),
        (
            {"cell_index": 0, "all": True},
            400,
            "Give exactly one of cell_id, cell_index, cell_ids, cell_index with end_index, "
            "execution_count, all, or stale",
        ),
        (
            {},
            400,
            "Give exactly one of cell_id, cell_index, cell_ids, cell_index with end_index, "
            "execution_count, all, or stale",
        ),
        ({"all": True, "kernel_name": "nope"}, 400, "No such kernel: nope"),
        (
            {"all": True, "expected_source_hash": "0123456789abcdef"},
            400,
            "expected_source_hash needs a single cell (cell_id, or cell_index without "
            "end_index); use expected_revision for several",
        ),
        (
            {"cell_index": 0, "expected_revision": "r1"},
            400,
            "expected_revision must be 16 lowercase hex digits (a revision from an earlier "
            "response), got 'r1'",
        ),
        ({"cell_index": 1.5}, 400, "cell_index must be an integer, got 1.5"),
    ],
)
@pytest.mark.slow
async def test_bad_requests_are_refused_with_an_exact_message_and_nothing_runs(
    jp_fetch, jp_root_dir, body, status, message
):
    before = write_notebook(jp_root_dir / "v.ipynb", "print(1)", markdown("text", "m1"))

    code, answer = await call_run(jp_fetch, {"notebook_path": "v.ipynb", **body})

    assert (code, answer["message"]) == (status, message)
    assert (jp_root_dir / "v.ipynb").read_text() == before
    assert await sessions(jp_fetch) == []


async def test_a_missing_notebook_is_a_404(jp_fetch):
    code, answer = await call_run(jp_fetch, {"notebook_path": "none.ipynb", "all": True})

    assert (code, answer["message"]) == (404, "Notebook not found: none.ipynb")


async def test_a_selection_without_code_cells_starts_no_kernel(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "md.ipynb", markdown("# only text", "m1"))

    result = await run_ok(jp_fetch, notebook_path="md.ipynb", all=True)

    assert result["isError"] is False
    assert result["kernel"] is None
    assert result["text"] == "Cell 0 was not run (markdown cell)"
    assert await sessions(jp_fetch) == []


async def test_without_stop_on_error_later_cells_still_run(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "e.ipynb", "1 / 0", "print('after')")

    stopped = await run_ok(jp_fetch, notebook_path="e.ipynb", all=True)
    going = await run_ok(jp_fetch, notebook_path="e.ipynb", all=True, stop_on_error=False)

    assert [c["status"] for c in stopped["cells"]] == ["error", "pending"]
    assert stopped["text"].endswith(
        "Cell 0 failed (exit code 1). Earlier cells succeeded—their state persists. "
        "Fix only cell 0."
    )
    assert [c["status"] for c in going["cells"]] == ["error", "complete"]
    assert going["cells"][0]["error"]["ename"] == "ZeroDivisionError"
    nb = stored(jp_root_dir / "e.ipynb")
    assert nb.cells[0].outputs[0]["output_type"] == "error"
    assert texts(nb.cells[1]) == "after\n"


async def test_prompts_for_input_are_answered_as_stdin_says_and_never_hang(jp_fetch, jp_root_dir):
    code = "answer = input('name? ')\nprint(repr(answer))"
    write_notebook(jp_root_dir / "in.ipynb", code, "print('after')")

    notice = await run_ok(jp_fetch, notebook_path="in.ipynb", all=True, timeout=60)
    answered = await run_ok(jp_fetch, notebook_path="in.ipynb", all=True, stdin=["Ada"])
    stored_answer = texts(stored(jp_root_dir / "in.ipynb").cells[0])
    eof = await run_ok(jp_fetch, notebook_path="in.ipynb", cell_index=0, stdin="eof")

    # notice (the default): the notice, end-of-file, the cell fails, the run stops.
    assert notice["stdinRequested"] is True
    assert [c["status"] for c in notice["cells"]] == ["error", "pending"]
    assert notice["cells"][0]["output"] == stdin_notice("name? ") + "\n"
    assert notice["text"].startswith(f"[1/2] cell 0\n{stdin_notice('name? ')}\n\nCell 0 failed")
    # answers, in order: the prompt and the answer echoed as a terminal shows them.
    assert answered["isError"] is False
    assert answered["cells"][0]["output"] == "name? Ada\n'Ada'\n"
    assert stored_answer == "'Ada'\n"  # the notebook keeps what the kernel printed
    # eof: EOFError in the code.
    assert eof["cells"][0]["error"]["ename"] == "EOFError"


async def test_a_notebook_deleted_mid_run_ends_the_run_with_a_result(jp_fetch, jp_root_dir):
    path = jp_root_dir / "gone.ipynb"
    write_notebook(path, "import os\nos.remove('gone.ipynb')", "print('never')")

    result = await run_ok(jp_fetch, notebook_path="gone.ipynb", all=True)

    assert result["isError"] is True
    assert [c["status"] for c in result["cells"]] == ["complete", "pending"]
    assert result["cells"][0]["outputsWritten"] is False
    assert result["text"].endswith(
        "Notebook not found: gone.ipynb. The run stopped; earlier cells ran."
    )
    assert not path.exists()


async def test_images_are_budgeted_in_the_result_and_kept_whole_in_the_notebook(
    jp_fetch, jp_root_dir
):
    path = jp_root_dir / "fig.ipynb"
    write_notebook(path, KERNEL_HELPERS, "data = png(64, 48)\nshow(data)")

    result = await run_ok(jp_fetch, notebook_path="fig.ipynb", all=True)

    (image,) = result["images"]
    size = image["bytes"]
    assert (image["width"], image["height"], image["omitted"]) == (64, 48, False)
    assert result["text"].endswith(f"[image 1: 64x48 PNG, {format_size(size)}]")
    artifact = await jp_fetch("api", "xcsh", "artifacts", image["artifactId"])
    assert artifact.headers["Content-Type"] == "image/png"
    [shown] = stored(path).cells[1].outputs
    assert (
        base64.b64decode(shown["data"]["image/png"])
        == artifact.body
        == base64.b64decode(image["data"])
    )


class TestACapOnStoredOutputs:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.run_max_outputs = 2
        return config

    async def test_displays_past_run_max_outputs_leave_a_notice(self, jp_fetch, jp_root_dir):
        path = jp_root_dir / "many.ipynb"
        write_notebook(path, "for i in range(5):\n    display(i)\nprint('done')")

        result = await run_ok(jp_fetch, notebook_path="many.ipynb", cell_index=0)

        assert result["isError"] is False
        outputs = stored(path).cells[0].outputs
        assert [o["data"]["text/plain"] for o in outputs[:2]] == ["0", "1"]
        assert texts(stored(path).cells[0]) == "done\n"
        assert outputs[-1]["data"]["text/plain"].startswith("[3 more output(s) not stored")

"""A run in place asking for input (docs/developers/contract.md §8.2, ``ask``), on real kernels.

The run returns at the prompt with ``awaitingInput`` while the notebook's kernel keeps waiting;
the answer (``POST /api/xcsh/runs/<runId>/input``, the python tool's) lets the run go on to its
end, its outputs written into the notebook as any run's.
"""

from __future__ import annotations

import asyncio

import nbformat
import pytest

from tests.support.inplace import call_run, run_ok, write_notebook
from tests.support.python_tool import answer

pytestmark = pytest.mark.timeout(300)

ASKING = "print('before')\nname = input('name? ')\nprint('hello', name)"


def _stored_text(path, index):
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return "".join(o.get("text", "") for o in nb.cells[index].outputs)


async def test_ask_returns_at_the_prompt_and_the_answer_completes_the_run(
    jp_fetch, jp_root_dir, run_events
):
    path = jp_root_dir / "ask.ipynb"
    write_notebook(path, ASKING, "print('after', name)")

    waiting = await run_ok(jp_fetch, notebook_path="ask.ipynb", all=True, stdin="ask", timeout=60)

    assert waiting["isError"] is False and waiting["stdinRequested"] is True
    run_id = waiting["callId"]
    assert waiting["awaitingInput"] == {"runId": run_id, "prompt": "name? ", "password": False}
    assert [c["status"] for c in waiting["cells"]] == ["running", "pending"]
    assert waiting["cells"][0]["output"] == "before\nname? "
    assert f"POST /api/xcsh/runs/{run_id}/input" in waiting["text"]

    # The notebook's kernel waits for the answer: another run of it is refused at once.
    status, refused = await call_run(jp_fetch, {"notebook_path": "ask.ipynb", "cell_index": 1})
    assert status == 409
    assert refused["message"].startswith(f"Session ask.ipynb is waiting for input: run {run_id}")

    status, done = await answer(jp_fetch, run_id, "bob")

    assert status == 200, done
    assert done["isError"] is False and "awaitingInput" not in done
    assert [c["status"] for c in done["cells"]] == ["complete", "complete"]
    assert done["cells"][0]["output"] == "before\nname? bob\nhello bob\n"
    assert [c["outputsWritten"] for c in done["cells"]] == [True, True]
    assert done["notebook"]["via"] == "file"
    # The outputs are in the notebook: what the kernel printed (the answer is not stored).
    assert _stored_text(path, 0) == "before\nhello bob\n"
    assert _stored_text(path, 1) == "after bob\n"
    # The lab's activity panel sees the prompt (with the run id to answer) and its end.
    inputs = [e["input"] for e in run_events if e["event"] == "input"]
    assert inputs == [
        {"runId": run_id, "prompt": "name? ", "password": False, "state": "waiting"},
        {"state": "answered"},
    ]


@pytest.mark.slow
async def test_the_time_spent_waiting_for_an_answer_is_not_counted(jp_fetch, jp_root_dir):
    path = jp_root_dir / "slow.ipynb"
    write_notebook(path, "x = 1", ASKING)
    await run_ok(jp_fetch, notebook_path="slow.ipynb", cell_index=0)  # the kernel is warm

    waiting = await run_ok(
        jp_fetch, notebook_path="slow.ipynb", cell_index=1, stdin="ask", timeout=2
    )
    # Longer than the whole run's timeout: only waiting for the answer, which is not due.
    await asyncio.sleep(2.5)
    status, done = await answer(jp_fetch, waiting["callId"], "ada")

    assert status == 200 and done["timedOut"] is False, done
    assert done["cells"][0]["status"] == "complete"
    assert _stored_text(path, 1) == "before\nhello ada\n"

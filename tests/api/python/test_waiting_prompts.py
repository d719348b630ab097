"""A prompt left waiting never blocks silently (docs/developers/contract.md §8.3), on real kernels.

A call that finds its session (or notebook) waiting for an answer to another call's
``stdin: "ask"`` prompt is refused with the run's id, the prompt and both ways out in the
tools' own words; the kernel tool's ``status`` says the kernel waits for input, and which run;
and the way out the refusal names (the kernel tool's ``interrupt``) frees the session.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.api.kernel.test_kernel_tool import ok
from tests.support.inplace import call_run, run_ok, write_notebook
from tests.support.mcp_client import call_tool
from tests.support.python_tool import answer, run, tool

pytestmark = pytest.mark.timeout(300)

NAME = "name = input('name? ')\nprint('hello', name)"


def refusal(name, run_id, prompt, *, where, kind="the prompt"):
    """The exact message of a call refused while run ``run_id`` waits (``where``: its target)."""
    answer = json.dumps({"run_id": run_id, "answer": "..."})
    interrupt = json.dumps({"action": "interrupt", **where})
    return (
        f"Session {name} is waiting for input: run {run_id} waits for an answer to {kind} "
        f"{prompt!r}. Answer it with the python tool: {answer}; or end its wait with the kernel "
        f"tool: {interrupt} (over REST: POST /api/xcsh/runs/{run_id}/input "
        f'{{"value": "..."}}, or POST /api/xcsh/calls/{run_id}/interrupt).'
    )


def without_deadline(message):
    """``message`` without its last sentence (the seconds left, which change as it waits)."""
    head, seconds = re.fullmatch(
        r"(.*) Unanswered, it gets end of file in (\d+) seconds\.", message, re.S
    ).groups()
    assert 0 < int(seconds) <= 300
    return head


@pytest.mark.slow
async def test_a_call_on_a_waiting_session_names_the_run_its_prompt_and_the_ways_out(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")
    run_id = waiting["callId"]

    status, body = await tool(jp_fetch)({"cells": [{"code": "1 + 1"}]})

    assert status == 409
    expected = refusal("default", run_id, "name? ", where={"session": "default"})
    assert without_deadline(body["message"]) == expected
    assert body["reason"] == "waiting_for_input"
    assert body["details"] == {
        "runId": run_id,
        "prompt": "name? ",
        "password": False,
        "cellIndex": 0,
        "session": "default",
        "cwd": "",
    }

    # The kernel tool's status says what holds the kernel, and which run.
    status_now = await ok(jp_fetch, action="status", session="default")
    assert f"waiting for input (run {run_id}, prompt 'name? ')" in status_now["text"]
    assert status_now["details"]["running"]["awaitingInput"] == waiting["awaitingInput"]

    # The way out the refusal names frees the session.
    interrupted = await ok(jp_fetch, action="interrupt", session="default")
    assert interrupted["details"]["interrupted"] is True
    assert (await run(jp_fetch, "1 + 1"))["text"] == "2"
    status_after = await ok(jp_fetch, action="status", session="default")
    assert "waiting for input" not in status_after["text"]


async def test_a_password_prompt_is_named_as_one_and_its_answer_never_shown(jp_fetch):
    await run(jp_fetch, "import getpass\nfirst = getpass.getpass('Password: ')", stdin=["s3cret"])
    waiting = await run(jp_fetch, "import getpass\np = getpass.getpass('Again: ')", stdin="ask")
    run_id = waiting["callId"]

    status, body = await tool(jp_fetch)({"cells": [{"code": "1"}]})

    assert status == 409
    expected = refusal(
        "default", run_id, "Again: ", where={"session": "default"}, kind="a password prompt"
    )
    assert without_deadline(body["message"]) == expected
    assert body["details"]["password"] is True
    assert "s3cret" not in json.dumps(body)
    _, done = await answer(jp_fetch, run_id, "other")
    assert done["isError"] is False


async def test_a_run_in_place_waiting_names_its_run_and_the_notebooks_kernel(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "ask.ipynb", NAME, "print('after')")
    waiting = await run_ok(jp_fetch, notebook_path="ask.ipynb", cell_index=0, stdin="ask")
    run_id = waiting["callId"]

    status, refused = await call_run(jp_fetch, {"notebook_path": "ask.ipynb", "cell_index": 1})

    assert status == 409
    expected = refusal("ask.ipynb", run_id, "name? ", where={"notebook_path": "ask.ipynb"})
    assert without_deadline(refused["message"]) == expected
    assert refused["details"]["runId"] == run_id
    assert refused["details"]["notebookPath"] == "ask.ipynb"

    status_now = await ok(jp_fetch, action="status", notebook_path="ask.ipynb")
    assert (
        f"waiting for input at cell 0 [1] (run {run_id}, prompt 'name? ')" in (status_now["text"])
    )

    await ok(jp_fetch, action="interrupt", notebook_path="ask.ipynb")
    after = await run_ok(jp_fetch, notebook_path="ask.ipynb", cell_index=1, timeout=60)
    assert after["cells"][0]["output"] == "after\n"


@pytest.mark.slow
async def test_over_mcp_the_refusal_and_the_status_name_the_waiting_run(jp_fetch):
    waiting = await call_tool(jp_fetch, "python", {"cells": [{"code": NAME}], "stdin": "ask"})
    run_id = waiting["structuredContent"]["awaitingInput"]["runId"]

    refused = await call_tool(jp_fetch, "python", {"cells": [{"code": "1"}]})
    status = await call_tool(jp_fetch, "kernel", {"action": "status", "session": "default"})

    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert without_deadline(text) == refusal(
        "default", run_id, "name? ", where={"session": "default"}
    )
    assert refused["structuredContent"]["status"] == 409
    assert refused["structuredContent"]["reason"] == "waiting_for_input"
    assert refused["structuredContent"]["details"]["runId"] == run_id
    assert f"waiting for input (run {run_id}, prompt 'name? ')" in status["content"][0]["text"]

    # The answer the refusal spells out, sent as it says, completes the run.
    answered = await call_tool(jp_fetch, "python", {"run_id": run_id, "answer": "bob"})
    assert answered["content"][0]["text"] == "name? bob\nhello bob"

"""Prompts for input in python calls on real kernels (docs/developers/contract.md §8): each mode.

Run on local kernels and, for the modes, on a real Kernel Gateway too (the answer travels
through its websocket).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from traitlets.config import Config

from jupyter_xcsh.events.activity import PYTHON_SCHEMA
from jupyter_xcsh.execution.kernel.stdin import stdin_notice
from tests.support.gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from tests.support.openapi_check import assert_response_matches
from tests.support.python_tool import (
    REQUEST_TIMEOUT,
    answer,
    eventually,
    kernel_ids,
    run,
    sessions,
    tool,
)

pytestmark = pytest.mark.timeout(300)

NAME = "name = input('name? ')\nprint('hello', name)"


@pytest.fixture
def xcsh_settings():
    """XcshSettings for the test server; tests override it with ``parametrize``."""
    return {}


@pytest.fixture
def jp_server_config(jp_server_config, xcsh_settings):
    config = Config(jp_server_config)
    for name, value in xcsh_settings.items():
        config.XcshSettings[name] = value
    return config


@pytest.fixture
def python_events(jp_serverapp):
    """Every python event the server emits, as the lab receives them."""
    seen: list[dict] = []

    async def listener(logger, schema_id, data):
        seen.append(dict(data))

    jp_serverapp.event_logger.add_listener(schema_id=PYTHON_SCHEMA, listener=listener)
    return seen


async def follow(jp_fetch, run_id):
    """``GET /api/xcsh/runs/<runId>``: the run's next stop."""
    response = await jp_fetch("api", "xcsh", "runs", run_id, request_timeout=REQUEST_TIMEOUT)
    result = json.loads(response.body)
    assert_response_matches("/api/xcsh/runs/{runId}", "get", 200, result)
    return result


# -- notice, eof, answers: on local kernels and on a Kernel Gateway ----------------------------


class TestModes:
    @pytest.fixture(params=KERNELS)
    def jp_server_config(self, request, jp_server_config):
        return use_kernels(request, jp_server_config)

    @pytest.mark.slow
    async def test_notice_fails_the_cell_with_the_notes_text(self, jp_fetch):
        result = await run(jp_fetch, NAME)

        assert result["isError"] is True and result["stdinRequested"] is True
        assert result["timedOut"] is False
        cell = result["cells"][0]
        assert (cell["status"], cell["exitCode"]) == ("error", 1)
        # One line saying how to answer; not the EOFError's traceback.
        assert cell["output"] == stdin_notice("name? ") + "\n"
        assert result["text"] == stdin_notice("name? ") + "\n\nCommand exited with code 1"
        assert cell["error"]["ename"] == "EOFError"  # the prompt got end-of-file: no hang

    async def test_eof_raises_eoferror_at_once(self, jp_fetch):
        result = await run(jp_fetch, NAME, stdin="eof")

        assert result["isError"] is True and result["stdinRequested"] is True
        assert result["cells"][0]["error"]["ename"] == "EOFError"
        assert result["cells"][0]["output"].startswith("name? \n")
        assert "[stdin]" not in result["text"]

    @pytest.mark.slow
    async def test_answers_are_given_in_order_and_echoed_after_the_prompt(self, jp_fetch):
        result = await run(jp_fetch, NAME, stdin=["bob"])

        assert result["isError"] is False and result["stdinRequested"] is True
        assert result["text"] == "name? bob\nhello bob"

    async def test_ask_waits_and_the_answer_finishes_the_call(self, jp_fetch):
        waiting = await run(jp_fetch, NAME, stdin="ask")

        run_id = waiting["callId"]
        assert waiting["awaitingInput"] == {"runId": run_id, "prompt": "name? ", "password": False}
        assert waiting["isError"] is False and waiting["stdinRequested"] is True
        assert waiting["cells"][0]["status"] == "running"
        assert waiting["text"].startswith("name? \n\n[stdin] The kernel is waiting for input")
        assert f"POST /api/xcsh/runs/{run_id}/input" in waiting["text"]

        status, result = await answer(jp_fetch, run_id, "bob")

        assert status == 200
        assert result["text"] == "name? bob\nhello bob"
        assert result["isError"] is False and "awaitingInput" not in result
        assert result["callId"] == run_id


@pytest.mark.slow
async def test_answers_run_out_then_the_notice_applies(jp_fetch):
    code = "a = input('a? ')\nb = input('b? ')\nprint(a, b)"
    result = await run(jp_fetch, code, stdin=["x"])

    assert result["isError"] is True
    assert result["cells"][0]["output"] == "a? x\n" + stdin_notice("b? ", 1) + "\n"
    assert result["text"].endswith("Command exited with code 1")


async def test_notice_fails_the_cell_even_when_the_code_catches_eoferror(jp_fetch):
    code = "try:\n    input()\nexcept EOFError:\n    print('caught')"
    result = await run(jp_fetch, code, "print('never')")

    assert [c["status"] for c in result["cells"]] == ["error", "pending"]
    assert result["cells"][0]["exitCode"] == 1
    assert result["text"] == (
        f"[1/2]\n{stdin_notice('')}\ncaught\n\nCell 1 failed (exit code 1). Earlier cells "
        "succeeded—their state persists. Fix only cell 1."
    )


@pytest.mark.slow
async def test_a_debugger_gets_end_of_file_and_the_call_ends_in_two_seconds(jp_fetch):
    # The call's timeout is the 2 s: a debugger waiting on its prompt would time it out. In
    # ipykernel, breakpoint() goes to debugpy (nothing without a client attached); with
    # Python's own hook it starts pdb, which prompts.
    await run(jp_fetch, "import sys")  # a warm kernel: the 2 s are the debugger's alone
    kernel_hook = await run(jp_fetch, "breakpoint()\nprint('after')", stdin="eof", timeout=2)
    pdb_hook = await run(
        jp_fetch,
        "sys.breakpointhook = sys.__breakpointhook__\nbreakpoint()\nprint('after')",
        stdin="eof",
        timeout=2,
    )

    assert kernel_hook["timedOut"] is False and kernel_hook["text"].endswith("after")
    assert pdb_hook["timedOut"] is False and pdb_hook["stdinRequested"] is True
    assert "db> \n" in pdb_hook["text"]  # its prompt, answered with end-of-file (it quits)


async def test_a_bad_stdin_is_a_400(jp_fetch):
    for value in ("yes", ["a", 1], 3, None):
        status, body = await tool(jp_fetch)({"cells": [{"code": "1"}], "stdin": value})
        assert status == 400
        assert body["message"] == (
            'stdin must be "notice", "eof", "ask" or a list of strings (the answers, in order)'
        )


# -- ask -------------------------------------------------------------------------------------


async def test_a_second_prompt_in_the_same_cell_asks_again(jp_fetch):
    code = "a = input('first? ')\nb = input('second? ')\nprint(a + b)"
    first = await run(jp_fetch, code, stdin="ask")
    run_id = first["callId"]

    _, second = await answer(jp_fetch, run_id, "x")
    assert second["awaitingInput"] == {"runId": run_id, "prompt": "second? ", "password": False}
    assert second["text"].startswith("first? x\nsecond? \n\n[stdin] The kernel is waiting")

    _, done = await answer(jp_fetch, run_id, "y")
    assert done["text"] == "first? x\nsecond? y\nxy"


@pytest.mark.slow
async def test_answers_continue_through_later_cells_and_their_prompts(jp_fetch):
    waiting = await run(jp_fetch, "print('one')", "v = input('v? ')", "print(v * 2)", stdin="ask")
    assert [c["status"] for c in waiting["cells"]] == ["complete", "running", "pending"]
    assert waiting["text"].startswith("[1/3]\none\n\n[2/3]\nv? ")

    _, result = await answer(jp_fetch, waiting["callId"], "ab")
    assert result["text"] == "[1/3]\none\n\n[2/3]\nv? ab\n\n[3/3]\nabab"


@pytest.mark.slow
async def test_another_call_on_a_waiting_session_is_a_409(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")

    status, body = await tool(jp_fetch)({"cells": [{"code": "1 + 1"}]})
    assert status == 409
    assert body["message"].startswith(
        f"Session default is waiting for input: run {waiting['callId']} waits"
    )
    # Other sessions are free.
    assert (await run(jp_fetch, "1 + 1", session="other"))["text"] == "2"

    await answer(jp_fetch, waiting["callId"], "bob")
    assert (await run(jp_fetch, "name"))["text"] == "'bob'"


async def test_a_call_queued_behind_one_that_starts_waiting_gets_the_409(jp_fetch, jp_root_dir):
    code = (
        "import pathlib, time\n"
        "while not pathlib.Path('go').exists():\n"
        "    time.sleep(0.05)\n"
        "name = input('name? ')"
    )
    first = asyncio.create_task(run(jp_fetch, code, stdin="ask", timeout=120))

    async def queue_length(n):
        listed = await sessions(jp_fetch)
        return bool(listed) and listed[0]["busy"] and listed[0]["queueLength"] == n

    await eventually(lambda: queue_length(0), timeout=120)
    queued = asyncio.create_task(tool(jp_fetch)({"cells": [{"code": "1"}], "timeout": 120}))
    await eventually(lambda: queue_length(1))
    (jp_root_dir / "go").write_text("")
    waiting = await first

    status, body = await queued
    assert status == 409
    assert body["message"].startswith(
        f"Session default is waiting for input: run {waiting['callId']} waits"
    )
    assert body["details"]["runId"] == waiting["callId"]
    _, done = await answer(jp_fetch, waiting["callId"], "bob")
    assert done["isError"] is False


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"input_timeout": 1.0}])
async def test_an_unanswered_prompt_gets_end_of_file_after_input_timeout(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")
    assert "end of file after 1 seconds" in waiting["text"]

    async def ended():
        return "awaitingInput" not in await follow(jp_fetch, waiting["callId"])

    await eventually(ended)
    result = await follow(jp_fetch, waiting["callId"])

    assert result["isError"] is True
    assert result["cells"][0]["error"]["ename"] == "EOFError"
    assert "[stdin] No answer within 1 seconds: end of file sent." in result["text"]
    status, body = await answer(jp_fetch, waiting["callId"], "late")
    assert (status, body["message"]) == (409, f"Run {waiting['callId']} is not waiting for input")
    assert (await run(jp_fetch, "1"))["text"] == "1"  # the session is free again


async def test_following_a_waiting_run_returns_its_prompt_at_once(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")
    again = await follow(jp_fetch, waiting["callId"])
    assert again["awaitingInput"] == waiting["awaitingInput"]
    await answer(jp_fetch, waiting["callId"], "bob")


@pytest.mark.slow
async def test_time_waiting_for_an_answer_does_not_count_against_the_timeout(jp_fetch):
    await run(jp_fetch, "x = 1")  # a warm kernel: the 2 s are the call's own
    waiting = await run(jp_fetch, NAME, "print('next')", stdin="ask", timeout=2)
    # Longer than the whole call's timeout: only waiting for the answer, which is not due.
    await asyncio.sleep(2.5)
    _, result = await answer(jp_fetch, waiting["callId"], "bob")
    assert result["timedOut"] is False
    assert result["text"].endswith("hello bob\n\n[2/2]\nnext")


@pytest.mark.slow
async def test_output_printed_before_a_prompt_comes_before_it(jp_fetch):
    # The prompt travels on stdin, the output on IOPub: without a barrier the prompt often
    # overtakes the output (about one time in two here), so three tries catch it.
    code = "print('menu: 1) a 2) b')\nchoice = input('choice? ')\nprint('chose', choice)"
    for _ in range(3):
        given = await run(jp_fetch, code, stdin=["2"])
        waiting = await run(jp_fetch, code, stdin="ask")
        _, answered = await answer(jp_fetch, waiting["callId"], "1")

        assert given["text"] == "menu: 1) a 2) b\nchoice? 2\nchose 2"
        assert waiting["text"].startswith("menu: 1) a 2) b\nchoice? \n\n[stdin] The kernel")
        assert answered["text"] == "menu: 1) a 2) b\nchoice? 1\nchose 1"


SECRET = "s3cr3t-Pa55word"


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_output_bytes": 1024}])
async def test_a_password_answer_appears_in_no_text_event_or_artifact(
    jp_fetch, jp_root_dir, python_events
):
    code = (
        "from getpass import getpass\n"
        "print('x' * 4000)\n"  # past max_output_bytes: the output spills to an artifact
        "secret = getpass('password? ')\n"
        "print('length', len(secret))"
    )
    waiting = await run(jp_fetch, code, stdin="ask")
    assert waiting["awaitingInput"]["password"] is True
    _, lines = await answer(
        jp_fetch, waiting["callId"], SECRET, headers={"Accept": "application/x-ndjson"}
    )
    given = await run(jp_fetch, code, stdin=[SECRET])

    result = lines[-1]["result"]
    for each in (result, given):
        assert each["text"].endswith(f"\nlength {len(SECRET)}") and each["artifactId"]
        assert each["cells"][0]["output"].endswith(f"password? \nlength {len(SECRET)}\n")
    await eventually(lambda: _has_finished(python_events, 2))
    seen = [json.dumps(lines), json.dumps(result), json.dumps(given), json.dumps(python_events)]
    for path in (jp_root_dir / ".xcsh-artifacts").iterdir():
        seen.append(path.read_bytes().decode("utf-8", "replace"))
    assert not any(SECRET in text for text in seen)
    assert any(f"length {len(SECRET)}" in text for text in seen[3:])  # artifacts were read


async def _has_finished(events, count):
    return sum(e["event"] == "finished" for e in events) >= count


async def test_interrupting_a_waiting_call_raises_keyboardinterrupt_and_ends_it(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")

    response = await jp_fetch(
        "api", "xcsh", "sessions", "default", "interrupt", method="POST", body=b""
    )
    result = await follow(jp_fetch, waiting["callId"])

    assert json.loads(response.body) == {"interrupted": True}
    assert result["cancelled"] is True and result["isError"] is True
    assert "KeyboardInterrupt" in result["text"]
    assert (await run(jp_fetch, "1"))["text"] == "1"  # the kernel and its session live on


@pytest.mark.slow
async def test_deleting_a_waiting_session_ends_the_call_cleanly(jp_fetch):
    waiting = await run(jp_fetch, NAME, stdin="ask")

    response = await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")
    result = await follow(jp_fetch, waiting["callId"])

    assert response.code == 204
    assert result["cancelled"] is True
    assert result["text"].endswith("Session was shut down")
    assert await sessions(jp_fetch) == []
    await eventually(lambda: _no_kernels(jp_fetch), timeout=60)


async def _no_kernels(jp_fetch):
    return await kernel_ids(jp_fetch) == set()


async def test_a_streamed_ask_shows_the_prompt_then_ends_with_the_partial_result(
    jp_fetch, python_events
):
    response = await jp_fetch(
        "api",
        "xcsh",
        "python",
        method="POST",
        body=json.dumps({"cells": [{"code": NAME}], "stdin": "ask"}),
        headers={"Accept": "application/x-ndjson"},
        request_timeout=REQUEST_TIMEOUT,
    )
    lines = [json.loads(line) for line in response.body.decode().splitlines()]
    run_id = lines[0]["callId"]
    prompt = {"runId": run_id, "prompt": "name? ", "password": False}
    assert {"type": "input", "index": 0, "state": "waiting", **prompt} in lines
    assert lines[-1]["type"] == "result"
    assert lines[-1]["result"]["awaitingInput"] == prompt

    _, answered = await answer(jp_fetch, run_id, "bob", headers={"Accept": "application/x-ndjson"})
    assert answered[0] == {"type": "input", "state": "answered"}
    assert answered[-1]["result"]["text"] == "name? bob\nhello bob"

    await eventually(lambda: _has_finished(python_events, 1))
    inputs = [e["input"] for e in python_events if e["event"] == "input"]
    assert inputs == [{**prompt, "state": "waiting"}, {"state": "answered"}]


async def test_answering_checks_its_body_and_the_run(jp_fetch):
    unknown = "0" * 32
    status, body = await answer(jp_fetch, unknown, "x")
    assert (status, body["message"]) == (404, f"No such run: {unknown}")
    waiting = await run(jp_fetch, NAME, stdin="ask")
    run_id = waiting["callId"]
    status, body = await answer(jp_fetch, run_id, None, body=json.dumps({"value": 1}))
    assert (status, body["message"]) == (400, "value must be a string")
    status, body = await answer(jp_fetch, run_id, None, body=json.dumps({"value": "a", "x": 1}))
    assert (status, body["message"]) == (400, "Unknown field(s): x (fields: value)")
    _, done = await answer(jp_fetch, run_id, "bob")
    assert done["text"].endswith("hello bob")
    assert (await follow(jp_fetch, run_id))["text"] == done["text"]  # kept after its end


async def test_the_tool_itself_answers_a_prompt_with_run_id_and_answer(jp_fetch):
    call = tool(jp_fetch, "rest")
    waiting = await run(jp_fetch, "print('hi', input('name? '))", stdin="ask")
    run_id = waiting["awaitingInput"]["runId"]

    status, answered = await call({"run_id": run_id, "answer": "bob"})
    again_status, again = await call({"run_id": run_id, "wait": 0})
    bad_status, bad = await call({"run_id": run_id, "cells": []})
    lone_status, lone = await call({"cells": [], "wait": 1})

    assert (status, answered["text"]) == (200, "name? bob\nhi bob")
    assert (again_status, again["callId"]) == (200, run_id)
    assert (bad_status, bad["message"]) == (
        400,
        "With run_id, give only answer or wait (not cells)",
    )
    assert (lone_status, lone["message"]) == (
        400,
        "answer and wait need run_id (the run to continue)",
    )

"""The official MCP SDK client (``mcp`` package) against POST /api/xcsh/mcp on a live server."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import time
from contextlib import AsyncExitStack

import jsonschema
import pytest
from conftest import ERAS, eventually, sessions
from mcp import MCPError

pytestmark = pytest.mark.timeout(300)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
    )
).decode()

NOTEBOOK = """{
 "cells": [
  {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Title"]},
  {"cell_type": "code", "execution_count": null, "id": "b2", "metadata": {}, "outputs": [],
   "source": ["x = 1"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"""

#: Sets a variable, marks that it started, then sleeps far longer than any test waits.
SLEEPER = (
    "import pathlib, time\nkept = 'yes'\npathlib.Path('started').write_text('x')\n"
    "time.sleep(60)\npathlib.Path('finished').write_text('x')"
)


def text_of(result):
    assert result.content[0].type == "text"
    return result.content[0].text


async def test_initialize_negotiates_and_lists_the_tools_with_valid_schemas(connect, era):
    async with connect() as client:
        assert client.protocol_version == ERAS[era]
        assert client.server_info.name == "jupyter-xcsh"
        assert client.server_capabilities.tools is not None
        listed = await client.list_tools()

    assert [tool.name for tool in listed.tools] == [
        "notebook",
        "python",
        "artifact",
        "files",
        "kernel",
    ]
    for tool in listed.tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"  # the SDK validates every result by it
        assert tool.description
    # What every conversation pays for the tools (issue 38: at most 8,000 characters).
    tools = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools
    ]
    assert len(json.dumps(tools)) <= 8000
    python = next(tool for tool in listed.tools if tool.name == "python")
    assert python.input_schema.get("required", []) == []  # cells, or run_id (a follow-up)


async def test_notebook_edit_then_read(connect, jp_root_dir):
    (jp_root_dir / "n.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    async with connect() as client:
        edit = await client.call_tool(
            "notebook",
            {"action": "edit", "notebook_path": "n.ipynb", "cell_index": 1, "content": "y = 2"},
        )
        read = await client.call_tool("notebook", {"action": "read", "notebook_path": "n.ipynb"})

    assert edit.is_error is False
    assert text_of(edit) == "Replaced cell 1 (code). Notebook now has 2 cells."
    assert edit.structured_content["details"]["cellId"] == "b2"
    assert "cellSource" not in edit.structured_content["details"]  # the summary: no sources
    assert "y = 2" in text_of(read)
    assert read.structured_content["details"]["totalCells"] == 2


async def test_notebook_run_writes_outputs_into_the_notebook(connect, jp_root_dir):
    (jp_root_dir / "r.ipynb").write_text(NOTEBOOK.replace("x = 1", "print(6 * 7)"), "utf-8")
    async with connect() as client:
        run = await client.call_tool(
            "notebook", {"action": "run", "notebook_path": "r.ipynb", "cell_id": "b2"}
        )

    assert run.is_error is False
    assert text_of(run) == "42"
    assert run.structured_content["cells"][0]["outputsWritten"] is True
    saved = json.loads((jp_root_dir / "r.ipynb").read_text(encoding="utf-8"))
    assert saved["cells"][1]["outputs"] == [
        {"name": "stdout", "output_type": "stream", "text": ["42\n"]}
    ]
    assert saved["cells"][1]["execution_count"] == 1


async def test_python_keeps_state_across_calls(connect):
    async with connect() as client:
        first = await client.call_tool("python", {"cells": [{"code": "x = 41"}]})
    # A new connection, as after a client restart: the session lives in the server.
    async with connect() as client:
        second = await client.call_tool("python", {"cells": [{"code": "x + 1"}]})

    assert text_of(second) == "42"
    assert second.is_error is False
    kernel = second.structured_content["session"]["kernelId"]
    assert kernel == first.structured_content["session"]["kernelId"]


async def test_kernel_lists_a_sessions_variables_and_refuses_a_bad_action(connect):
    async with connect() as client:
        await client.call_tool("python", {"cells": [{"code": "x = 41"}], "session": "k"})
        listed = await client.call_tool("kernel", {"action": "variables", "session": "k"})
        refused = await client.call_tool("kernel", {"action": "dance"})

    assert listed.is_error is False
    assert "x: int = 41" in text_of(listed) or "41" in text_of(listed)
    assert listed.structured_content["details"]["total"] == 1
    assert "variables" not in listed.structured_content["details"]  # listed in the text
    assert refused.is_error is True
    assert text_of(refused).startswith("Invalid action: dance (actions: variables, inspect,")


async def test_structured_content_is_a_bounded_summary_or_the_body_when_asked(connect):
    code = "def f(n):\n    return f(n + 1)\nf(0)"
    body = {"jupyter-xcsh/structured": "body"}
    async with connect() as client:
        summary = await client.call_tool("python", {"cells": [{"code": code}]})
        whole = await client.call_tool("python", {"cells": [{"code": code}]}, meta=body)
        refused = await client.call_tool("python", {"code": "1 + 1"})

    # The SDK validated each against the python tool's outputSchema.
    assert summary.is_error is True and "RecursionError" in text_of(summary)
    assert len(json.dumps(summary.structured_content)) <= 2048  # the body: hundreds of KB
    error = summary.structured_content["cells"][0]["error"]
    # The folded traceback's full text is an artifact: its id, not its text.
    assert error == {"ename": "RecursionError", "artifactId": error["artifactId"]}
    assert re.fullmatch(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{12}", error["artifactId"])
    assert whole.structured_content["text"] == text_of(whole)
    assert text_of(refused).startswith(
        'Unknown field(s): code (did you mean cells: [{"code": ...}]? fields: cells,'
    )
    assert refused.structured_content == {"reason": None, "status": 400}


async def test_an_error_in_the_code_and_bad_arguments_are_error_results(connect):
    async with connect() as client:
        failed = await client.call_tool("python", {"cells": [{"code": "1 / 0"}]})
        refused = await client.call_tool("python", {"cells": [], "cwd": "missing"})

    assert failed.is_error is True
    assert "ZeroDivisionError" in text_of(failed)
    assert refused.is_error is True
    assert text_of(refused) == "Working directory does not exist: missing"
    assert refused.structured_content["status"] == 400


async def test_an_image_output_arrives_as_image_content(connect):
    code = (
        "from IPython.display import display\n"
        f"display({{'image/png': {PNG!r}, 'text/plain': '<Figure>'}}, raw=True)"
    )
    async with connect() as client:
        result = await client.call_tool("python", {"cells": [{"code": code}]})

    images = [c for c in result.content if c.type == "image"]
    assert [(image.mime_type, image.data) for image in images] == [("image/png", PNG)]
    # Sent once: the structured summary names the image, without its data.
    assert "data" not in result.structured_content["images"][0]
    assert PNG not in json.dumps(result.structured_content)
    # The text names the image as the python tool's result does (docs/developers/contract.md §7.5).
    assert text_of(result) == "<Figure>\n[image 1: 1x1 PNG, 69B]"


async def test_a_cut_output_is_read_back_through_the_artifact_tool(connect):
    code = "import sys\n_ = sys.stdout.write(''.join(f'{i:07d}\\n' for i in range(262144)))"
    async with connect() as client:
        result = await client.call_tool("python", {"cells": [{"code": code}]})
        links = [c for c in result.content if c.type == "resource_link"]
        page = await client.call_tool("artifact", {"id": str(links[0].uri), "offset": 100000})
        resource = await client.read_resource(str(links[0].uri))

    assert result.structured_content["truncated"] is True
    assert str(links[0].uri) == f"artifact://{result.structured_content['artifactId']}"
    assert text_of(page).startswith("0099999\n0100000\n")
    assert resource.contents[0].text.startswith("0000000\n")


async def test_progress_notifications_arrive_before_the_result_of_a_six_second_call(connect):
    arrivals = []

    async def progress(value, total, message):
        arrivals.append((time.monotonic(), value, message))

    async with connect() as client:
        await client.call_tool("python", {"cells": [{"code": "import time"}]})
        result = await client.call_tool(
            "python",
            {"cells": [{"code": "print('working', flush=True)\ntime.sleep(6)"}]},
            progress_callback=progress,
        )
        finished = time.monotonic()

    assert text_of(result) == "working"
    # The server reports every 2 s (and when the cell starts): at least 3 reports for 6 s, none
    # more than 5 s apart (the contract), all before the result.
    assert len(arrivals) >= 3
    times = [t for t, _, _ in arrivals]
    assert all(later - earlier < 5 for earlier, later in itertools.pairwise(times))
    assert times[-1] <= finished
    assert [v for _, v, _ in arrivals] == sorted({v for _, v, _ in arrivals})
    assert any("working" in (message or "") for _, _, message in arrivals)


async def _interrupted_within(jp_fetch, interrupt) -> float:
    """Seconds from ``interrupt()`` until no session is busy."""

    async def idle():
        return not any(s["busy"] for s in await sessions(jp_fetch))

    started = time.monotonic()
    await interrupt()
    await eventually(idle, timeout=60)
    return time.monotonic() - started


async def test_cancelling_a_call_made_with_detach_false_interrupts_its_sleep(
    connect, jp_fetch, jp_root_dir
):
    arguments = {"cells": [{"code": SLEEPER}], "timeout": 120, "detach": False}
    async with connect() as client:
        call = asyncio.create_task(client.call_tool("python", arguments))
        await eventually(lambda: _exists(jp_root_dir / "started"), timeout=180)

        async def cancel():
            # 2025: the SDK tells the server with notifications/cancelled (another POST);
            # 2026: it closes the call's request. Either is a hang-up: with detach false, the
            # end of the run.
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        # The interrupt reaches a local kernel in milliseconds; 2 s is the promise.
        assert await _interrupted_within(jp_fetch, cancel) < 2
        after = await client.call_tool("python", {"cells": [{"code": "print(kept)"}]})

    assert text_of(after) == "yes"
    assert after.structured_content["session"]["stateLost"] is False
    assert not (jp_root_dir / "finished").exists()


async def test_the_clients_own_timeout_loses_nothing_the_run_goes_on_to_be_followed(
    connect, jp_root_dir
):
    code = (
        "import pathlib, time\npathlib.Path('started').write_text('x')\nprint('begun')\n"
        "time.sleep(4)\npathlib.Path('finished').write_text('x')\nprint('done')"
    )
    messages = []

    async def progress(value, total, message):
        messages.append(message or "")

    async with connect() as client:
        await client.call_tool("python", {"cells": [{"code": "1"}]})  # the kernel started
        with pytest.raises(MCPError, match="timed out"):
            # The SDK's read timeout: it gives up (2025: notifications/cancelled; 2026: the
            # request closed). Neither ends the run.
            await client.call_tool(
                "python",
                {"cells": [{"code": code}]},
                read_timeout_seconds=1.5,
                progress_callback=progress,
            )
        run_id = messages[0].split()[1]
        followed = await client.call_tool("python", {"run_id": run_id, "wait": 60})

    assert messages[0].startswith(f"run {run_id} started")
    assert followed.is_error is False
    assert text_of(followed) == "begun\ndone"
    assert "KeyboardInterrupt" not in text_of(followed)
    assert (jp_root_dir / "finished").exists()


async def test_closing_the_client_interrupts_its_call_when_not_detached(
    connect, jp_fetch, jp_root_dir
):
    stack = AsyncExitStack()
    client = await stack.enter_async_context(connect())
    arguments = {"cells": [{"code": SLEEPER}], "timeout": 120, "detach": False}
    call = asyncio.create_task(client.call_tool("python", arguments))
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=180)

    async def close():
        await stack.aclose()  # the call's connection goes with it
        with contextlib.suppress(MCPError, asyncio.CancelledError):
            await call

    assert await _interrupted_within(jp_fetch, close) < 2
    async with connect() as client:
        after = await client.call_tool("python", {"cells": [{"code": "print(kept)"}]})
    assert text_of(after) == "yes"
    assert not (jp_root_dir / "finished").exists()


async def _exists(path):
    return path.exists()


ASKS = "name = input('name? ')\nprint('hello', repr(name))"


def eliciting(replies, asked):
    """An elicitation callback answering with ``replies`` in order, noting each question."""
    from mcp import types

    async def callback(context, params):
        asked.append(params)
        action, content = replies.pop(0)
        return types.ElicitResult(action=action, content=content)

    return callback


async def test_input_is_asked_through_elicitation_and_the_answer_reaches_the_kernel(connect):
    asked = []
    async with connect(
        elicitation_callback=eliciting([("accept", {"answer": "bob"})], asked)
    ) as client:
        result = await client.call_tool("python", {"cells": [{"code": ASKS}]})

    assert [params.message for params in asked] == ["name?"]
    assert set(asked[0].requested_schema["properties"]) == {"answer"}
    assert result.is_error is False
    assert text_of(result) == "name? bob\nhello 'bob'"


async def test_a_declined_question_is_end_of_file_and_the_call_goes_on(connect):
    code = "try:\n    input('name? ')\nexcept EOFError:\n    print('no name')"
    asked = []
    async with connect(elicitation_callback=eliciting([("decline", None)], asked)) as client:
        result = await client.call_tool("python", {"cells": [{"code": code}]})

    assert len(asked) == 1
    assert result.is_error is False
    assert "declined to answer (MCP elicitation): end of file sent" in text_of(result)
    assert text_of(result).endswith("no name")


async def test_getpass_is_never_elicited(connect):
    code = "import getpass\ntry:\n    getpass.getpass('pw: ')\nexcept EOFError:\n    print('none')"
    asked = []
    async with connect(elicitation_callback=eliciting([], asked)) as client:
        result = await client.call_tool("python", {"cells": [{"code": code}]})

    assert asked == []
    assert "never asked through MCP elicitation" in text_of(result)
    assert text_of(result).endswith("none")


async def test_without_elicitation_run_id_answers_and_waits_over_mcp(connect):
    async with connect() as client:
        waiting = await client.call_tool("python", {"cells": [{"code": ASKS}], "stdin": "ask"})
        run_id = waiting.structured_content["awaitingInput"]["runId"]
        answered = await client.call_tool("python", {"run_id": run_id, "answer": "ann"})
        again = await client.call_tool("python", {"run_id": run_id, "wait": 1})

    assert f'"run_id": "{run_id}", "answer": "..."' in text_of(waiting)
    assert text_of(answered) == "name? ann\nhello 'ann'"
    assert text_of(again) == text_of(answered)


async def test_a_detached_run_is_followed_after_its_client_hung_up(connect, jp_root_dir):
    code = (
        "import pathlib, time\npathlib.Path('started').write_text('x')\ntime.sleep(4)\n"
        "print('done')"
    )
    progress_messages = []

    async def progress(value, total, message):
        progress_messages.append(message or "")

    stack = AsyncExitStack()
    client = await stack.enter_async_context(connect())
    call = asyncio.create_task(
        client.call_tool("python", {"cells": [{"code": code}]}, progress_callback=progress)
    )
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=180)
    await stack.aclose()  # MCP's default: the run goes on (detach)
    with contextlib.suppress(MCPError, asyncio.CancelledError):
        await call
    run_id = progress_messages[0].split()[1]

    async with connect() as client:
        followed = await client.call_tool("python", {"run_id": run_id, "wait": 60})

    assert progress_messages[0].startswith(f"run {run_id} started")
    assert text_of(followed) == "done"


async def test_files_list_write_read_and_a_stale_write_through_the_sdk(connect, jp_root_dir):
    (jp_root_dir / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    async with connect() as client:
        listed = await client.call_tool("files", {"action": "list"})
        read = await client.call_tool("files", {"action": "read", "path": "notes.txt"})
        file_hash = read.structured_content["details"]["hash"]
        write = {"action": "write", "path": "notes.txt", "expected_hash": file_hash}
        written = await client.call_tool("files", {**write, "content": "three\n"})
        stale = await client.call_tool("files", {**write, "content": "four\n"})
        found = await client.call_tool("files", {"action": "search", "pattern": "thr"})
        outside = await client.call_tool("files", {"action": "read", "path": "../x"})

    assert listed.is_error is False
    assert "notes.txt" in text_of(listed)
    assert "entries" not in listed.structured_content["details"]  # listed in the text
    assert "one\ntwo" in text_of(read) and "content" not in read.structured_content["details"]
    assert written.is_error is False
    assert (jp_root_dir / "notes.txt").read_text(encoding="utf-8") == "three\n"
    assert stale.is_error is True and stale.structured_content["reason"] == "stale_file"
    assert stale.structured_content["status"] == 409
    assert found.structured_content["details"]["matches"][0]["path"] == "notes.txt"
    assert "three" in text_of(found)
    assert outside.is_error is True and outside.structured_content["status"] == 403

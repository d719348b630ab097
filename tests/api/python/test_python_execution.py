"""The python tool on real kernels: results, messages, outputs, timeouts and recovery.

Every test here runs twice: on the server's local kernels and on a real Jupyter Kernel Gateway
the server reaches through ``GatewayClient.url`` (see ``tests/support/gateway.py``).
"""

from __future__ import annotations

import base64
import json
import os

import pytest

from tests.support.gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from tests.support.mcp_client import TRANSPORTS
from tests.support.python_tool import run, sessions, tool

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config):
    return use_kernels(request, jp_server_config)


PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
    )
).decode()


async def test_state_persists_between_calls_of_a_session(jp_fetch):
    first = await run(jp_fetch, "x = 41")
    second = await run(jp_fetch, "x + 1")

    assert second["text"] == "42"
    assert second["isError"] is False
    assert second["session"]["kernelId"] == first["session"]["kernelId"]
    assert second["session"]["stateLost"] is False
    cell = second["cells"][0]
    assert (cell["status"], cell["output"], cell["exitCode"]) == ("complete", "42\n", 0)


@pytest.mark.slow
async def test_sessions_are_keyed_by_name_and_working_directory(jp_fetch, jp_root_dir):
    (jp_root_dir / "sub").mkdir()
    await run(jp_fetch, "x = 'default'")
    await run(jp_fetch, "x = 'other'", session="other")
    await run(jp_fetch, "x = 'sub'", cwd="sub")

    assert (await run(jp_fetch, "print(x)"))["text"] == "default"
    assert (await run(jp_fetch, "print(x)", session="other"))["text"] == "other"
    assert (await run(jp_fetch, "print(x)", cwd="sub"))["text"] == "sub"
    assert len({s["kernelId"] for s in await sessions(jp_fetch)}) == 3


@pytest.mark.slow
async def test_per_call_mode_isolates_calls_and_leaves_no_kernel_behind(jp_fetch):
    await run(jp_fetch, "x = 1", mode="per-call")
    second = await run(jp_fetch, "print(x)", mode="per-call")

    assert second["isError"] is True
    assert second["cells"][0]["error"]["ename"] == "NameError"
    assert await sessions(jp_fetch) == []
    assert json.loads((await jp_fetch("api", "kernels")).body) == []


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_several_cells_are_titled_and_joined_by_a_blank_line(jp_fetch, transport):
    status, result = await tool(jp_fetch, transport)(
        {"cells": [{"code": "a = 1", "title": "setup"}, {"code": "print(a + 1)", "title": "use"}]}
    )

    assert status == 200
    assert result["text"] == "[1/2] setup (ok)\n\n[2/2] use\n2"
    assert [c["status"] for c in result["cells"]] == ["complete", "complete"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failing_cell_stops_the_call_and_later_cells_stay_pending(jp_fetch, transport):
    result = await run(jp_fetch, "print('one')", "1 / 0", "print('never')", transport=transport)

    assert result["isError"] is True
    assert [c["status"] for c in result["cells"]] == ["complete", "error", "pending"]
    assert result["cells"][1]["error"]["ename"] == "ZeroDivisionError"
    assert result["text"].startswith("[1/3]\none\n\n[2/3]\n")
    assert "ZeroDivisionError" in result["text"]
    assert "never" not in result["text"]
    assert result["text"].endswith(
        "Cell 2 failed (exit code 1). Earlier cells succeeded—their state persists. "
        "Fix only cell 2."
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_single_failing_cell_returns_its_traceback_without_ansi(jp_fetch, transport):
    code = "def f():\n    raise ValueError('bad value')\nf()"
    result = await run(jp_fetch, code, transport=transport)

    assert result["isError"] is True
    error = result["cells"][0]["error"]
    assert (error["ename"], error["evalue"]) == ("ValueError", "bad value")
    assert error["traceback"]
    assert "ValueError: bad value" in result["text"]
    assert "\x1b" not in result["text"]
    assert result["text"].endswith("Command exited with code 1")


@pytest.mark.slow
async def test_no_cells_and_silent_cells_say_there_was_no_output(jp_fetch):
    assert (await run(jp_fetch))["text"] == "(no output)"
    assert (await run(jp_fetch, "x = 1"))["text"] == "(no output)"
    json_only = (
        "from IPython.display import display\ndisplay({'application/json': {'a': 1}}, raw=True)"
    )
    result = await run(jp_fetch, json_only)
    assert result["text"] == "(no text output)"
    assert result["jsonOutputs"] == [{"a": 1}]


def display_code(bundle):
    return f"from IPython.display import display\ndisplay({bundle!r}, raw=True)"


@pytest.mark.slow
async def test_display_text_prefers_markdown_then_plain_then_html(jp_fetch):
    html = (
        "<h2>Report</h2><p>A <a href='https://x.org'>link</a></p><ul><li>one</li></ul>"
        "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
    )
    every = {"text/markdown": "**md**", "text/plain": "plain", "text/html": "<b>html</b>"}
    results = [
        await run(jp_fetch, display_code(every)),
        await run(jp_fetch, display_code({"text/plain": "plain", "text/html": "<b>html</b>"})),
        await run(jp_fetch, display_code({"text/html": html})),
    ]

    assert [r["text"] for r in results] == [
        "**md**",
        "plain",
        "## Report\n\nA [link](https://x.org)\n\n- one\n\n| k | v |\n| --- | --- |\n| a | 1 |",
    ]


@pytest.mark.slow
async def test_images_and_json_are_captured_as_structured_outputs(jp_fetch):
    code = (
        "from IPython.display import display\n"
        f"display({{'image/png': {PNG!r}, 'text/plain': '<Figure>'}}, raw=True)\n"
        "display({'application/json': {'rows': [1, 2]}, 'text/plain': 'rows'}, raw=True)"
    )
    result = await run(jp_fetch, code)

    size = len(base64.b64decode(PNG))
    assert result["images"] == [
        {
            "mimeType": "image/png",
            "data": PNG,
            "width": 1,
            "height": 1,
            "bytes": size,
            "artifactId": result["images"][0]["artifactId"],
            "omitted": False,
        }
    ]
    assert result["jsonOutputs"] == [{"rows": [1, 2]}]
    assert result["text"] == f"<Figure>\nrows\n[image 1: 1x1 PNG, {size}B]"


@pytest.mark.slow
async def test_status_helper_emits_status_events_and_no_text(jp_fetch):
    result = await run(jp_fetch, "status('load', rows=3)\nstatus('done')")

    assert result["statusEvents"] == [{"op": "load", "rows": 3}, {"op": "done"}]
    assert result["cells"][0]["statusEvents"] == result["statusEvents"]
    assert result["text"] == "(no output)"


async def test_kernel_environment_has_cwd_env_and_sys_path(jp_fetch, jp_root_dir):
    (jp_root_dir / "pkg").mkdir()
    (jp_root_dir / "pkg" / "helper_mod.py").write_text("VALUE = 7\n")
    code = (
        "import os, sys, json, helper_mod\n"
        "print(json.dumps({'cwd': os.getcwd(), 'path0': sys.path[0], "
        "'artifacts': os.environ['ARTIFACTS'], 'state': os.environ['PI_SESSION_FILE'], "
        "'value': helper_mod.VALUE, 'helpers': [callable(status), callable(output)]}))"
    )
    result = await run(jp_fetch, code, cwd="pkg")

    seen = json.loads(result["text"])
    pkg = os.path.realpath(jp_root_dir / "pkg")
    assert os.path.realpath(seen["cwd"]) == pkg
    assert os.path.realpath(seen["path0"]) == pkg
    assert os.path.realpath(seen["artifacts"]) == os.path.realpath(jp_root_dir / ".xcsh-artifacts")
    assert seen["state"]
    assert seen["value"] == 7
    assert seen["helpers"] == [True, True]


async def test_working_directory_errors_are_exact_400s(jp_fetch, jp_root_dir):
    (jp_root_dir / "file.txt").write_text("x")
    call = tool(jp_fetch)

    assert await call({"cells": [], "cwd": "missing"}) == (
        400,
        {"message": "Working directory does not exist: missing", "reason": None},
    )
    status, body = await call({"cells": [], "cwd": "file.txt"})
    assert (status, body["message"]) == (400, "Working directory is not a directory: file.txt")


@pytest.mark.slow
async def test_hidden_working_directories_follow_the_servers_hidden_file_policy(
    jp_fetch, jp_root_dir, jp_serverapp, tmp_path
):
    (jp_root_dir / ".private" / "sub").mkdir(parents=True)
    (jp_root_dir / "out").symlink_to(tmp_path)
    call = tool(jp_fetch)
    for cwd in (".private", ".private/sub"):
        status, body = await call({"cells": [], "cwd": cwd})
        assert (status, body["message"]) == (400, f"Working directory does not exist: {cwd}")
    status, body = await call({"cells": [], "cwd": "out"})
    assert (status, body["message"]) == (403, "Working directory is outside the server root: out")
    jp_serverapp.contents_manager.allow_hidden = True
    assert (await call({"cells": [], "cwd": ".private"}))[0] == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "cells is required"),
        ({"cells": "print(1)"}, "cells must be an array of {code, title?} objects"),
        ({"cells": [{"code": 1}]}, "cells[0].code must be a string"),
        ({"cells": [], "timeout": "5"}, "timeout must be a number of seconds"),
        ({"cells": [], "mode": "forever"}, "mode must be 'session' or 'per-call', not 'forever'"),
        ({"cells": [], "reset": "yes"}, "reset must be a boolean"),
        (
            {"cells": [], "colour": 1},
            "Unknown field(s): colour (fields: cells, cwd, kernel_name, mode, notebook_path, "
            "reset, session, stdin, timeout)",
        ),
        (
            {"code": "1 + 1"},
            'Unknown field(s): code (did you mean cells: [{"code": ...}]? '
            "fields: cells, cwd, kernel_name, mode, notebook_path, reset, session, stdin, timeout)",
        ),
    ],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_malformed_bodies_are_400s_that_say_why(jp_fetch, body, message, transport):
    status, result = await tool(jp_fetch, transport)(body)

    assert (status, result["message"]) == (400, message)


@pytest.mark.slow
async def test_reset_restarts_the_kernel_before_the_first_cell_only(jp_fetch):
    await run(jp_fetch, "x = 1")
    result = await run(jp_fetch, "'x' in globals()", "x = 2", "x", reset=True)

    assert result["text"] == "[1/3]\nFalse\n\n[2/3] (ok)\n\n[3/3]\n2"
    assert result["session"]["restartCount"] == 1
    assert result["session"]["stateLost"] is True


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_timeout_interrupts_the_cell_and_the_session_stays_usable(jp_fetch, transport):
    await run(jp_fetch, "kept = 'yes'", transport=transport)
    code = "print('started')\nimport time\ntime.sleep(60)"
    result = await run(jp_fetch, code, timeout=2, transport=transport)

    assert result["timedOut"] is True
    assert result["cancelled"] is True
    assert result["isError"] is True
    assert result["text"].startswith("[Command timed out after 2 seconds]\nstarted\n")
    assert (result["cells"][0]["status"], result["cells"][0]["exitCode"]) == ("error", None)
    after = await run(jp_fetch, "print(kept)", transport=transport)
    assert after["text"] == "yes"
    assert after["session"]["stateLost"] is False


@pytest.mark.slow
async def test_timeout_is_one_deadline_for_all_cells_and_is_clamped(jp_fetch):
    await run(jp_fetch, "import time")
    # timeout 0.01 is clamped to 1 s; the first cell takes ~0.6 s of it, so the second cell
    # starts with about 0.4 s left and is cut there; the notice says at least 1 second.
    result = await run(jp_fetch, "time.sleep(0.6)", "time.sleep(5)", timeout=0.01)

    assert result["timedOut"] is True
    assert [c["status"] for c in result["cells"]] == ["complete", "error"]
    assert [c["exitCode"] for c in result["cells"]] == [0, None]
    assert result["text"].startswith("[Command timed out after 1 seconds]\n")


async def test_large_output_is_truncated_and_spilled_byte_exact(jp_fetch, jp_root_dir):
    # 2 MiB of numbered lines, far past what is kept in memory.
    code = "import sys\n_ = sys.stdout.write(''.join(f'{i:07d}\\n' for i in range(262144)))"
    # A generous deadline: this is about the bound, not the time, and a kernel started on a
    # loaded machine's gateway has taken most of the default 30 s (CI, fast paths off).
    result = await run(jp_fetch, code, timeout=120)

    expected = "".join(f"{i:07d}\n" for i in range(262144)).encode()
    assert result["truncated"] is True, {k: str(v)[:300] for k, v in result.items()}
    assert result["totalBytes"] == len(expected)
    assert result["totalLines"] == 262145
    assert result["outputBytes"] <= 8192
    artifact_id = result["artifactId"]
    lines = result["text"].split("\n")
    assert lines[0] == (
        "[Output truncated: 262144 lines, 2.0MB; showing lines 1-20 and 262085-262144. "
        f"Full output: artifact://{artifact_id} (read it with the artifact tool, offset/limit "
        "in lines)]"
    )
    assert lines[1:] == [
        *(f"{i:07d}" for i in range(20)),
        "[... lines 21-262084 left out ...]",
        *(f"{i:07d}" for i in range(262084, 262144)),
    ]
    assert (jp_root_dir / result["artifactPath"]).read_bytes() == expected
    read_back = await run(jp_fetch, f"print(len(output('artifact://{artifact_id}')))")
    assert read_back["text"] == str(len(expected))


@pytest.mark.slow
async def test_stop_extension_shuts_down_every_session_kernel(jp_fetch, jp_serverapp):
    await run(jp_fetch, "1")
    await run(jp_fetch, "2", session="other")
    assert len(jp_serverapp.kernel_manager.list_kernel_ids()) == 2

    await jp_serverapp.extension_manager.stop_all_extensions()

    assert jp_serverapp.kernel_manager.list_kernel_ids() == []


async def test_an_unknown_kernel_name_is_a_400_that_leaves_the_session_alone(jp_fetch):
    first = await run(jp_fetch, "x = 41")
    call = tool(jp_fetch)

    status, body = await call({"cells": [{"code": "1"}], "kernel_name": "nope"})
    assert (status, body["message"]) == (400, "No such kernel: nope")
    status, body = await call({"cells": [{"code": "1"}], "session": "new", "kernel_name": "nope"})
    assert (status, body["message"]) == (400, "No such kernel: nope")

    after = await run(jp_fetch, "x + 1")
    assert after["text"] == "42"
    assert after["session"]["kernelId"] == first["session"]["kernelId"]
    assert after["session"]["stateLost"] is False
    listed = await sessions(jp_fetch)
    assert [(s["name"], s["kernelId"], s["kernelName"]) for s in listed] == [
        ("default", first["session"]["kernelId"], first["session"]["kernelName"])
    ]


@pytest.mark.slow
async def test_the_session_state_file_can_be_written_by_the_kernel(jp_fetch):
    code = (
        "import os\n"
        "with open(os.environ['PI_SESSION_FILE'], 'w') as f:\n"
        "    f.write('{}')\n"
        "print(open(os.environ['PI_SESSION_FILE']).read())"
    )
    result = await run(jp_fetch, code)

    assert result["isError"] is False, result["text"]
    assert result["text"] == "{}"


def test_timeout_is_clamped_to_600_seconds(tmp_path):
    from jupyter_xcsh.execution.python.request import parse_python_request

    def timeout(value):
        body = {"cells": [], "timeout": value}
        return parse_python_request(body, root_dir=str(tmp_path), default_mode="session").timeout

    assert timeout(10000) == 600
    assert timeout(600) == 600
    assert timeout(599.5) == 599.5
    assert timeout(0) == 1

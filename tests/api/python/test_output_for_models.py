"""What a model reads of a call's output, on real kernels (docs/developers/contract.md §7.1, §7.6,
§8.1).

The python tool and runs in place, over REST and MCP alike: a long output cut on line
boundaries with its notice first, its head and its tail; no escape sequence anywhere; a
traceback folded with its full text in an artifact; a prompt for input answered by one line
saying how to answer.
"""

from __future__ import annotations

import json
import re

import pytest

from jupyter_xcsh.execution.kernel.stdin import stdin_notice
from jupyter_xcsh.outputs.sizes import format_size
from tests.support.inplace import run_ok, write_notebook
from tests.support.mcp_client import call_tool
from tests.support.python_tool import run

pytestmark = pytest.mark.timeout(300)

#: The issue's noisy step: 5,000 coloured lines.
NOISY = "for i in range(5000): print(f'line {i}: \\x1b[31mred\\x1b[0m value={i*i}')"
NOISY_RAW = "".join(f"line {i}: \x1b[31mred\x1b[0m value={i * i}\n" for i in range(5000))
KEY_ERROR = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ndf['missing_column']"
RECURSION = "def f(n):\n    return f(n + 1)\nf(0)"


def no_escapes(value: object) -> bool:
    """Whether no ESC (nor any C1 control) is anywhere in a JSON value."""
    return not re.search(r"\\u001b|\\u009b|\x1b", json.dumps(value))


def check_noisy_text(text: str) -> str:
    """Check the text of the noisy step; return the artifact id its notice names."""
    lines = text.split("\n")
    notice = re.fullmatch(
        rf"\[Output truncated: 5000 lines, {re.escape(format_size(len(NOISY_RAW)))}; showing "
        r"lines 1-20 and 4941-5000\. Full output: artifact://(\S+) \(read it with the artifact "
        r"tool, offset/limit in lines\)\]",
        lines[0],
    )
    assert notice is not None, lines[0]
    assert lines[1:21] == [f"line {i}: red value={i * i}" for i in range(20)]
    assert lines[21] == "[... lines 21-4940 left out ...]"
    assert lines[22:82] == [f"line {i}: red value={i * i}" for i in range(4940, 5000)]
    assert len(text) < 3000  # the tail of 50 KiB was 39,494 characters
    return notice.group(1)


async def test_five_thousand_noisy_lines_cost_a_few_kb_notice_first_head_and_tail(
    jp_fetch, jp_root_dir
):
    result = await run(jp_fetch, NOISY)

    artifact_id = check_noisy_text(result["text"])
    assert result["artifactId"] == artifact_id
    assert (jp_root_dir / result["artifactPath"]).read_text() == NOISY_RAW  # raw, whole
    assert result["cells"][0]["output"] == result["text"] + "\n"
    assert (result["truncated"], result["totalLines"], result["outputLines"]) == (True, 5001, 81)
    assert no_escapes(result)


@pytest.mark.slow
async def test_over_mcp_the_same_text_and_the_artifact_tool_pages_it_as_plain_lines(jp_fetch):
    result = await call_tool(jp_fetch, "python", {"cells": [{"code": NOISY}]})

    text = result["content"][0]["text"]
    artifact_id = check_noisy_text(text)
    assert no_escapes(result)
    page = await call_tool(jp_fetch, "artifact", {"id": artifact_id, "offset": 21, "limit": 2})
    assert page["content"][0]["text"] == "line 20: red value=400\nline 21: red value=441\n"


@pytest.mark.slow
async def test_a_pandas_key_error_is_folded_and_its_full_traceback_kept(jp_fetch, jp_root_dir):
    result = await run(jp_fetch, KEY_ERROR)

    text = result["text"]
    error = result["cells"][0]["error"]
    assert text.startswith(
        "[Traceback folded: 6 library frames on one line; full traceback: "
        f"artifact://{error['artifactId']}]\nTraceback (most recent call last):\n"
    )
    assert "----> 3 df['missing_column']" in text  # the user's frame, whole
    assert re.search(r"^File pandas/_libs/index\.pyx:\d+, in \S+\(\)$", text, re.M)
    assert "Could not get source" not in text and "-" * 20 not in text
    assert text.endswith("KeyError: 'missing_column'\n\nCommand exited with code 1")
    assert len(text) < 2000  # 2,538 characters unfolded
    saved = jp_root_dir / ".xcsh-artifacts" / f"{error['artifactId']}.python.log"
    assert saved.read_text() == "\n".join(error["traceback"]) + "\n"
    assert "Could not get source" in saved.read_text()  # the full text, every frame
    assert error["ename"] == "KeyError" and no_escapes(result)


@pytest.mark.slow
async def test_a_recursion_error_shows_its_repeated_frame_once(jp_fetch):
    result = await run(jp_fetch, RECURSION)

    text = result["text"]
    repeated = re.search(r"\[\.\.\. previous frame repeated (\d+) times\]", text)
    assert repeated is not None and int(repeated.group(1)) > 500
    assert text.count("----> 2     return f(n + 1)") == 1
    assert text.endswith(
        "RecursionError: maximum recursion depth exceeded\n\nCommand exited with code 1"
    )
    assert len(text) < 1000  # 17,867 characters unfolded
    assert len(result["cells"][0]["error"]["traceback"]) > 500  # REST keeps every frame
    assert no_escapes(result)


async def test_a_prompt_for_input_gets_one_line_saying_how_to_answer_and_no_traceback(jp_fetch):
    result = await run(jp_fetch, "x = input('name? ')")

    assert result["text"] == stdin_notice("name? ") + "\n\nCommand exited with code 1"
    cell = result["cells"][0]
    assert (cell["status"], cell["exitCode"], cell["error"]["ename"]) == ("error", 1, "EOFError")
    assert (result["isError"], result["stdinRequested"]) == (True, True)


async def test_a_run_in_place_shows_the_same_text_and_the_notebook_keeps_everything(
    jp_fetch, jp_root_dir
):
    path = jp_root_dir / "noisy.ipynb"
    write_notebook(path, NOISY, KEY_ERROR, "input('name? ')")

    noisy = await run_ok(jp_fetch, notebook_path="noisy.ipynb", cell_index=0)
    failed = await run_ok(jp_fetch, notebook_path="noisy.ipynb", cell_index=1)
    asked = await run_ok(jp_fetch, notebook_path="noisy.ipynb", cell_index=2)

    check_noisy_text(noisy["text"])
    assert no_escapes(noisy)
    assert failed["text"].startswith("[Traceback folded: 6 library frames on one line; ")
    assert "Could not get source" not in failed["text"]
    assert failed["text"].endswith("KeyError: 'missing_column'\n\nCommand exited with code 1")
    assert no_escapes(failed)
    assert asked["text"] == stdin_notice("name? ") + "\n\nCommand exited with code 1"
    # The notebook keeps what the kernel sent, for the person: colours, the whole traceback.
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[0]["outputs"][0]["text"]) == NOISY_RAW
    assert any("Could not get source" in line for line in cells[1]["outputs"][0]["traceback"])

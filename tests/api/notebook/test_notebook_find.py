"""``find`` over HTTP and MCP (docs/developers/contract.md §2.10): matches, filters, bounds."""

from __future__ import annotations

import asyncio
import re

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell
from traitlets.config import Config

from tests.support.mcp_client import TRANSPORTS
from tests.support.notebooks import jupyter_text
from tests.support.openapi_check import assert_response_matches

pytestmark = pytest.mark.timeout(120)

ENDPOINT = "/api/xcsh/notebook"
P = "f.ipynb"


@pytest.fixture
def notebook(jp_root_dir):
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Cleaning\nWe build df_clean here.", id="m0"),
            new_code_cell("import pandas as pd\ndf = pd.read_csv('x')", id="c1"),
            new_code_cell("df_clean = df.dropna()\nprint(df_clean.shape)\ndf_clean", id="c2"),
            new_raw_cell("df_clean raw", id="r3"),
            new_code_cell("def clean(df):\n    return df", id="c4"),
        ]
    )
    path = jp_root_dir / P
    path.write_text(jupyter_text(nb), encoding="utf-8")
    return path


async def _call(notebook_tool, status, **body):
    got, result = await notebook_tool({"action": "find", "notebook_path": P, **body})
    assert got == status, result
    assert_response_matches(ENDPOINT, "POST", status, result)
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_find_lists_matching_cells_with_their_lines_and_hashes(notebook_tool, notebook):
    before = notebook.read_bytes()

    result = await _call(notebook_tool, 200, pattern="df_clean")

    details = result["details"]
    assert [(m["index"], m["cellId"], m["cellType"]) for m in details["matches"]] == [
        (0, "m0", "markdown"),
        (2, "c2", "code"),
        (3, "r3", "raw"),
    ]
    assert details["matches"][1]["lines"] == [
        {"line": 1, "text": "df_clean = df.dropna()"},
        {"line": 2, "text": "print(df_clean.shape)"},
        {"line": 3, "text": "df_clean"},
    ]
    assert details["matchedCells"] == 3 and details["matchedLines"] == 5
    assert details["truncated"] is False and details["via"] == "file"
    # The hashes are those read gives: a change can be guarded with them right away.
    read = await _ok_read(notebook_tool)
    hashes = {c["cellId"]: c["sourceHash"] for c in read["details"]["cells"]}
    assert all(m["sourceHash"] == hashes[m["cellId"]] for m in details["matches"])
    assert details["revision"] == read["details"]["revision"]
    assert result["text"].splitlines() == [
        f"Found text 'df_clean' on 5 lines of 3 cells in {P} (searched cells 0-4 of 5)",
        "--- cell 0 · markdown · id m0 ---",
        "2: We build df_clean here.",
        "--- cell 2 · code · id c2 ---",
        "1: df_clean = df.dropna()",
        "2: print(df_clean.shape)",
        "3: df_clean",
        "--- cell 3 · raw · id r3 ---",
        "1: df_clean raw",
    ]
    assert notebook.read_bytes() == before


async def _ok_read(notebook_tool):
    status, result = await notebook_tool({"action": "read", "notebook_path": P})
    assert status == 200, result
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_find_by_regex_and_by_cell_type(notebook_tool, notebook):
    result = await _call(notebook_tool, 200, pattern=r"^def \w+\(", regex=True)
    assert [(m["index"], m["lines"]) for m in result["details"]["matches"]] == [
        (4, [{"line": 1, "text": "def clean(df):"}])
    ]
    assert result["text"].startswith("Found regex '^def \\\\w+\\\\(' on 1 line of 1 cell")

    code = await _call(notebook_tool, 200, pattern="df_clean", cell_type="code")
    assert [m["index"] for m in code["details"]["matches"]] == [2]
    assert "(searched code cells 0-4 of 5)" in code["text"]
    markdown = await _call(notebook_tool, 200, pattern="clean", cell_type="markdown")
    assert [m["index"] for m in markdown["details"]["matches"]] == [0]


async def test_a_find_without_matches_says_so(notebook_tool, notebook):
    result = await _call(notebook_tool, 200, pattern="nowhere")

    assert result["text"] == f"No match for text 'nowhere' in {P} (searched cells 0-4 of 5)"
    assert result["details"]["matches"] == []


async def test_a_literal_pattern_is_not_a_regex(notebook_tool, notebook):
    result = await _call(notebook_tool, 200, pattern="df.dropna()")
    assert [m["index"] for m in result["details"]["matches"]] == [2]
    assert (await _call(notebook_tool, 200, pattern="df.clean"))["details"]["matches"] == []


async def test_a_bad_regex_is_a_400_naming_the_error(notebook_tool, notebook):
    try:
        re.compile("(df")
    except re.error as e:
        expected = f"Invalid regex: {e}"

    result = await _call(notebook_tool, 400, pattern="(df", regex=True)

    assert (
        result["message"]
        == expected
        == "Invalid regex: missing ), unterminated subpattern at position 0"
    )


async def test_matches_are_bounded_with_a_continue_notice(notebook_tool, jp_root_dir):
    cells = [new_code_cell(f"value_{i} = {i}  # needle " + "x" * 60) for i in range(40)]
    (jp_root_dir / "many.ipynb").write_text(jupyter_text(new_notebook(cells=cells)))

    found, start = [], 0
    while True:
        status, result = await notebook_tool(
            {"action": "find", "notebook_path": "many.ipynb", "pattern": "needle",
             "max_chars": 600, "cell_index": start}
        )  # fmt: skip
        assert status == 200, result
        details = result["details"]
        found += [m["index"] for m in details["matches"]]
        if not details["truncated"]:
            break
        stop = details["endIndex"]
        assert result["text"].endswith(f"(600 character budget). Continue with cell_index={stop}]")
        assert len(details["matches"]) < 40 and stop > start
        start = stop

    assert found == list(range(40))


async def test_a_cell_with_many_matching_lines_shows_the_first_and_counts_the_rest(
    notebook_tool, jp_root_dir
):
    cell = new_code_cell("\n".join(f"hit {i}" for i in range(100)))
    (jp_root_dir / "long.ipynb").write_text(jupyter_text(new_notebook(cells=[cell])))

    status, result = await notebook_tool(
        {"action": "find", "notebook_path": "long.ipynb", "pattern": "hit"}
    )

    assert status == 200, result
    [match] = result["details"]["matches"]
    assert match["matchCount"] == 100 and len(match["lines"]) == 20
    assert result["text"].endswith("… 80 more matching lines in this cell")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "pattern is required for find action"),
        ({"pattern": ""}, "pattern must not be empty"),
        ({"pattern": "x" * 1001}, "pattern must be at most 1000 characters, got 1001"),
        ({"pattern": "x", "regex": "yes"}, "regex must be a boolean, got string: 'yes'"),
        ({"pattern": 3}, "pattern must be a string, got integer: 3"),
        (
            {"pattern": "x", "content": "y"},
            "Field content is not accepted by the find action (find takes: notebook_path, "
            "cell_index, cell_type, end_index, max_chars, pattern, regex)",
        ),
        (
            {"pattern": "x", "cell_type": "code block"},
            "Invalid cell_type: code block (expected one of code, markdown, raw)",
        ),
        ({"pattern": "x", "cell_index": 9}, f"Cell index 9 out of range (0-5) in {P}"),
    ],
)
async def test_malformed_finds_are_400s(notebook_tool, notebook, body, message):
    result = await _call(notebook_tool, 400, **body)
    assert result["message"] == message


def _find_timeout(seconds: float):
    """A ``jp_server_config`` fixture (for a test class) with ``find_timeout = seconds``."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.find_timeout = seconds
        return config

    return jp_server_config


@pytest.fixture
def runaway_find(jp_root_dir):
    """A regex find that backtracks until its deadline, in ``slow.ipynb`` (cell 1: ``x = 1``)."""
    # (a+)+$ against 40 a's and a "!" backtracks through 2^40 splits: hours in Python's re.
    cells = [new_code_cell("a" * 40 + "!"), new_code_cell("x = 1")]
    (jp_root_dir / "slow.ipynb").write_text(jupyter_text(new_notebook(cells=cells)))
    return {"action": "find", "notebook_path": "slow.ipynb", "pattern": "(a+)+$", "regex": True}


class TestRunawayRegex:
    jp_server_config = _find_timeout(1.0)

    async def test_a_catastrophic_regex_is_stopped_and_the_server_keeps_answering(
        self, notebook_tool, runaway_find
    ):
        body = runaway_find
        warm = {**body, "pattern": "x"}  # the search process is started: only searching remains
        assert (await notebook_tool(warm))[0] == 200
        runaway = asyncio.ensure_future(notebook_tool(body))
        # While the search runs, the server answers other requests: its event loop is free.
        answered_meanwhile = 0
        while not runaway.done():
            status, read = await notebook_tool({"action": "read", "notebook_path": "slow.ipynb"})
            assert status == 200, read
            answered_meanwhile += not runaway.done()
        status, result = await runaway

        assert status == 400, result
        assert result["message"] == (
            "Regex search stopped after 1 seconds in slow.ipynb: the pattern backtracks too "
            "much (nested repetition such as (a+)+ can take exponential time); simplify it"
        )
        assert answered_meanwhile > 0
        # (Promptly: the 1 s deadline, not the hours of backtracking; the timeout mark bounds it.)
        # The search process was replaced: the next regex find works.
        body["pattern"] = r"^x = \d$"
        status, result = await notebook_tool(body)
        assert status == 200, result
        assert [m["index"] for m in result["details"]["matches"]] == [1]


class TestRunawayRegexesOfOthers:
    jp_server_config = _find_timeout(4.0)

    @pytest.mark.slow
    async def test_runaway_regexes_do_not_hold_up_another_callers_find(
        self, notebook_tool, runaway_find
    ):
        # Six searches that backtrack until their 4 s deadline, then a harmless regex find: it
        # must not queue behind them (two shared search processes made it wait 12 s).
        body = runaway_find
        assert (await notebook_tool({**body, "pattern": "x"}))[0] == 200  # processes started
        runaways = [asyncio.ensure_future(notebook_tool(body)) for _ in range(6)]
        await asyncio.sleep(0.5)  # every runaway is in its search by now

        start = asyncio.get_running_loop().time()
        status, result = await notebook_tool({**body, "pattern": r"^x = \d$"})
        waited = asyncio.get_running_loop().time() - start

        assert status == 200, result
        assert [m["index"] for m in result["details"]["matches"]] == [1]
        # Answered while every runaway still runs (they cannot end before their 4 s deadline),
        # and within a bound that leaves room for a loaded 2-core machine.
        assert not any(r.done() for r in runaways)
        assert waited < 1.5, waited
        statuses = [status for status, _ in await asyncio.gather(*runaways)]
        assert statuses == [400] * 6

"""Cells named by their execution count (``[12]``) in the notebook tool's read, edit and run."""

from __future__ import annotations

import json

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from tests.support.inplace import call_run, run_ok, write_notebook
from tests.support.mcp_client import TRANSPORTS

pytestmark = pytest.mark.timeout(300)


def counted(source: str, count: int | None, cell_id: str):
    cell = new_code_cell(source, id=cell_id)
    cell.execution_count = count
    return cell


def write_counted(path) -> None:
    write_notebook(
        path,
        new_markdown_cell("# Title", id="m"),
        counted("x = 1", 3, "a"),
        counted("print(40 + 2)", 12, "b"),
        counted("y = 2", None, "c"),
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_read_starts_at_the_cell_with_that_execution_count(
    notebook_tool, jp_root_dir, transport
):
    write_counted(jp_root_dir / "n.ipynb")

    status, result = await notebook_tool(
        {"action": "read", "notebook_path": "n.ipynb", "execution_count": 12}
    )

    assert status == 200, result
    assert result["details"]["startIndex"] == 2
    assert result["details"]["cells"][0]["cellId"] == "b"
    assert result["text"].splitlines()[1] == "--- cell 2 · code · id b · [12] ---"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_edit_changes_the_cell_with_that_execution_count(
    notebook_tool, jp_root_dir, transport
):
    path = jp_root_dir / "e.ipynb"
    write_counted(path)

    status, result = await notebook_tool(
        {"action": "edit", "notebook_path": "e.ipynb", "execution_count": 3, "content": "x = 9"}
    )

    assert status == 200, result
    assert result["details"]["cellIndex"] == 1
    cells = json.loads(path.read_text())["cells"]
    assert cells[1]["source"] == ["x = 9"] and cells[2]["source"] == ["print(40 + 2)"]


async def test_no_cell_with_that_count_is_404_and_several_are_400(notebook_tool, jp_root_dir):
    write_counted(jp_root_dir / "n.ipynb")
    write_notebook(jp_root_dir / "twice.ipynb", counted("a = 1", 1, "p"), counted("b = 2", 1, "q"))

    missing = await notebook_tool(
        {"action": "read", "notebook_path": "n.ipynb", "execution_count": 99}
    )
    several = await notebook_tool(
        {"action": "edit", "notebook_path": "twice.ipynb", "execution_count": 1, "content": ""}
    )

    assert missing == (
        404,
        {"message": "No cell with execution count [99] in n.ipynb", "reason": None},
    )
    assert several[0] == 400
    assert several[1]["message"] == (
        "Several cells have execution count [1] in twice.ipynb (cells 0, 1): address one by "
        "cell_id or cell_index"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"action": "read", "execution_count": 3, "cell_index": 1},
            "Give one of cell_index, cell_id or execution_count to address a cell",
        ),
        (
            {"action": "edit", "execution_count": 3, "cell_id": "a", "content": ""},
            "Give one of cell_index, cell_id or execution_count to address a cell",
        ),
        ({"action": "read", "execution_count": 0}, "execution_count must be positive, got 0"),
        (
            {"action": "insert", "execution_count": 3, "cell_index": 0, "content": ""},
            "Field execution_count is not accepted by the insert action (insert takes: ",
        ),
        ({"action": "read", "execution_count": "3"}, "execution_count must be an integer"),
        ({"action": "edit", "content": ""}, "cell_index, cell_id or execution_count is required"),
    ],
)
async def test_bad_execution_counts_are_400(notebook_tool, jp_root_dir, body, message):
    write_counted(jp_root_dir / "n.ipynb")

    status, result = await notebook_tool({"notebook_path": "n.ipynb", **body})

    assert status == 400, result
    assert result["message"].startswith(message), result["message"]


async def test_run_runs_the_cell_with_that_execution_count(jp_fetch, jp_root_dir):
    path = jp_root_dir / "r.ipynb"
    write_counted(path)
    write_notebook(jp_root_dir / "twice.ipynb", counted("a = 1", 1, "p"), counted("b = 2", 1, "q"))

    result = await run_ok(jp_fetch, notebook_path="r.ipynb", execution_count=12)
    missing = await call_run(jp_fetch, {"notebook_path": "r.ipynb", "execution_count": 99})
    several = await call_run(jp_fetch, {"notebook_path": "twice.ipynb", "execution_count": 1})
    both = await call_run(
        jp_fetch, {"notebook_path": "r.ipynb", "execution_count": 12, "cell_index": 2}
    )

    assert result["text"] == "42"
    assert result["cells"][0]["cellId"] == "b"
    assert missing == (
        404,
        {"message": "No cell with execution count [99] in r.ipynb", "reason": None},
    )
    assert several[0] == 400 and several[1]["message"].startswith("Several cells have")
    assert both[0] == 400 and both[1]["message"].startswith("Give exactly one of")
    # It ran in this kernel as [1]: that is its count now, and it is addressed so again.
    saved = json.loads(path.read_text())["cells"][2]
    assert saved["execution_count"] == 1
    again = await run_ok(jp_fetch, notebook_path="r.ipynb", execution_count=1)
    assert again["cells"][0]["cellId"] == "b"

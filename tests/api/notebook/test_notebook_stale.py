"""Stale cells: read marks them, run with ``stale: true`` re-runs exactly them, in order."""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell

from jupyter_xcsh.notebook.stale import cell_names, code_hash, stale_cells
from tests.support.inplace import call_run, run_ok, write_notebook
from tests.support.mcp_client import TRANSPORTS

pytestmark = pytest.mark.timeout(300)


async def read(notebook_tool, path: str) -> dict:
    status, result = await notebook_tool({"action": "read", "notebook_path": path})
    assert status == 200, result
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_changed_source_makes_the_cell_and_its_users_stale(
    notebook_tool, jp_fetch, jp_root_dir, transport
):
    write_notebook(jp_root_dir / "s.ipynb", "x = 1", "y = x + 1", "print(y)", "z = 0")
    await run_ok(jp_fetch, notebook_path="s.ipynb", all=True)
    assert (await read(notebook_tool, "s.ipynb"))["details"]["staleCells"] == []

    status, _ = await notebook_tool(
        {"action": "edit", "notebook_path": "s.ipynb", "cell_index": 0, "content": "x = 10"}
    )
    result = await read(notebook_tool, "s.ipynb")

    assert status == 200
    details = result["details"]
    assert details["staleCells"] == [0, 1, 2]
    cells = details["cells"]
    assert cells[0]["staleReason"] == "its source changed since it ran as [1]"
    assert cells[1]["staleReason"] == "it uses x, defined by cell 0, which is stale"
    assert cells[2]["stale"] is True and "stale" not in cells[3]
    assert "--- cell 0 · code · id c0 · [1] · stale: its source changed" in result["text"]


async def test_run_stale_reruns_exactly_the_stale_cells_in_order(
    notebook_tool, jp_fetch, jp_root_dir
):
    write_notebook(jp_root_dir / "r.ipynb", "x = 1", "y = x + 1", "print(y)", "print('other')")
    await run_ok(jp_fetch, notebook_path="r.ipynb", all=True)
    await notebook_tool(
        {"action": "edit", "notebook_path": "r.ipynb", "cell_index": 0, "content": "x = 10"}
    )

    result = await run_ok(jp_fetch, notebook_path="r.ipynb", stale=True)

    assert [c["cellId"] for c in result["cells"]] == ["c0", "c1", "c2"]
    assert result["text"].endswith("[3/3] cell 2\n11")
    after = await read(notebook_tool, "r.ipynb")
    assert after["details"]["staleCells"] == []
    nothing = await run_ok(jp_fetch, notebook_path="r.ipynb", stale=True)
    assert nothing["cells"] == []
    assert nothing["text"] == "No stale cells: nothing was run"


async def test_a_cell_that_reran_after_its_user_makes_the_user_stale(
    notebook_tool, jp_fetch, jp_root_dir
):
    write_notebook(jp_root_dir / "a.ipynb", "x = 1", "print(x)", "import os\nprint(os.sep)")
    await run_ok(jp_fetch, notebook_path="a.ipynb", all=True)
    await run_ok(jp_fetch, notebook_path="a.ipynb", cell_index=0)  # [4], after print(x)'s [2]

    result = await read(notebook_tool, "a.ipynb")

    assert result["details"]["staleCells"] == [1]
    assert result["details"]["cells"][1]["staleReason"] == (
        "it uses x, which cell 0 redefined after it ran ([4])"
    )


async def test_counts_alone_mark_a_cell_run_before_the_cell_it_uses(notebook_tool, jp_root_dir):
    # No kernel: what ran is known from the counts in the file only.
    early = new_code_cell("print(total)", id="u")
    early.execution_count = 1
    late = new_code_cell("total = 3\n%time pass", id="d")
    late.execution_count = 2
    write_notebook(jp_root_dir / "f.ipynb", late, early)

    result = await read(notebook_tool, "f.ipynb")

    assert result["details"]["staleCells"] == [1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"stale": "yes"}, "stale must be a boolean"),
        ({"stale": True, "cell_index": 0}, "Give exactly one of"),
        (
            {"stale": True, "expected_source_hash": "0123456789abcdef"},
            "expected_source_hash needs a single cell",
        ),
    ],
)
async def test_bad_stale_runs_are_400(jp_fetch, jp_root_dir, body, message):
    write_notebook(jp_root_dir / "b.ipynb", "x = 1")

    status, result = await call_run(jp_fetch, {"notebook_path": "b.ipynb", **body})

    assert status == 400 and result["message"].startswith(message), result


def code(source: str, count: int | None) -> dict:
    return {"cell_type": "code", "execution_count": count, "source": source}


def test_a_cell_whose_count_the_current_kernel_gave_another_cell_ran_in_an_earlier_kernel():
    cells = [code("x = 1", 1), code("y = 2", 1)]

    assert stale_cells(cells, {1: code_hash("y = 2")}.get) == {
        0: "it ran as [1] in an earlier kernel"
    }


def test_magics_and_shell_escapes_do_not_hide_a_cells_names():
    names = cell_names("%matplotlib inline\n!ls\nimport pandas as pd\ndf = pd.DataFrame(data)")

    assert names is not None
    assert {"pd", "df"} <= names.defines and "data" in names.uses
    assert cell_names("def (") is None


def test_a_cell_that_never_ran_or_a_name_it_defines_itself_marks_nothing():
    cells = [code("x = 1", 2), code("x = 0\nprint(x)", 1), code("x = 5", None)]

    assert stale_cells(cells) == {}

"""Runs in place guarded by what the agent read (docs/developers/contract.md §3, §6)."""

from __future__ import annotations

import pytest

from jupyter_xcsh.notebook.model import revision_of, source_hash
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.inplace import call_run, run_ok, sessions, write_notebook

pytestmark = pytest.mark.timeout(300)


def _revision(path) -> str:
    return revision_of(NotebookDocument.parse(path.read_text()))


async def test_a_run_expecting_the_current_state_runs_and_says_the_revision(jp_fetch, jp_root_dir):
    path = jp_root_dir / "g.ipynb"
    write_notebook(path, "x = 6 * 7", "print(x)")
    revision = _revision(path)

    result = await run_ok(
        jp_fetch,
        notebook_path="g.ipynb",
        cell_id="c1",
        expected_revision=revision,
        expected_source_hash=source_hash("print(x)"),
    )

    assert result["isError"] is True  # x is not defined yet: the code ran
    assert result["cells"][0]["error"]["ename"] == "NameError"
    # Outputs and execution counts never change the revision.
    assert result["notebook"]["revision"] == revision == _revision(path)


async def test_a_notebook_changed_since_it_was_read_is_a_409_and_nothing_runs(
    jp_fetch, jp_root_dir, notebook_tool
):
    path = jp_root_dir / "s.ipynb"
    write_notebook(path, "print('one')", "print('two')")
    read = _revision(path)
    await notebook_tool(
        {"action": "insert", "notebook_path": "s.ipynb", "cell_index": 0, "content": "new"}
    )
    before = path.read_text()

    status, body = await call_run(
        jp_fetch, {"notebook_path": "s.ipynb", "cell_index": 1, "expected_revision": read}
    )

    assert status == 409
    assert body["reason"] == "stale_notebook"
    now = _revision(path)
    assert body["message"] == (
        f"Notebook changed since it was read (expected revision {read}, found {now}): s.ipynb"
    )
    assert body["details"]["cellIndex"] == 1 and body["details"]["cellId"] == "c0"
    assert body["details"]["totalCells"] == 3 and body["details"]["revision"] == now
    assert path.read_text() == before
    assert await sessions(jp_fetch) == []


async def test_a_cell_changed_since_it_was_read_is_a_409_with_the_cell_as_it_is(
    jp_fetch, jp_root_dir, notebook_tool
):
    path = jp_root_dir / "c.ipynb"
    write_notebook(path, "print('one')")
    read = source_hash("print('one')")
    await notebook_tool(
        {"action": "edit", "notebook_path": "c.ipynb", "cell_id": "c0", "content": "rm()"}
    )

    status, body = await call_run(
        jp_fetch, {"notebook_path": "c.ipynb", "cell_id": "c0", "expected_source_hash": read}
    )

    assert status == 409
    assert body["reason"] == "stale_cell"
    assert body["message"] == (
        f"Cell 0 changed since it was read (expected source hash {read}, "
        f"found {source_hash('rm()')}) in c.ipynb"
    )
    assert body["details"]["cellSource"] == ["rm()"]
    assert await sessions(jp_fetch) == []

"""POST /api/xcsh/notebook on a real server: each rule of docs/developers/contract.md §2."""

from __future__ import annotations

import asyncio
import json
import os

import nbformat
import pytest

from tests.support.mcp_client import TRANSPORTS
from tests.support.notebooks import jupyter_text, load, raw_cells, sample_notebook
from tests.support.openapi_check import assert_response_matches

ENDPOINT = "/api/xcsh/notebook"


@pytest.fixture
def notebook(jp_root_dir):
    """A Jupyter-written notebook at ``dir/a.ipynb``; returns its os path."""
    (jp_root_dir / "dir").mkdir()
    path = jp_root_dir / "dir" / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


async def _ok(notebook_tool, body):
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert_response_matches(ENDPOINT, "POST", 200, result)
    return result


async def _fails(notebook_tool, body, status, message=None, raw=None):
    got, result = await notebook_tool(body, raw=raw)
    assert got == status, result
    assert_response_matches(ENDPOINT, "POST", status, result)
    if message is not None:
        assert result["message"] == message
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_edit_insert_delete_round_trip_through_the_server(notebook_tool, notebook):
    result = await _ok(
        notebook_tool,
        {"action": "edit", "notebook_path": "dir/a.ipynb", "cell_index": 1, "content": "x = 2"},
    )
    assert result["text"] == "Replaced cell 1 (code). Notebook now has 4 cells."
    assert result["details"]["lastModified"]
    result = await _ok(
        notebook_tool,
        {
            "action": "insert",
            "notebook_path": "dir/a.ipynb",
            "cell_index": 4,
            "content": "# end",
            "cell_type": "markdown",
        },
    )
    assert result["text"] == "Inserted markdown cell at position 4. Notebook now has 5 cells."
    result = await _ok(
        notebook_tool, {"action": "delete", "notebook_path": "dir/a.ipynb", "cell_index": 0}
    )
    assert result["text"] == "Deleted cell 0 (markdown). Notebook now has 4 cells."
    assert result["details"]["cellSource"] == ["# Title\n", "Some text"]
    nb = load(notebook.read_text(encoding="utf-8"))
    assert [c.source for c in nb.cells] == ["x = 2", "x", "raw text", "# end"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_move_and_read_over_http(notebook_tool, notebook):
    await _ok(
        notebook_tool,
        {"action": "move", "notebook_path": "dir/a.ipynb", "cell_index": 3, "to_index": 0},
    )
    result = await _ok(notebook_tool, {"action": "read", "notebook_path": "dir/a.ipynb"})
    assert result["details"]["cells"][0]["cellType"] == "raw"
    assert "--- cell 0 · raw" in result["text"]


async def test_an_edit_changes_only_the_touched_cells_bytes(notebook_tool, notebook):
    before = notebook.read_text(encoding="utf-8")
    await _ok(
        notebook_tool,
        {"action": "edit", "notebook_path": "dir/a.ipynb", "cell_index": 3, "content": "new raw"},
    )
    after = notebook.read_text(encoding="utf-8")
    old_cell = json.dumps(raw_cells(before)[3], indent=1, ensure_ascii=False)
    new_cell = json.dumps(raw_cells(after)[3], indent=1, ensure_ascii=False)
    assert after == before.replace(old_cell.replace("\n", "\n  "), new_cell.replace("\n", "\n  "))
    assert after != before


async def test_string_sources_and_unknown_fields_of_other_cells_survive(notebook_tool, jp_root_dir):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {"b": 1, "a": 2}, "source": "one\ntwo", "x": 1},
            {"cell_type": "raw", "metadata": {}, "source": ["r"]},
        ],
        "metadata": {"custom": {"keep": True}},
        "nbformat": 4,
        "nbformat_minor": 4,
        "x-top": "kept",
    }
    text = json.dumps(nb, indent=1)
    (jp_root_dir / "s.ipynb").write_text(text, encoding="utf-8")
    await _ok(
        notebook_tool,
        {"action": "edit", "notebook_path": "s.ipynb", "cell_index": 1, "content": "changed"},
    )
    after = (jp_root_dir / "s.ipynb").read_text(encoding="utf-8")
    assert after.replace('"changed"', '"r"') == text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"action": "edit", "notebook_path": "nope.ipynb", "cell_index": 0, "content": ""},
            404,
            "Notebook not found: nope.ipynb",
        ),
        (
            {"action": "edit", "notebook_path": "dir/a.ipynb", "cell_index": 9, "content": ""},
            400,
            "Cell index 9 out of range (0-3) in dir/a.ipynb",
        ),
        (
            {"action": "insert", "notebook_path": "dir/a.ipynb", "cell_index": 5, "content": ""},
            400,
            "Cell index 5 out of range for insert (0-4) in dir/a.ipynb",
        ),
        (
            {"action": "edit", "notebook_path": "dir/a.ipynb", "cell_index": 0},
            400,
            "Content is required for edit action",
        ),
        (
            {"action": "explode", "notebook_path": "dir/a.ipynb"},
            400,
            # The tool's actions; over MCP run too (another operation serves it).
            "Invalid action: explode "
            "(actions: edit, insert, delete, move, read, find, create, changes{run})",
        ),
        (
            {"action": "delete", "notebook_path": "dir/a.ipynb", "cell_index": 1.5},
            400,
            "cell_index must be an integer, got number: 1.5",
        ),
        (
            {"action": "delete", "notebook_path": "dir/a.ipynb", "cell_index": "1"},
            400,
            "cell_index must be an integer, got string: '1'",
        ),
        (
            {"action": "delete", "notebook_path": "dir/a.ipynb", "cell_index": True},
            400,
            "cell_index must be an integer, got boolean: True",
        ),
        (
            {"action": "delete", "notebook_path": "dir/a.ipynb", "cell_id": "zzz"},
            404,
            "Cell id not found: zzz in dir/a.ipynb",
        ),
    ],
)
async def test_errors_have_exact_messages_and_change_nothing(
    notebook_tool, transport, notebook, body, status, message
):
    before = notebook.read_bytes()
    await _fails(
        notebook_tool, body, status, message.replace("{run}", ", run" * (transport == "mcp"))
    )
    assert notebook.read_bytes() == before


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{not json", "Request body is not valid JSON"),
        (b"[1, 2]", "Request body must be a JSON object"),
        (b"\xff\xfe", "Request body is not valid JSON"),
    ],
)
async def test_a_malformed_body_is_a_400_never_a_500(notebook_tool, notebook, raw, message):
    result = await _fails(notebook_tool, None, 400, raw=raw)
    assert result["message"].startswith(message)


@pytest.mark.slow
async def test_files_that_are_not_notebooks_are_422(notebook_tool, jp_root_dir):
    (jp_root_dir / "bad.ipynb").write_text("{oops", encoding="utf-8")
    (jp_root_dir / "nocells.ipynb").write_text('{"metadata": {}}', encoding="utf-8")
    (jp_root_dir / "binary.ipynb").write_bytes(b"\x89PNG\xff\xfe")
    body = {"action": "insert", "cell_index": 0, "content": ""}
    await _fails(
        notebook_tool,
        {**body, "notebook_path": "bad.ipynb"},
        422,
        "Invalid JSON in notebook: bad.ipynb",
    )
    await _fails(
        notebook_tool,
        {**body, "notebook_path": "binary.ipynb"},
        422,
        "Invalid JSON in notebook: binary.ipynb",
    )
    await _fails(
        notebook_tool,
        {**body, "notebook_path": "nocells.ipynb"},
        422,
        "Invalid notebook structure (missing cells array): nocells.ipynb",
    )
    assert (jp_root_dir / "nocells.ipynb").read_text() == '{"metadata": {}}'


async def test_bad_json_deep_inside_the_cells_is_still_a_422(notebook_tool, jp_root_dir):
    (jp_root_dir / "deep.ipynb").write_text('{"cells": [{"source": [1 2]}]}', encoding="utf-8")
    body = {"action": "delete", "notebook_path": "deep.ipynb", "cell_index": 0}
    await _fails(notebook_tool, body, 422, "Invalid JSON in notebook: deep.ipynb")


async def test_a_directory_is_not_a_notebook(notebook_tool, notebook):
    await _fails(
        notebook_tool, {"action": "read", "notebook_path": "dir"}, 404, "Notebook not found: dir"
    )


async def test_an_absolute_path_inside_the_root_is_accepted(notebook_tool, notebook):
    result = await _ok(notebook_tool, {"action": "read", "notebook_path": str(notebook)})
    assert result["details"]["totalCells"] == 4


@pytest.mark.parametrize(
    "path", ["../outside.ipynb", "dir/../../outside.ipynb", "/etc/passwd", "dir/../../../x"]
)
async def test_paths_escaping_the_root_are_refused(notebook_tool, notebook, tmp_path, path):
    outside = tmp_path / "outside.ipynb"
    outside.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    before = outside.read_bytes()
    body = {"action": "insert", "notebook_path": path, "cell_index": 0, "content": "pwned"}
    status, result = await notebook_tool(body)
    assert status in (403, 404), result
    assert outside.read_bytes() == before


async def test_a_symlink_out_of_the_root_is_refused_and_its_target_untouched(
    notebook_tool, jp_root_dir, tmp_path
):
    outside = tmp_path / "target.ipynb"
    outside.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    before = outside.read_bytes()
    os.symlink(outside, jp_root_dir / "link.ipynb")
    os.symlink(tmp_path, jp_root_dir / "linkdir")
    for path in ("link.ipynb", "linkdir/target.ipynb"):
        body = {"action": "insert", "notebook_path": path, "cell_index": 0, "content": "x"}
        await _fails(notebook_tool, body, 403, f"Path is outside the contents root: {path}")
    assert outside.read_bytes() == before


async def test_hidden_notebooks_are_invisible_under_the_default_policy(notebook_tool, jp_root_dir):
    (jp_root_dir / ".secret").mkdir()
    hidden = jp_root_dir / ".secret" / "h.ipynb"
    hidden.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    (jp_root_dir / ".h.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    for path in (".secret/h.ipynb", ".h.ipynb"):
        body = {"action": "insert", "notebook_path": path, "cell_index": 0, "content": "x"}
        await _fails(notebook_tool, body, 404, f"Notebook not found: {path}")
    assert len(load(hidden.read_text()).cells) == 4


async def test_fifty_parallel_inserts_leave_exactly_fifty_new_cells(notebook_tool, notebook):
    bodies = [
        {"action": "insert", "notebook_path": "dir/a.ipynb", "cell_index": 0, "content": f"c{i}"}
        for i in range(50)
    ]
    results = await asyncio.gather(*(notebook_tool(b) for b in bodies))
    assert all(status == 200 for status, _ in results)
    nb = load(notebook.read_text(encoding="utf-8"))
    assert len(nb.cells) == 54
    assert sorted(c.source for c in nb.cells[:50]) == sorted(f"c{i}" for i in range(50))
    assert len({c.id for c in nb.cells}) == 54


async def test_saves_go_through_the_contents_manager(notebook_tool, notebook, jp_serverapp):
    seen = []
    jp_serverapp.contents_manager.register_pre_save_hook(
        lambda model, path, **kw: seen.append((path, model["type"]))
    )
    await _ok(
        notebook_tool,
        {"action": "edit", "notebook_path": "dir/a.ipynb", "cell_index": 0, "content": "hook"},
    )
    assert seen == [("dir/a.ipynb", "file")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_45_notebook_stays_valid_after_every_kind_of_change(notebook_tool, notebook):
    p = "dir/a.ipynb"
    for body in (
        {
            "action": "insert",
            "notebook_path": p,
            "cell_index": 2,
            "content": "r",
            "cell_type": "raw",
        },
        {
            "action": "edit",
            "notebook_path": p,
            "cell_index": 1,
            "content": "m",
            "cell_type": "markdown",
        },
        {
            "action": "edit",
            "notebook_path": p,
            "cell_index": 0,
            "content": "c",
            "cell_type": "code",
        },
        {"action": "move", "notebook_path": p, "cell_index": 0, "to_index": 4},
        {"action": "delete", "notebook_path": p, "cell_index": 2},
    ):
        await _ok(notebook_tool, body)
        nbformat.validate(nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4))

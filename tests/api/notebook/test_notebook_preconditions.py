"""Stale-edit protection over HTTP (docs/developers/contract.md §3): hashes, revisions, 409s."""

from __future__ import annotations

import hashlib
import json

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_output
from traitlets.config import Config

from tests.support.notebooks import jupyter_text, load, sample_notebook
from tests.support.openapi_check import assert_response_matches

ENDPOINT = "/api/xcsh/notebook"
P = "a.ipynb"


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def revision(nb) -> str:
    """The revision of docs/developers/contract.md §3.1, computed without the package."""
    entries = [[c.get("id", i), c.cell_type, sha16(c.source)] for i, c in enumerate(nb.cells)]
    return sha16(json.dumps(entries, ensure_ascii=False, separators=(",", ":")))


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / P
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


def _rewrite(path, change):
    """A second writer: change the notebook on disk as another program would."""
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    change(nb)
    path.write_text(jupyter_text(nb), encoding="utf-8")


async def _call(notebook_tool, status, **body):
    got, result = await notebook_tool({"notebook_path": P, **body})
    assert got == status, result
    assert_response_matches(ENDPOINT, "POST", status, result)
    return result


async def test_every_answer_carries_the_cells_source_hash_and_the_notebooks_revision(
    notebook_tool, notebook
):
    nb = load(notebook.read_text())
    read = await _call(notebook_tool, 200, action="read")
    assert read["details"]["revision"] == revision(nb)
    assert read["details"]["via"] == "file"
    assert [c["sourceHash"] for c in read["details"]["cells"]] == [
        sha16(c.source) for c in nb.cells
    ]
    assert read["details"]["sourceHash"] == sha16(nb.cells[0].source)
    for body, index in (
        ({"action": "edit", "cell_index": 1, "content": "y = 2"}, 1),
        ({"action": "insert", "cell_index": 0, "content": "first"}, 0),
        ({"action": "move", "cell_index": 0, "to_index": 2}, 2),
    ):
        result = await _call(notebook_tool, 200, **body)
        nb = load(notebook.read_text())
        assert result["details"]["sourceHash"] == sha16(nb.cells[index].source)
        assert result["details"]["revision"] == revision(nb)
        assert result["details"]["via"] == "file"
    removed = nb.cells[3].source
    result = await _call(notebook_tool, 200, action="delete", cell_index=3)
    assert result["details"]["sourceHash"] == sha16(removed)
    assert result["details"]["revision"] == revision(load(notebook.read_text()))


async def test_a_second_writer_between_read_and_edit_is_a_409_with_the_cell_as_it_is_now(
    notebook_tool, notebook
):
    read = await _call(notebook_tool, 200, action="read")
    seen = read["details"]["cells"][1]["sourceHash"]
    _rewrite(notebook, lambda nb: setattr(nb.cells[1], "source", "x = 'theirs'"))
    before = notebook.read_bytes()
    result = await _call(
        notebook_tool, 409, action="edit", cell_index=1, content="x = 'mine'",
        expected_source_hash=seen,
    )  # fmt: skip
    now = load(notebook.read_text())
    assert result["message"] == (
        f"Cell 1 changed since it was read (expected source hash {seen}, "
        f"found {sha16('x = ' + repr('theirs'))}) in {P}"
    )
    assert result["reason"] == "stale_cell"
    assert result["details"] == {
        "cellIndex": 1,
        "cellId": now.cells[1].id,
        "cellType": "code",
        "cellSource": ["x = 'theirs'"],
        "sourceHash": sha16("x = 'theirs'"),
        "revision": revision(now),
        "totalCells": 4,
    }
    assert notebook.read_bytes() == before
    # The 409 says enough to retry at once.
    await _call(
        notebook_tool, 200, action="edit", cell_index=1, content="x = 'mine'",
        expected_source_hash=result["details"]["sourceHash"],
    )  # fmt: skip


async def test_a_stale_revision_is_a_409_even_when_the_addressed_cell_is_gone(
    notebook_tool, notebook
):
    read = await _call(notebook_tool, 200, action="read")
    rev, gone = read["details"]["revision"], read["details"]["cells"][3]["cellId"]
    _rewrite(notebook, lambda nb: nb.cells.pop(3))
    before = notebook.read_bytes()
    result = await _call(notebook_tool, 409, action="delete", cell_id=gone, expected_revision=rev)
    found = revision(load(notebook.read_text()))
    assert result["message"] == (
        f"Notebook changed since it was read (expected revision {rev}, found {found}): {P}"
    )
    assert result["reason"] == "stale_notebook"
    assert result["details"]["cellIndex"] is None and result["details"]["revision"] == found
    assert result["details"]["totalCells"] == 3
    result = await _call(
        notebook_tool, 409, action="insert", cell_index=0, content="x", expected_revision=rev
    )
    assert result["reason"] == "stale_notebook"
    assert notebook.read_bytes() == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda nb: None, id="autosave"),
        pytest.param(
            lambda nb: nb.cells[1].update(
                execution_count=9, outputs=[new_output("stream", name="stdout", text="run\n")]
            ),
            id="execution",
        ),
        pytest.param(
            lambda nb: (nb.cells[1].metadata.update(tags=["x"]), nb.metadata.update(a=1)),
            id="metadata",
        ),
    ],
)
async def test_saves_executions_and_metadata_changes_are_not_conflicts(
    notebook_tool, notebook, change
):
    read = await _call(notebook_tool, 200, action="read")
    cell_hash, rev = read["details"]["cells"][1]["sourceHash"], read["details"]["revision"]
    _rewrite(notebook, change)
    result = await _call(
        notebook_tool, 200, action="edit", cell_index=1, content="x = 3",
        expected_source_hash=cell_hash, expected_revision=rev,
    )  # fmt: skip
    assert load(notebook.read_text()).cells[1].source == "x = 3"
    assert result["details"]["revision"] != rev


async def test_old_content_replaces_its_one_occurrence_and_refuses_zero_or_two(
    notebook_tool, notebook
):
    _rewrite(notebook, lambda nb: setattr(nb.cells[1], "source", "a = 1\nb = 1\nc = 2"))
    result = await _call(
        notebook_tool, 200, action="edit", cell_index=1, old_content="c = 2", content="c = 3"
    )
    assert load(notebook.read_text()).cells[1].source == "a = 1\nb = 1\nc = 3"
    assert result["details"]["cellSource"] == ["a = 1\n", "b = 1\n", "c = 3"]
    before = notebook.read_bytes()
    result = await _call(
        notebook_tool, 409, action="edit", cell_index=1, old_content="zzz", content="y"
    )
    assert result["message"] == f"old_content not found in cell 1 of {P}"
    assert result["reason"] == "stale_cell"
    assert result["details"]["cellSource"] == ["a = 1\n", "b = 1\n", "c = 3"]
    result = await _call(
        notebook_tool, 400, action="edit", cell_index=1, old_content=" = 1", content="y"
    )
    assert result["message"] == f"old_content occurs 2 times in cell 1 of {P}"
    assert notebook.read_bytes() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"action": "edit", "cell_index": 0, "content": "", "expected_source_hash": "abc"},
            "expected_source_hash must be 16 lowercase hex digits (a sourceHash from an earlier "
            "response), got 'abc'",
        ),
        (
            {"action": "insert", "cell_index": 0, "content": "", "expected_source_hash": "0" * 16},
            "expected_source_hash on an insert guards the cell it goes next to: "
            "give after_cell_id or before_cell_id",
        ),
        (
            {"action": "edit", "cell_index": 0, "content": "", "old_content": ""},
            "old_content must not be empty",
        ),
        (
            {"action": "delete", "cell_index": 0, "old_content": "x"},
            "Field old_content is not accepted by the delete action (delete takes: notebook_path, "
            "cell_index, cell_id, expected_source_hash, expected_revision)",
        ),
    ],
)
async def test_malformed_preconditions_are_400s(notebook_tool, notebook, body, message):
    result = await _call(notebook_tool, 400, **body)
    assert result["message"] == message


class TestPreconditionsRequiredForIndexAddressing:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.require_preconditions = "index"
        return config

    async def test_an_index_change_without_a_precondition_is_refused(self, notebook_tool, notebook):
        before = notebook.read_bytes()
        result = await _call(notebook_tool, 400, action="edit", cell_index=1, content="x")
        assert result["message"] == (
            "Changes addressed by cell_index need expected_source_hash or expected_revision "
            f'(require_preconditions is "index"): {P}'
        )
        result = await _call(notebook_tool, 400, action="insert", cell_index=0, content="x")
        assert result["message"] == (
            "Changes addressed by cell_index need expected_revision "
            f'(require_preconditions is "index"): {P}'
        )
        assert notebook.read_bytes() == before

    async def test_a_precondition_or_an_id_is_enough(self, notebook_tool, notebook):
        read = await _call(notebook_tool, 200, action="read")
        cells = read["details"]["cells"]
        await _call(
            notebook_tool, 200, action="edit", cell_index=1, content="x",
            expected_source_hash=cells[1]["sourceHash"],
        )  # fmt: skip
        await _call(notebook_tool, 200, action="edit", cell_id=cells[2]["cellId"], content="y")


class TestPreconditionsAlwaysRequired:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.require_preconditions = "always"
        return config

    async def test_even_an_id_change_needs_one_and_reads_never_do(self, notebook_tool, notebook):
        read = await _call(notebook_tool, 200, action="read")
        cell_id = read["details"]["cells"][0]["cellId"]
        result = await _call(notebook_tool, 400, action="delete", cell_id=cell_id)
        assert result["message"] == (
            "Changes need expected_source_hash or expected_revision "
            f'(require_preconditions is "always"): {P}'
        )
        await _call(
            notebook_tool, 200, action="delete", cell_id=cell_id,
            expected_revision=read["details"]["revision"],
        )  # fmt: skip


async def test_a_markdown_cell_inserted_by_someone_else_changes_the_revision_only(
    notebook_tool, notebook
):
    read = await _call(notebook_tool, 200, action="read")
    _rewrite(notebook, lambda nb: nb.cells.append(new_markdown_cell("theirs")))
    result = await _call(
        notebook_tool, 200, action="edit", cell_index=0, content="# T",
        expected_source_hash=read["details"]["cells"][0]["sourceHash"],
    )  # fmt: skip
    assert result["details"]["totalCells"] == 5

"""Addressing cells as agents do (docs/developers/contract.md §2.2, §2.11): anchors, batches.

Over HTTP (and MCP where marked), on a real Jupyter Server, with the file checked byte for byte.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets.config import Config

from tests.support.mcp_client import TRANSPORTS
from tests.support.notebooks import jupyter_text, load, raw_cells
from tests.support.openapi_check import assert_response_matches

ENDPOINT = "/api/xcsh/notebook"
P = "ids.ipynb"
IDS = ["c0", "c1", "c2", "c3", "c4"]


@pytest.fixture
def notebook(jp_root_dir):
    cells = [new_markdown_cell("# Title", id="c0")]
    cells += [new_code_cell(f"x{i} = {i}", id=f"c{i}") for i in range(1, 5)]
    path = jp_root_dir / P
    path.write_text(jupyter_text(new_notebook(cells=cells)), encoding="utf-8")
    return path


async def _call(notebook_tool, status, body):
    got, result = await notebook_tool({"notebook_path": P, **body})
    assert got == status, result
    assert_response_matches(ENDPOINT, "POST", status, result)
    return result


def _ids(path):
    return [cell.id for cell in load(path.read_text(encoding="utf-8")).cells]


def _unchanged_but(before: str, after: str, touched: set[int], inserted: set[int] = frozenset()):
    """Assert ``after`` differs from ``before`` only in the cells ``touched`` / ``inserted``.

    Every other cell keeps its exact text (compared as the file's own slices).
    """
    old = [json.dumps(c, indent=1) for c in raw_cells(before)]
    new = [json.dumps(c, indent=1) for c in raw_cells(after)]
    kept_old = [c for i, c in enumerate(old) if i not in touched]
    kept_new = [c for i, c in enumerate(new) if i not in touched | inserted]
    assert kept_new == kept_old
    # Outside the cells array nothing moved.
    assert json.loads(after)["metadata"] == json.loads(before)["metadata"]
    head = before[: before.index('"cells": [')]
    assert after.startswith(head)
    tail = before[before.rindex(' ],\n "metadata"') :]
    assert after.endswith(tail)


# -- inserts and moves next to a cell id ----------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("anchor", "position"),
    [
        ({"before_cell_id": "c0"}, 0),  # the start
        ({"after_cell_id": "c0"}, 1),
        ({"before_cell_id": "c2"}, 2),  # the middle
        ({"after_cell_id": "c2"}, 3),
        ({"before_cell_id": "c4"}, 4),
        ({"after_cell_id": "c4"}, 5),  # the end
    ],
)
async def test_insert_next_to_a_cell_id_at_the_start_middle_and_end(
    notebook_tool, notebook, anchor, position
):
    result = await _call(notebook_tool, 200, {"action": "insert", "content": "new", **anchor})

    new_id = result["details"]["cellId"]
    assert result["details"]["cellIndex"] == position
    assert result["text"].startswith(f"Inserted code cell at position {position}")
    expected = list(IDS)
    expected.insert(position, new_id)
    assert _ids(notebook) == expected


@pytest.mark.slow
async def test_an_insert_next_to_an_id_lands_there_after_a_person_inserted_above(
    notebook_tool, notebook
):
    # The agent reads: c2 is cell 2, and it wants a cell right after it.
    read = await _call(notebook_tool, 200, {"action": "read"})
    assert read["details"]["cells"][2]["cellId"] == "c2"
    # A person inserts two cells above before the agent's insert arrives.
    nb = nbformat.reads(notebook.read_text(), as_version=4)
    nb.cells[0:0] = [new_markdown_cell("theirs", id="p0"), new_code_cell("theirs", id="p1")]
    notebook.write_text(jupyter_text(nb), encoding="utf-8")

    result = await _call(
        notebook_tool, 200, {"action": "insert", "after_cell_id": "c2", "content": "explain c2"}
    )

    ids = _ids(notebook)
    assert ids[ids.index("c2") + 1] == result["details"]["cellId"]
    assert result["details"]["cellIndex"] == 5  # not 3, where the index the agent read points
    # The index would have missed: cell 3 is now c1.
    assert ids[3] == "c1"


async def test_an_insert_by_id_changes_only_the_lines_of_the_new_cell(notebook_tool, notebook):
    before = notebook.read_text()
    await _call(notebook_tool, 200, {"action": "insert", "before_cell_id": "c3", "content": "y"})
    _unchanged_but(before, notebook.read_text(), set(), {3})


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        ({"to_after_cell_id": "c3"}, ["c0", "c2", "c3", "c1", "c4"]),
        ({"to_before_cell_id": "c0"}, ["c1", "c0", "c2", "c3", "c4"]),
        ({"to_after_cell_id": "c4"}, ["c0", "c2", "c3", "c4", "c1"]),
        ({"to_before_cell_id": "c2"}, IDS),  # already there: nothing moves
    ],
)
async def test_move_next_to_a_cell_id(notebook_tool, notebook, anchor, expected):
    result = await _call(notebook_tool, 200, {"action": "move", "cell_id": "c1", **anchor})

    assert _ids(notebook) == expected
    assert result["details"]["cellIndex"] == expected.index("c1")
    assert result["details"]["fromIndex"] == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"action": "insert", "cell_id": "c1", "content": "x"},
            400,
            "Use after_cell_id or before_cell_id to insert next to a cell",
        ),
        (
            {"action": "insert", "after_cell_id": "nope", "content": "x"},
            404,
            f"Cell id not found: nope in {P}",
        ),
        (
            {"action": "insert", "before_cell_id": "nope", "content": "x"},
            404,
            f"Cell id not found: nope in {P}",
        ),
        (
            {"action": "move", "cell_id": "c1", "to_after_cell_id": "nope"},
            404,
            f"Cell id not found: nope in {P}",
        ),
        (
            {"action": "insert", "after_cell_id": "c1", "cell_index": 0, "content": "x"},
            400,
            "Give one of cell_index, after_cell_id or before_cell_id for insert action",
        ),
        (
            {"action": "insert", "content": "x"},
            400,
            "cell_index, after_cell_id or before_cell_id is required for insert action",
        ),
        (
            {"action": "move", "cell_id": "c1", "to_index": 0, "to_before_cell_id": "c0"},
            400,
            "Give one of to_index, to_after_cell_id or to_before_cell_id for move action",
        ),
        (
            {"action": "move", "cell_id": "c1"},
            400,
            "to_index, to_after_cell_id or to_before_cell_id is required for move action",
        ),
        (
            {"action": "move", "cell_id": "c1", "to_after_cell_id": "c1"},
            400,
            f"Cannot move cell c1 next to itself in {P}",
        ),
        (
            {"action": "edit", "cell_id": "c1", "after_cell_id": "c0", "content": "x"},
            400,
            "Field after_cell_id is not accepted by the edit action (edit takes: notebook_path, "
            "cell_index, cell_id, content, cell_type, expected_source_hash, expected_revision, "
            "old_content, cell, execution_count)",
        ),
        (
            {"action": "insert", "cell_index": 0, "content": "x", "expected_source_hash": "0" * 16},
            400,
            "expected_source_hash on an insert guards the cell it goes next to: "
            "give after_cell_id or before_cell_id",
        ),
    ],
)
async def test_anchor_mistakes_are_exact_errors_and_change_nothing(
    notebook_tool, notebook, body, status, message
):
    before = notebook.read_bytes()
    result = await _call(notebook_tool, status, body)
    assert result["message"] == message
    assert notebook.read_bytes() == before


async def test_an_anchored_insert_can_require_the_anchor_to_be_unchanged(notebook_tool, notebook):
    read = await _call(notebook_tool, 200, {"action": "read"})
    c2_hash = read["details"]["cells"][2]["sourceHash"]
    nb = nbformat.reads(notebook.read_text(), as_version=4)
    nb.cells[2].source = "x2 = 'changed by a person'"
    notebook.write_text(jupyter_text(nb), encoding="utf-8")
    before = notebook.read_bytes()

    result = await _call(
        notebook_tool,
        409,
        {
            "action": "insert",
            "after_cell_id": "c2",
            "content": "y",
            "expected_source_hash": c2_hash,
        },
    )

    assert result["reason"] == "stale_cell"
    assert result["details"]["cellId"] == "c2"
    assert notebook.read_bytes() == before


# -- batches --------------------------------------------------------------------------------------


def _batch(*changes, **fields):
    return {"changes": list(changes), **fields}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_batch_applies_its_changes_in_order_in_one_save(
    notebook_tool, notebook, jp_serverapp
):
    saves = []
    jp_serverapp.contents_manager.register_pre_save_hook(lambda model, path, **kw: saves.append(1))
    before = notebook.read_text()

    result = await _call(
        notebook_tool,
        200,
        _batch(
            {"action": "edit", "cell_id": "c1", "content": "renamed = 1"},
            {
                "action": "insert",
                "before_cell_id": "c1",
                "content": "## Setup",
                "cell_type": "markdown",
            },
            # Indices refer to the notebook as the earlier changes left it: c1 is now cell 2.
            {"action": "edit", "cell_index": 2, "old_content": "renamed", "content": "total"},
            {"action": "move", "cell_id": "c4", "to_index": 0},
        ),
    )

    after = load(notebook.read_text())
    assert [c.source for c in after.cells] == [
        "x4 = 4",
        "# Title",
        "## Setup",
        "total = 1",
        "x2 = 2",
        "x3 = 3",
    ]
    assert saves == [1]
    details = result["details"]
    assert details["action"] == "batch"
    assert [c["action"] for c in details["changes"]] == ["edit", "insert", "edit", "move"]
    assert (
        details["changes"][1]["cellIndex"] == 1 and details["changes"][1]["cellType"] == "markdown"
    )
    assert details["totalCells"] == 6 and details["via"] == "file"
    assert details["revision"] == details["changes"][-1]["revision"]
    assert result["text"].splitlines() == [
        "Replaced cell 1 (code). Notebook now has 5 cells.",
        "Inserted markdown cell at position 1, before cell c1. Notebook now has 6 cells.",
        "Replaced cell 2 (code). Notebook now has 6 cells.",
        "Moved cell 5 to position 0 (code). Notebook now has 6 cells.",
    ]
    read = await _call(notebook_tool, 200, {"action": "read"})
    assert details["revision"] == read["details"]["revision"]
    _unchanged_but(before, notebook.read_text(), {0, 1, 2, 3, 4}, {5})


async def test_a_five_change_batch_whose_fourth_change_fails_leaves_the_file_byte_identical(
    notebook_tool, notebook, jp_serverapp
):
    saves = []
    jp_serverapp.contents_manager.register_pre_save_hook(lambda model, path, **kw: saves.append(1))
    before = notebook.read_bytes()

    result = await _call(
        notebook_tool,
        404,
        _batch(
            {"action": "edit", "cell_id": "c1", "content": "a"},
            {"action": "insert", "after_cell_id": "c1", "content": "b"},
            {"action": "delete", "cell_id": "c3"},
            {"action": "edit", "cell_id": "c3", "content": "deleted by change 3"},
            {"action": "insert", "cell_index": 0, "content": "never"},
        ),
    )

    assert result["message"] == f"Change 4 failed: Cell id not found: c3 in {P}"
    assert notebook.read_bytes() == before
    assert saves == []


# Change 1 deletes c0: change 2's messages count cells as that left them (4 cells, c2 is cell 1).
@pytest.mark.parametrize(
    ("failing", "status", "message"),
    [
        (
            {"action": "edit", "cell_index": 9, "content": "x"},
            400,
            f"Cell index 9 out of range (0-3) in {P}",
        ),
        (
            {"action": "edit", "cell_id": "c2", "content": "x", "old_content": "absent"},
            409,
            f"old_content not found in cell 1 of {P}",
        ),
        ({"action": "edit", "cell_id": "c2"}, 400, "Content is required for edit action"),
        (
            {"action": "read"},
            400,
            "Invalid action in a batch: read (a batch holds edit, insert, delete and move)",
        ),
        (
            {"action": "explode"},
            400,
            "Invalid action: explode (actions: edit, insert, delete, move)",
        ),
        (
            {"action": "edit", "cell_id": "c2", "content": "x", "expected_revision": "0" * 16},
            400,
            "expected_revision belongs to the batch (it is checked once, before the first change)",
        ),
        (
            {"action": "edit", "cell_id": "c2", "content": "x", "notebook_path": "other.ipynb"},
            400,
            f"notebook_path other.ipynb is not the batch's ({P})",
        ),
        ("edit", 400, "A change must be an object, got string"),
    ],
)
async def test_a_failing_change_is_named_by_its_position_and_nothing_is_applied(
    notebook_tool, notebook, failing, status, message
):
    before = notebook.read_bytes()

    result = await _call(
        notebook_tool, status, _batch({"action": "delete", "cell_id": "c0"}, failing)
    )

    assert result["message"] == f"Change 2 failed: {message}"
    assert notebook.read_bytes() == before


async def test_a_batch_is_byte_faithful_only_the_touched_cells_lines_change(
    notebook_tool, notebook
):
    before = notebook.read_text()

    await _call(
        notebook_tool,
        200,
        _batch(
            {"action": "edit", "cell_id": "c1", "content": "one"},
            {"action": "edit", "cell_id": "c3", "content": "three"},
            {"action": "insert", "after_cell_id": "c4", "content": "five"},
        ),
    )

    _unchanged_but(before, notebook.read_text(), {1, 3}, {5})


async def test_a_batch_checks_expected_revision_once_before_the_first_change(
    notebook_tool, notebook
):
    read = await _call(notebook_tool, 200, {"action": "read"})
    revision = read["details"]["revision"]
    changes = [
        {"action": "edit", "cell_id": "c1", "content": "a"},
        {"action": "edit", "cell_id": "c2", "content": "b"},
    ]
    # Each change alters the revision; the batch's expected_revision is the one before them all.
    result = await _call(notebook_tool, 200, _batch(*changes, expected_revision=revision))
    assert [c.source for c in load(notebook.read_text()).cells][1:3] == ["a", "b"]

    before = notebook.read_bytes()
    result = await _call(notebook_tool, 409, _batch(*changes, expected_revision=revision))
    assert result["reason"] == "stale_notebook"
    assert result["message"].startswith(
        f"Notebook changed since it was read (expected revision {revision}"
    )
    assert notebook.read_bytes() == before


async def test_each_change_of_a_batch_may_guard_its_cell_as_the_earlier_changes_left_it(
    notebook_tool, notebook
):
    read = await _call(notebook_tool, 200, {"action": "read"})
    hashes = {c["cellId"]: c["sourceHash"] for c in read["details"]["cells"]}
    first = await _call(
        notebook_tool, 200, _batch({"action": "edit", "cell_id": "c1", "content": "a"})
    )
    new_hash = first["details"]["changes"][0]["sourceHash"]
    before = notebook.read_bytes()

    # The second change expects c1 as it was before the first change: stale.
    result = await _call(
        notebook_tool,
        409,
        _batch(
            {
                "action": "edit",
                "cell_id": "c2",
                "content": "b",
                "expected_source_hash": hashes["c2"],
            },
            {
                "action": "edit",
                "cell_id": "c1",
                "content": "c",
                "expected_source_hash": hashes["c1"],
            },
        ),
    )
    assert result["message"].startswith("Change 2 failed: Cell 1 changed since it was read")
    assert result["reason"] == "stale_cell" and result["details"]["cellId"] == "c1"
    assert notebook.read_bytes() == before

    # Each guard names the cell as the earlier changes of the batch leave it.
    await _call(
        notebook_tool,
        200,
        _batch(
            {"action": "edit", "cell_id": "c1", "content": "c", "expected_source_hash": new_hash},
            {"action": "edit", "cell_id": "c1", "content": "d", "expected_source_hash": _hash("c")},
        ),
    )
    assert load(notebook.read_text()).cells[1].source == "d"


def _hash(text):
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"changes": []}, "changes must hold at least one change"),
        ({"changes": {}}, "changes must be an array, got object"),
        (
            {"changes": [{"action": "delete", "cell_id": "c0"}] * 101},
            "A batch holds at most 100 changes, got 101",
        ),
        (
            {"action": "edit", "changes": [{"action": "delete", "cell_id": "c0"}]},
            "A batch has no action of its own: give each change its action inside changes",
        ),
        (
            {"changes": [{"action": "delete", "cell_id": "c0"}], "cell_index": 0},
            "Field cell_index is not accepted by a batch (only notebook_path, changes and "
            "expected_revision)",
        ),
    ],
)
async def test_malformed_batches_are_400s(notebook_tool, notebook, body, message):
    before = notebook.read_bytes()
    result = await _call(notebook_tool, 400, body)
    assert result["message"] == message
    assert notebook.read_bytes() == before


class TestBatchesUnderRequiredPreconditions:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.require_preconditions = "index"
        return config

    async def test_each_change_by_index_needs_a_guard_unless_the_batch_has_a_revision(
        self, notebook_tool, notebook
    ):
        before = notebook.read_bytes()
        changes = [
            {"action": "edit", "cell_id": "c1", "content": "by id"},
            {"action": "insert", "after_cell_id": "c1", "content": "next to an id"},
            {"action": "delete", "cell_index": 4},
        ]
        result = await _call(notebook_tool, 400, _batch(*changes))
        assert result["message"] == (
            "Change 3 failed: Changes addressed by cell_index need expected_source_hash or "
            f'expected_revision (require_preconditions is "index"): {P}'
        )
        assert notebook.read_bytes() == before

        read = await _call(notebook_tool, 200, {"action": "read"})
        await _call(
            notebook_tool, 200, _batch(*changes, expected_revision=read["details"]["revision"])
        )
        assert len(load(notebook.read_text()).cells) == 5


class TestBatchAuthorization:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_a_batch_needs_write_and_finds_need_read_only(self, notebook_tool, notebook):
        before = notebook.read_bytes()
        result = await _call(notebook_tool, 403, _batch({"action": "delete", "cell_id": "c0"}))
        assert result["message"] == "User is not authorized to write on resource: contents."
        assert notebook.read_bytes() == before
        found = await _call(notebook_tool, 200, {"action": "find", "pattern": "x1"})
        assert [m["cellId"] for m in found["details"]["matches"]] == ["c1"]

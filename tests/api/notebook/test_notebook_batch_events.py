"""A batch is one call on the event bus, listing its changes; it can be reverted as one batch.

The lab shows a batch as one call with its changes, marks every cell it changed, and reverts it
with one batch built from the event alone: each change's revert, last change first, each
guarded by the source hash that change left (labextension/src/panel/revert.ts).
"""

from __future__ import annotations

import json

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_xcsh.events.activity import MAX_EVENT_BATCH
from tests.api.notebook.test_notebook_revert import _event_of, _previous_cell, _revert_body
from tests.support.inplace import wait_until
from tests.support.notebooks import jupyter_text

P = "b.ipynb"


@pytest.fixture
def notebook(jp_root_dir):
    cells = [
        new_markdown_cell("# Title", id="m0"),
        new_code_cell(
            "x = 1",
            id="c1",
            execution_count=2,
            outputs=[new_output("stream", name="stdout", text="1\n")],
            metadata={"tags": ["keep"]},
        ),
        new_code_cell("y = 2", id="c2"),
        new_code_cell("z = 3", id="c3"),
    ]
    path = jp_root_dir / P
    path.write_text(jupyter_text(new_notebook(cells=cells)), encoding="utf-8")
    return path


CHANGES = [
    {"action": "edit", "cell_id": "c1", "content": "x = 10"},
    {"action": "insert", "after_cell_id": "c1", "content": "## About x", "cell_type": "markdown"},
    {"action": "edit", "cell_id": "c1", "content": "x = 100", "cell_type": "raw"},
    {"action": "move", "cell_id": "c3", "to_before_cell_id": "m0"},
    {"action": "delete", "cell_id": "c2"},
]


async def _batch(notebook_tool, events, changes, status=200):
    got, result = await notebook_tool({"notebook_path": P, "changes": changes})
    assert got == status, result
    if status != 200:
        return result, None
    return result, await _event_of(events, result["callId"])


async def test_a_batch_is_one_event_listing_each_change(notebook_tool, notebook, events):
    result, event = await _batch(notebook_tool, events, CHANGES)

    assert [e for e in events if e["callId"] == result["callId"]] == [event]
    assert event["action"] == "batch" and event["status"] == "ok" and event["path"] == P
    assert event["totalCells"] == 4 and event["revision"] == result["details"]["revision"]
    changes = event["changes"]
    assert [c["action"] for c in changes] == ["edit", "insert", "edit", "move", "delete"]
    assert [c.get("cellId") for c in changes] == [
        "c1",
        result["details"]["changes"][1]["cellId"],
        "c1",
        "c3",
        "c2",
    ]
    assert changes[0]["source"] == "x = 10" and changes[2]["source"] == "x = 100"
    assert changes[0]["previousCell"]["source"] == ["x = 1"]  # the cell as that change found it
    assert changes[2]["previousCell"]["source"] == ["x = 10"]
    assert changes[3]["fromIndex"] == 4 and changes[3]["cellIndex"] == 0
    assert changes[4]["previousCell"]["id"] == "c2"
    for change, details in zip(changes, result["details"]["changes"], strict=True):
        assert change["sourceHash"] == details["sourceHash"]
        assert change["revision"] == details["revision"]


async def test_a_failing_batch_is_one_error_event(notebook_tool, notebook, events):
    result, _ = await _batch(
        notebook_tool, events, [CHANGES[0], {"action": "delete", "cell_index": 9}], 400
    )

    await wait_until(lambda: any(e["action"] == "batch" for e in events))  # goes out just after
    [event] = [e for e in events if e["action"] == "batch"]
    assert event["status"] == "error" and event["error"] == result["message"]
    assert result["message"] == f"Change 2 failed: Cell index 9 out of range (0-3) in {P}"
    assert "changes" not in event


def _revert_batch(event, previous_cells):
    """The batch the lab sends to revert a batch: each change's revert, last change first."""
    changes = []
    for change, previous in reversed(list(zip(event["changes"], previous_cells, strict=True))):
        body = _revert_body(change, previous)
        changes.append(body)
    return {"notebook_path": event["path"], "changes": changes}


async def _previous_cells(jp_fetch, event):
    cells = []
    for change in event["changes"]:
        has_cell = "previousCell" in change or "previousCellArtifactId" in change
        cells.append(await _previous_cell(jp_fetch, change) if has_cell else None)
    return cells


async def test_reverting_a_batch_restores_the_file_byte_for_byte(
    notebook_tool, jp_fetch, notebook, events
):
    before = notebook.read_bytes()
    _, event = await _batch(notebook_tool, events, CHANGES)
    after = notebook.read_bytes()
    assert after != before

    body = _revert_batch(event, await _previous_cells(jp_fetch, event))
    status, result = await notebook_tool(body)

    assert status == 200, result
    assert notebook.read_bytes() == before
    # Reverting the revert brings the batch back.
    revert_event = await _event_of(events, result["callId"])
    status, result = await notebook_tool(
        _revert_batch(revert_event, await _previous_cells(jp_fetch, revert_event))
    )
    assert status == 200, result
    assert notebook.read_bytes() == after


async def test_a_batch_revert_is_refused_whole_when_one_cell_changed_since(
    notebook_tool, jp_fetch, notebook, events
):
    _, event = await _batch(notebook_tool, events, CHANGES)
    status, _ = await notebook_tool(
        {"notebook_path": P, "action": "edit", "cell_id": "c1", "content": "a person's"}
    )
    assert status == 200
    changed = notebook.read_bytes()

    status, result = await notebook_tool(
        _revert_batch(event, await _previous_cells(jp_fetch, event))
    )

    # The last change (the delete of c2) reverts first; change 3's edit of c1 finds it changed.
    assert status == 409, result
    assert result["reason"] == "stale_cell"
    assert result["message"].startswith("Change 3 failed: Cell ")
    assert notebook.read_bytes() == changed


async def test_a_batch_event_stays_bounded_its_large_cells_kept_as_artifacts(
    notebook_tool, jp_fetch, jp_root_dir, events
):
    # 20 cells of 70 000 characters: each source is cut to 64 KiB, and 20 of those are more
    # than one event carries; each cell as it was is larger than an event keeps inline.
    big = "x = '" + "y" * 70_000 + "'"
    cells = [new_code_cell(big, id=f"c{i}") for i in range(20)]
    (jp_root_dir / P).write_text(jupyter_text(new_notebook(cells=cells)), encoding="utf-8")
    changes = [{"action": "edit", "cell_id": f"c{i}", "content": big + "\n"} for i in range(20)]

    _, event = await _batch(notebook_tool, events, changes)

    assert len(json.dumps(event)) < 2 * MAX_EVENT_BATCH
    assert all("previousCellArtifactId" in change for change in event["changes"])
    assert "source" not in event["changes"][-1]  # past the budget: left out, not cut
    previous = await _previous_cell(jp_fetch, event["changes"][5])
    assert previous["source"] == [big] and previous["id"] == "c5"

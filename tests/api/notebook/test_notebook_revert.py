"""A notebook change can be put back exactly, from what its event carries (the lab's revert).

Each test makes a change through the notebook tool, takes the change's event from the server's
event bus, sends the revert the lab would send (built from the event alone) and compares the
file, byte for byte, with the file before the change.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from jupyter_xcsh.events.activity import MAX_EVENT_CELL
from tests.support.notebooks import PNG_1x1, jupyter_text, load, sample_notebook
from tests.support.openapi_check import assert_response_matches

ENDPOINT = "/api/xcsh/notebook"


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / "r.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


async def _event_of(events, call_id):
    # Listeners run as tasks right after emit (2 s is ample on a loaded machine).
    for _ in range(200):
        for event in events:
            if event["callId"] == call_id:
                return event
        await asyncio.sleep(0.01)
    raise AssertionError(f"no event for call {call_id} in {events}")


async def _change(notebook_tool, events, **body):
    status, result = await notebook_tool({"notebook_path": "r.ipynb", **body})
    assert status == 200, result
    assert_response_matches(ENDPOINT, "POST", 200, result)
    return result, await _event_of(events, result["callId"])


async def _previous_cell(jp_fetch, event):
    if "previousCell" in event:
        return event["previousCell"]
    response = await jp_fetch("api", "xcsh", "artifacts", event["previousCellArtifactId"])
    return json.loads(response.body)


def _revert_body(event, previous_cell):
    """The revert the lab sends for ``event`` (see labextension/src/panel/revert.ts)."""
    where = {"cell_id": event["cellId"], "expected_source_hash": event["sourceHash"]}
    if event["action"] == "edit":
        return {"action": "edit", **where, "cell": previous_cell}
    if event["action"] == "insert":
        return {"action": "delete", **where}
    if event["action"] == "delete":
        return {"action": "insert", "cell_index": event["cellIndex"], "cell": previous_cell}
    return {"action": "move", **where, "to_index": event["fromIndex"]}


async def _revert(notebook_tool, jp_fetch, event):
    """Send the revert the lab sends for ``event``; it must succeed."""
    previous = None
    if event["action"] in ("edit", "delete"):
        previous = await _previous_cell(jp_fetch, event)
    body = _revert_body(event, previous)
    status, result = await notebook_tool({"notebook_path": event["path"], **body})
    assert status == 200, result
    return result


@pytest.mark.parametrize(
    "change",
    [
        {"action": "edit", "cell_index": 1, "content": "y = 2\nprint(y)"},
        {"action": "edit", "cell_index": 2, "content": "# now text", "cell_type": "markdown"},
        {"action": "edit", "cell_index": 0, "content": "x = 1", "cell_type": "code"},
        {"action": "insert", "cell_index": 2, "content": "new = 1\n"},
        {"action": "delete", "cell_index": 2},
        {"action": "move", "cell_index": 0, "to_index": 3},
    ],
    ids=["edit", "code-to-markdown", "markdown-to-code", "insert", "delete", "move"],
)
async def test_reverting_a_change_restores_the_file_byte_for_byte(
    notebook_tool, jp_fetch, notebook, events, change
):
    before = notebook.read_bytes()
    _, event = await _change(notebook_tool, events, **change)
    assert notebook.read_bytes() != before

    await _revert(notebook_tool, jp_fetch, event)

    assert notebook.read_bytes() == before


async def test_reverting_a_revert_brings_the_change_back(notebook_tool, jp_fetch, notebook, events):
    before = notebook.read_bytes()
    await _change(notebook_tool, events, action="delete", cell_index=1)
    deleted = notebook.read_bytes()
    first = await _revert(notebook_tool, jp_fetch, events[-1])
    assert notebook.read_bytes() == before

    await _revert(notebook_tool, jp_fetch, await _event_of(events, first["callId"]))

    assert notebook.read_bytes() == deleted


async def test_an_edit_event_carries_the_cell_as_it_was_and_the_revert_is_marked_restored(
    notebook_tool, jp_fetch, notebook, events
):
    old = json.loads(notebook.read_text())["cells"][1]
    result, event = await _change(
        notebook_tool, events, action="edit", cell_index=1, content="changed"
    )
    assert event["previousCell"] == old
    assert event["callId"] == result["callId"]
    assert "restored" not in event

    reverted = await _revert(notebook_tool, jp_fetch, event)

    revert_event = await _event_of(events, reverted["callId"])
    assert revert_event["restored"] is True
    assert revert_event["previousCell"]["source"] == ["changed"]


async def test_a_large_cell_as_it_was_is_kept_as_an_artifact(
    notebook_tool, jp_fetch, jp_root_dir, events
):
    nb = sample_notebook()
    # A plot-sized image output makes the cell larger than an event may carry.
    big = PNG_1x1 + "A" * (MAX_EVENT_CELL + 1000)
    nb.cells[2].outputs[1].data["image/png"] = big
    path = jp_root_dir / "r.ipynb"
    path.write_text(jupyter_text(nb), encoding="utf-8")
    before = path.read_bytes()

    _, event = await _change(notebook_tool, events, action="delete", cell_index=2)

    assert "previousCell" not in event
    cell = await _previous_cell(jp_fetch, event)
    assert cell["outputs"][1]["data"]["image/png"] == big
    await _revert(notebook_tool, jp_fetch, event)
    assert path.read_bytes() == before


async def test_a_whole_cell_keeps_its_outputs_metadata_and_id(notebook_tool, notebook):
    cell = {
        "cell_type": "code",
        "execution_count": 7,
        "id": "restored-1",
        "metadata": {"tags": ["keep"]},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": ["7\n"]}],
        "source": "print(7)",
    }
    status, result = await notebook_tool(
        {"action": "insert", "notebook_path": "r.ipynb", "cell_index": 0, "cell": cell}
    )
    assert status == 200, result
    assert result["text"] == "Inserted code cell at position 0. Notebook now has 5 cells."
    assert result["details"]["cellId"] == "restored-1"
    assert json.loads(notebook.read_text())["cells"][0] == cell  # exactly as sent
    load(notebook.read_text())  # and valid


async def test_a_whole_cell_without_an_id_gets_a_fresh_one(notebook_tool, notebook):
    cell = {"cell_type": "markdown", "metadata": {}, "source": "hi"}
    status, result = await notebook_tool(
        {"action": "insert", "notebook_path": "r.ipynb", "cell_index": 4, "cell": cell}
    )
    assert status == 200, result
    stored = load(notebook.read_text()).cells[4]
    assert stored["id"] == result["details"]["cellId"] and stored["source"] == "hi"


async def test_a_whole_cell_whose_id_is_taken_is_a_409_and_changes_nothing(notebook_tool, notebook):
    before = notebook.read_bytes()
    taken = json.loads(before)["cells"][0]["id"]
    cell = {"cell_type": "raw", "id": taken, "metadata": {}, "source": "x"}
    status, result = await notebook_tool(
        {"action": "insert", "notebook_path": "r.ipynb", "cell_index": 0, "cell": cell}
    )
    assert status == 409
    assert_response_matches(ENDPOINT, "POST", 409, result)
    assert result["message"] == f"Cell id {taken} already exists in r.ipynb"
    assert result["reason"] == "cell_exists"
    assert result["details"]["cellIndex"] == 0 and result["details"]["cellId"] == taken
    assert notebook.read_bytes() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"action": "insert", "cell_index": 0, "cell": {"cell_type": "code", "source": "x"}},
            "Invalid cell for nbformat 4.5: 'metadata' is a required property in r.ipynb",
        ),
        (
            {"action": "insert", "cell_index": 0, "cell": {"cell_type": "py", "source": "x"}},
            "Invalid cell: cell_type must be one of code, markdown, raw in r.ipynb",
        ),
        (
            {"action": "insert", "cell_index": 0, "cell": [1, 2]},
            "cell must be an object, got array",
        ),
        (
            {"action": "edit", "cell_index": 0, "cell": {"cell_type": "raw"}, "content": "x"},
            "cell cannot be combined with content, cell_type or old_content",
        ),
        (
            {
                "action": "edit",
                "cell_index": 3,
                "cell": {"cell_type": "raw", "id": "other", "metadata": {}, "source": ""},
            },
            "cell.id other is not the id of the cell it replaces ({id}) in r.ipynb",
        ),
        (
            {"action": "delete", "cell_index": 0, "cell": {"cell_type": "raw"}},
            "Field cell is not accepted by the delete action (delete takes: notebook_path, "
            "cell_index, cell_id, expected_source_hash, expected_revision)",
        ),
    ],
    ids=["not-valid", "bad-type", "not-an-object", "with-content", "other-id", "delete"],
)
async def test_a_bad_whole_cell_is_a_400_and_changes_nothing(
    notebook_tool, notebook, body, message
):
    before = notebook.read_bytes()
    status, result = await notebook_tool({"notebook_path": "r.ipynb", **body})
    assert status == 400
    assert result["message"] == message.format(id=json.loads(before)["cells"][3]["id"])
    assert notebook.read_bytes() == before


async def test_a_notebook_without_ids_takes_whole_cells_without_ids(
    notebook_tool, jp_fetch, jp_root_dir, events
):
    path = jp_root_dir / "r.ipynb"
    path.write_text(jupyter_text(sample_notebook(minor=4)), encoding="utf-8")
    before = path.read_bytes()
    _, event = await _change(notebook_tool, events, action="delete", cell_index=1)
    assert "id" not in event["previousCell"]

    status, result = await notebook_tool(
        {
            "action": "insert",
            "notebook_path": "r.ipynb",
            "cell_index": 1,
            "cell": event["previousCell"],
        }
    )

    assert status == 200, result
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "change",
    [
        {"action": "edit", "cell_index": 1, "content": "y = 2"},
        {"action": "insert", "cell_index": 1, "content": "new = 1"},
        {"action": "move", "cell_index": 1, "to_index": 3},
    ],
    ids=["edit", "insert", "move"],
)
async def test_a_revert_is_refused_when_the_cell_changed_since_and_nothing_changes(
    notebook_tool, jp_fetch, notebook, events, change
):
    _, event = await _change(notebook_tool, events, **change)
    # Someone else changes the very cell the call left.
    await _change(
        notebook_tool, events, action="edit", cell_id=event["cellId"], content="later = 1"
    )
    after = notebook.read_bytes()
    previous = await _previous_cell(jp_fetch, event) if event["action"] == "edit" else None

    status, result = await notebook_tool(
        {"notebook_path": "r.ipynb", **_revert_body(event, previous)}
    )

    assert status == 409
    assert_response_matches(ENDPOINT, "POST", 409, result)
    assert result["reason"] == "stale_cell"
    assert result["message"].startswith(f"Cell {result['details']['cellIndex']} changed since")
    assert notebook.read_bytes() == after


async def test_a_revert_of_a_delete_needs_no_revision_even_when_the_server_asks_for_one(
    jp_serverapp, notebook_tool, jp_fetch, notebook, events
):
    # The whole cell's id is its precondition: the insert is refused once that id is back.
    jp_serverapp.web_app.settings["xcsh"].notebook.require_preconditions = "always"
    before = notebook.read_bytes()
    status, read = await notebook_tool({"action": "read", "notebook_path": "r.ipynb"})
    assert status == 200, read
    cell = read["details"]["cells"][1]
    _, event = await _change(
        notebook_tool,
        events,
        action="delete",
        cell_id=cell["cellId"],
        expected_source_hash=cell["sourceHash"],
    )

    await _revert(notebook_tool, jp_fetch, event)

    assert notebook.read_bytes() == before
    status, result = await notebook_tool(
        {"notebook_path": "r.ipynb", **_revert_body(event, event["previousCell"])}
    )
    assert status == 409 and result["reason"] == "cell_exists"

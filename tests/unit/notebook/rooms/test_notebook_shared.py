"""The edit core on a shared notebook (jupyter_ydoc's YNotebook): minimal, atomic, mergeable.

The text-diff tests are pure; the others use real shared documents (pycrdt) and need
jupyter-collaboration's environment (``-m collaboration``). Two documents exchanging updates
stand for the server's room and a person's lab tab.
"""

from __future__ import annotations

import asyncio

import pytest

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.notebook.edit.cells import apply_change, apply_changes, parse_request
from jupyter_xcsh.notebook.rooms.shared import text_change
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import jupyter_text, sample_notebook

P = "a.ipynb"


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        ("abc def", "abc ghi", (4, 7, "ghi")),
        ("abc", "abc", None),
        ("", "x", (0, 0, "x")),
        ("x = 1\ny = 2", "x = 1\nz = 2", (6, 7, "z")),
        ("aaa", "aa", (2, 3, "")),
        ("ab", "aXb", (1, 1, "X")),
        ("print('😀')", "print('😃')", (7, 8, "😃")),
    ],
)
def test_a_text_change_keeps_the_common_prefix_and_suffix(old, new, change):
    assert text_change(old, new) == change
    if change is not None:
        start, end, text = change
        assert old[:start] + text + old[end:] == new


def _shared(minor: int = 5, nb=None):
    from jupyter_ydoc import YNotebook

    room, person = YNotebook(), YNotebook()
    room.set(nb if nb is not None else sample_notebook(minor))
    _sync(room, person)
    return room, person


def _sync(source, target) -> None:
    target.ydoc.apply_update(source.ydoc.get_update(target.ydoc.get_state()))


def _change(ynotebook, **body):
    from jupyter_xcsh.notebook.rooms.shared import SharedNotebook

    shared = SharedNotebook(ynotebook)
    with ynotebook.ydoc.transaction():
        result = apply_change(shared, parse_request({"notebook_path": "a.ipynb", **body}))
        shared.commit()
    return result


@pytest.mark.collaboration
def test_an_edit_keeps_a_persons_concurrent_typing_where_they_typed_it():
    room, person = _shared()
    person.ycells[1]["source"].insert(len("x = 1\npri"), "XX")  # not yet seen by the room
    _change(room, action="edit", cell_index=1, content="x = 1\nprint(x + 1)")
    _sync(room, person)
    _sync(person, room)
    assert str(room.ycells[1]["source"]) == "x = 1\npriXXnt(x + 1)"
    assert str(person.ycells[1]["source"]) == str(room.ycells[1]["source"])


@pytest.mark.collaboration
def test_a_type_change_keeps_the_cells_id_and_metadata():
    room, person = _shared()
    room.ycells[1]["metadata"]["tags"] = ["keep"]
    cell_id = room.get_cell(1)["id"]
    _change(room, action="edit", cell_index=1, content="# now prose", cell_type="markdown")
    _sync(room, person)
    cell = person.get_cell(1)
    assert cell["id"] == cell_id and cell["cell_type"] == "markdown"
    assert cell["metadata"] == {"tags": ["keep"]}
    assert "outputs" not in cell and "execution_count" not in cell


@pytest.mark.collaboration
@pytest.mark.parametrize("minor", [4, 5])
def test_a_move_is_a_delete_and_an_insert_of_the_same_cell(minor):
    room, person = _shared(minor)
    before = room.get_cell(2)
    shared_id = room.ycells[2]["id"]
    _change(room, action="move", cell_index=2, to_index=0)
    _sync(room, person)
    assert person.get_cell(0) == before
    assert person.ycells[0]["id"] == shared_id
    sources = [str(c["source"]) for c in person.ycells]
    assert sources == ["x", "# Title\nSome text", "x = 1\nprint(x)", "raw text"]


@pytest.mark.collaboration
def test_a_failing_change_of_a_batch_leaves_the_shared_document_untouched():
    from jupyter_xcsh.notebook.rooms.shared import SharedNotebook

    room, _ = _shared()
    state = room.ydoc.get_state()
    shared = SharedNotebook(room)
    requests = [
        parse_request({"notebook_path": "a.ipynb", "action": "delete", "cell_index": 0}),
        parse_request({"notebook_path": "a.ipynb", "action": "delete", "cell_index": 9}),
    ]
    with pytest.raises(InvalidRequestError), room.ydoc.transaction():
        apply_changes(shared, requests)
        shared.commit()
    assert room.ydoc.get_state() == state
    assert room.cell_number == 4


@pytest.mark.collaboration
@pytest.mark.parametrize("minor", [4, 5])
def test_the_shared_document_and_the_file_give_the_same_hashes(minor):
    from jupyter_xcsh.notebook.rooms.shared import SharedNotebook

    nb = sample_notebook(minor)
    room, _ = _shared(nb=nb)
    file = NotebookDocument.parse(jupyter_text(nb))
    assert list(SharedNotebook(room).cell_keys()) == list(file.cell_keys())
    assert SharedNotebook(room).nbformat == (4, minor)


@pytest.mark.collaboration
async def test_a_transaction_another_task_keeps_open_is_waited_for_not_joined():
    """A room replacing its document from the file holds one transaction across awaits."""
    from jupyter_ydoc import YNotebook

    from jupyter_xcsh.notebook.rooms.live import in_transaction

    room = YNotebook()
    room.set(sample_notebook())
    replacing, release = asyncio.Event(), asyncio.Event()

    async def replace_from_file():
        with room.ydoc.transaction():
            room.ycells[3]["source"].insert(0, "half ")
            replacing.set()
            await release.wait()
            room.ycells[3]["source"].insert(len("half "), "done ")

    reload = asyncio.create_task(replace_from_file())
    await replacing.wait()
    request = parse_request(
        {"notebook_path": P, "action": "edit", "cell_index": 3, "content": "agent"}
    )
    change = asyncio.create_task(
        in_transaction(room, P, lambda shared: apply_change(shared, request))
    )
    await asyncio.sleep(0.2)
    assert not change.done()  # not joined into the reload's transaction
    release.set()
    await reload
    await change
    assert str(room.ycells[3]["source"]) == "agent"


def _stream(text):
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def _outputs(ynotebook, cell, outputs, count, running=False):
    from jupyter_xcsh.notebook.outputs import set_cell_outputs
    from jupyter_xcsh.notebook.rooms.shared import SharedNotebook

    shared = SharedNotebook(ynotebook)
    with ynotebook.ydoc.transaction():
        place = set_cell_outputs(shared, cell, outputs, count, running=running)
        shared.commit()
    return place


@pytest.mark.collaboration
def test_run_outputs_append_to_a_growing_stream_in_the_arrays_open_tabs_observe():
    from jupyter_xcsh.notebook.outputs import SelectedCell

    room, person = _shared()
    cell = SelectedCell(1, room.get_cell(1)["id"], "code", "x = 1\nprint(x)")
    youtputs = room.ycells[1]["outputs"]

    _outputs(room, cell, _stream("one\n"), None, running=True)
    text = youtputs[0]["text"]
    assert room.ycells[1]["execution_state"] == "running"
    _outputs(room, cell, _stream("one\ntwo\n"), None, running=True)
    error = {"output_type": "error", "ename": "E", "evalue": "v", "traceback": []}
    _outputs(room, cell, [*_stream("one\ntwo\n"), error], 3)

    # The array and the text the lab observes are the ones written to, not replacements.
    assert len(youtputs) == 2 and str(text) == "one\ntwo\n"
    assert room.ycells[1]["execution_state"] == "idle"
    _sync(room, person)
    assert person.get_cell(1)["execution_count"] == 3
    assert person.get_cell(1)["outputs"] == [*_stream("one\ntwo\n"), error]
    assert str(person.ycells[1]["source"]) == "x = 1\nprint(x)"


@pytest.mark.collaboration
def test_run_outputs_replace_what_a_person_cleared_meanwhile():
    from jupyter_xcsh.notebook.outputs import SelectedCell

    room, _ = _shared()
    cell = SelectedCell(1, room.get_cell(1)["id"], "code", "x = 1\nprint(x)")
    _outputs(room, cell, _stream("one\n"), None, running=True)
    from pycrdt import Map, Text

    # Someone else's output replaces what the run wrote: the run's next write is not an append.
    room.ycells[1]["outputs"].clear()
    theirs = {"output_type": "stream", "name": "stderr", "text": Text("theirs\n")}
    room.ycells[1]["outputs"].append(Map(theirs))
    _outputs(room, cell, _stream("one\ntwo\n"), 4)
    assert room.get_cell(1)["outputs"] == _stream("one\ntwo\n")


@pytest.mark.collaboration
def test_run_outputs_follow_a_moved_cell_and_skip_a_deleted_one():
    from jupyter_xcsh.notebook.outputs import SelectedCell

    room, _ = _shared()
    cell = SelectedCell(1, room.get_cell(1)["id"], "code", "x = 1\nprint(x)")
    room.ycells.insert(0, room.create_ycell({"cell_type": "code", "source": "", "metadata": {}}))
    assert _outputs(room, cell, _stream("done\n"), 4).cell.index == 2
    assert room.get_cell(2)["outputs"] == _stream("done\n")
    del room.ycells[2]
    state = room.ydoc.get_state()
    assert _outputs(room, cell, _stream("late\n"), 5).cell is None
    assert room.ydoc.get_state() == state

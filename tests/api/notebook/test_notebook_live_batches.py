"""Batches, id-anchored inserts and find with a room open (docs/developers/contract.md §4, §2.11).

Run in an environment with jupyter-collaboration (``-m collaboration``; ``scripts/check.sh``
makes them). A person is in the notebook's room — a real Yjs client over the websocket, as a
JupyterLab tab — and counts the transactions that reach them: a batch must be one.
"""

from __future__ import annotations

import asyncio
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.support.notebooks import jupyter_text
from tests.support.rtc import rtc_config

pytestmark = [pytest.mark.collaboration, pytest.mark.timeout(300)]

P = "batch.ipynb"


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    import jupyter_server_ydoc  # noqa: F401  (fail, never skip, where it is missing)

    return rtc_config(jp_server_config, jp_root_dir, tmp_path_factory.mktemp("rtc"))


@pytest.fixture
def notebook(jp_root_dir):
    cells = [new_markdown_cell("# T", id="c0")]
    cells += [new_code_cell(f"x{i} = {i}", id=f"c{i}") for i in range(1, 5)]
    path = jp_root_dir / P
    path.write_text(jupyter_text(new_notebook(cells=cells)), encoding="utf-8")
    return path


@pytest.fixture
def room(jp_fetch, jp_http_port, jp_base_url, jp_auth_header, notebook):
    """Join the notebook's room as a person would (``jp_fetch`` starts the server listening)."""
    from tests.support.yroom import RoomClient

    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    return lambda: RoomClient(url, dict(jp_auth_header), P)


async def _call(notebook_tool, status, **body):
    got, result = await notebook_tool({"notebook_path": P, **body})
    assert got == status, result
    return result


def _count_cell_transactions(person):
    """Count the transactions that change the person's cells (one callback per transaction)."""
    seen: list[int] = []
    person.doc.ycells.observe_deep(lambda events: seen.append(len(events)))
    return seen


def _saved(path):
    try:
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # the room is writing it: look again
        return None


BATCH = [
    {"action": "edit", "cell_id": "c1", "content": "renamed = 1"},
    {"action": "insert", "after_cell_id": "c1", "content": "print(renamed)"},
    {"action": "edit", "cell_id": "c3", "old_content": "x3", "content": "renamed"},
    {"action": "move", "cell_id": "c4", "to_before_cell_id": "c0"},
    {"action": "delete", "cell_id": "c2"},
]


async def test_a_batch_reaches_a_person_in_the_room_as_one_transaction(
    notebook_tool, notebook, room
):
    async with room() as person:
        transactions = _count_cell_transactions(person)

        result = await _call(notebook_tool, 200, changes=BATCH)

        assert result["details"]["via"] == "document"
        new_id = result["details"]["changes"][1]["cellId"]
        expected = ["x4 = 4", "# T", "renamed = 1", "print(renamed)", "renamed = 3"]
        await person.wait_for(lambda: person.sources() == expected, "the batch")
        assert person.ids() == ["c4", "c0", "c1", new_id, "c3"]
        assert len(transactions) == 1, transactions

        # The same changes one call each reach the person as one transaction each.
        before = len(transactions)
        for body in ({"content": "a"}, {"content": "b"}, {"content": "c"}):
            await _call(notebook_tool, 200, action="edit", cell_id="c1", **body)
        await person.wait_for(lambda: person.sources()[2] == "c", "three edits")
        assert len(transactions) - before == 3

        # The room saves the file as it always does.
        deadline = time.monotonic() + 60
        while (nb := _saved(notebook)) is None or [c.id for c in nb.cells] != person.ids():
            assert time.monotonic() < deadline, "the room never saved the batch"
            await asyncio.sleep(0.1)
        nbformat.validate(nb)


async def test_a_failing_batch_sends_the_room_nothing(notebook_tool, notebook, room):
    async with room() as person:
        transactions = _count_cell_transactions(person)
        sources = person.sources()

        result = await _call(
            notebook_tool,
            404,
            changes=[*BATCH[:3], {"action": "edit", "cell_id": "gone", "content": "x"}],
        )

        assert result["message"] == f"Change 4 failed: Cell id not found: gone in {P}"
        # A later change proves the room has sent everything it had before it.
        await _call(notebook_tool, 200, action="edit", cell_id="c4", content="later")
        await person.wait_for(lambda: person.sources()[4] == "later", "the later edit")
        assert person.sources() == [*sources[:4], "later"]
        assert len(transactions) == 1


async def test_an_id_anchored_insert_lands_next_to_its_cell_after_a_person_inserted_above(
    notebook_tool, notebook, room
):
    async with room() as person:
        read = await _call(notebook_tool, 200, action="read")
        assert [c["cellId"] for c in read["details"]["cells"]][2] == "c2"
        # A person adds a cell at the top (unsaved, in the room) after the agent's read.
        with person.doc.ydoc.transaction():
            person.doc.ycells.insert(0, person.doc.create_ycell(
                {"cell_type": "markdown", "id": "p0", "metadata": {}, "source": "theirs"}
            ))  # fmt: skip
        await person.wait_for(lambda: person.ids()[0] == "p0", "the person's cell")
        deadline = time.monotonic() + 30
        while (await _call(notebook_tool, 200, action="read"))["details"]["totalCells"] != 6:
            assert time.monotonic() < deadline, "the person's cell never reached the room"
            await asyncio.sleep(0.05)

        result = await _call(notebook_tool, 200, action="insert", after_cell_id="c2", content="n")

        assert result["details"]["cellIndex"] == 4
        await person.wait_for(lambda: len(person.ids()) == 7, "the insert")
        ids = person.ids()
        assert ids[ids.index("c2") + 1] == result["details"]["cellId"]


async def test_find_searches_what_people_see_unsaved_typing_included(notebook_tool, notebook, room):
    async with room() as person:
        person.type(3, "  # typed_by_a_person")
        deadline = time.monotonic() + 30
        while True:
            found = await _call(notebook_tool, 200, action="find", pattern="typed_by_a_person")
            if found["details"]["matches"]:
                break
            assert time.monotonic() < deadline, "the typing never reached the room"
            await asyncio.sleep(0.05)
        assert found["details"]["via"] == "document"
        [match] = found["details"]["matches"]
        assert (match["index"], match["cellId"]) == (3, "c3")
        assert match["lines"] == [{"line": 1, "text": "x3 = 3  # typed_by_a_person"}]

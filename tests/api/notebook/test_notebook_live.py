"""The notebook tool with a room open (docs/developers/contract.md §4): a real room and Yjs client.

Run in an environment with jupyter-collaboration (``-m collaboration``; ``scripts/check.sh``
makes two: the newest release and the newest 4.x). A person joins the notebook's room over the
websocket, as a JupyterLab tab does, and types while the agent changes other cells.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets.config import Config

from jupyter_xcsh.notebook.outputs import SelectedCell
from tests.support.notebooks import jupyter_text, load
from tests.support.rtc import rtc_config

pytestmark = pytest.mark.collaboration

P = "live.ipynb"


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def revision(nb) -> str:
    entries = [[c.get("id", i), c.cell_type, sha16(c.source)] for i, c in enumerate(nb.cells)]
    return sha16(json.dumps(entries, ensure_ascii=False, separators=(",", ":")))


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    import jupyter_server_ydoc  # noqa: F401  (fail, never skip, where it is missing)

    return rtc_config(jp_server_config, jp_root_dir, tmp_path_factory.mktemp("rtc"))


@pytest.fixture
def notebook(jp_root_dir):
    nb = new_notebook(
        cells=[
            new_code_cell("typed: ", id="c0"),
            new_code_cell(
                "a = 1",
                id="c1",
                execution_count=1,
                outputs=[new_output("stream", name="stdout", text="one\n")],
                metadata={"tags": ["keep"]},
            ),
            new_markdown_cell("## b", id="c2"),
            new_code_cell("c = 3", id="c3"),
            new_code_cell("d = 4", id="c4"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    path = jp_root_dir / P
    path.write_text(jupyter_text(nb), encoding="utf-8")
    return path


@pytest.fixture
def room(jp_fetch, jp_http_port, jp_base_url, jp_auth_header, notebook):
    """Join the notebook's room as a person would: ``async with room() as person``.

    (``jp_fetch`` starts the server listening on its port.)
    """
    from tests.support.yroom import RoomClient

    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    return lambda path=P: RoomClient(url, dict(jp_auth_header), path)


async def _ok(notebook_tool, **body):
    status, result = await notebook_tool({"notebook_path": P, **body})
    assert status == 200, result
    return result


async def _wait(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _saved(path):
    try:
        nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # the room is writing it: look again
        return None
    return nb


async def test_agent_changes_and_a_persons_typing_all_land_in_the_room_and_the_file(
    notebook_tool, notebook, room
):
    typed = "hello from a person, key by key"
    async with room() as person:

        async def type_keys():
            for key in typed:
                person.type(0, key)
                await asyncio.sleep(0.02)

        typing = asyncio.create_task(type_keys())
        results = [
            await _ok(notebook_tool, action="edit", cell_id="c1", content="a = 10"),
            await _ok(notebook_tool, action="insert", cell_index=2, content="new = 5"),
            await _ok(notebook_tool, action="move", cell_id="c4", to_index=1),
            await _ok(notebook_tool, action="delete", cell_id="c3"),
            await _ok(notebook_tool, action="edit", cell_id="c2", content="b", cell_type="raw"),
        ]
        await typing
        assert [r["details"]["via"] for r in results] == ["document"] * 5
        new_id = results[1]["details"]["cellId"]
        expected = ["typed: " + typed, "d = 4", "a = 10", "new = 5", "b"]
        await person.wait_for(lambda: person.sources() == expected, "the agent's changes")
        assert person.ids() == ["c0", "c4", "c1", new_id, "c2"]
        # The room saves the shared document: every keystroke and every change reach the file.
        await _wait(
            lambda: (
                (nb := _saved(notebook)) is not None and [c.source for c in nb.cells] == expected
            ),
            "the room to save the file",
        )
    nb = load(notebook.read_text(encoding="utf-8"))
    nbformat.validate(nb)
    assert [c.cell_type for c in nb.cells] == ["code", "code", "code", "code", "raw"]
    assert nb.cells[2].metadata == {"tags": ["keep"]} and nb.cells[2].execution_count == 1
    assert nb.cells[2].outputs[0]["text"] == "one\n"


class TestARoomThatNeverSaves:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.YDocExtension.document_save_delay = None
        return config

    async def test_read_returns_unsaved_text_the_file_does_not_have(
        self, notebook_tool, notebook, room
    ):
        before = notebook.read_bytes()
        async with room() as person:
            person.type(3, "  # unsaved")
            text = ""
            deadline = time.monotonic() + 30
            while "unsaved" not in text and time.monotonic() < deadline:
                text = (await _ok(notebook_tool, action="read"))["text"]
                await asyncio.sleep(0.05)
            assert "c = 3  # unsaved" in text
        assert notebook.read_bytes() == before


async def test_file_and_live_document_give_the_same_hashes_and_revision(
    notebook_tool, notebook, room
):
    from_file = await _ok(notebook_tool, action="read")
    assert from_file["details"]["via"] == "file"
    async with room():
        from_room = await _ok(notebook_tool, action="read")
        assert from_room["details"]["via"] == "document"
        for key in ("revision", "sourceHash", "cells"):
            assert from_room["details"][key] == from_file["details"][key]
        changed = await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 30")
        assert changed["details"]["sourceHash"] == sha16("c = 30")
        await _wait(
            lambda: (nb := _saved(notebook)) is not None and nb.cells[3].source == "c = 30",
            "the room to save",
        )
        assert changed["details"]["revision"] == revision(load(notebook.read_text()))


async def test_a_person_changing_the_cell_after_the_agent_read_it_is_a_409(
    notebook_tool, notebook, room
):
    async with room() as person:
        read = await _ok(notebook_tool, action="read")
        seen = read["details"]["cells"][1]["sourceHash"]
        person.type(1, "  # mine")
        # The keystroke reaches the server's document asynchronously: wait until it has.
        deadline = time.monotonic() + 30
        while (await _ok(notebook_tool, action="read"))["details"]["cells"][1][
            "sourceHash"
        ] == seen:
            assert time.monotonic() < deadline, "the keystroke never reached the room"
            await asyncio.sleep(0.05)
        status, result = await notebook_tool(
            {
                "notebook_path": P,
                "action": "edit",
                "cell_id": "c1",
                "content": "a = 'agent'",
                "expected_source_hash": seen,
            }
        )
        assert status == 409, result
        assert result["reason"] == "stale_cell"
        assert result["details"]["cellSource"] == "a = 1  # mine"
        assert result["details"]["sourceHash"] == sha16("a = 1  # mine")
        assert person.sources()[1] == "a = 1  # mine"


async def test_without_a_room_the_file_is_changed(notebook_tool, notebook):
    result = await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 0")
    assert result["details"]["via"] == "file"
    assert load(notebook.read_text()).cells[3].source == "c = 0"


async def test_outputs_of_a_run_in_place_go_into_the_room(notebook, room, jp_serverapp):
    store = jp_serverapp.web_app.settings["xcsh"].notebook_store
    outputs = [{"output_type": "stream", "name": "stdout", "text": "30\n"}]
    cell = SelectedCell(3, "c3", "code", "c = 3")
    async with room() as person:
        outcome = await store.write_outputs(P, cell, outputs, 7)
        assert outcome.via == "document" and outcome.value.cell.index == 3

        def ran():
            cell = person.doc.get_cell(3)
            return cell["execution_count"] == 7 and cell["outputs"] == outputs

        await person.wait_for(ran, "the outputs")
        assert person.sources()[3] == "c = 3"


async def test_an_insert_that_runs_its_cell_goes_into_the_room_as_one_call(
    notebook_tool, notebook, room
):
    """``run: true`` in a room: the cell is inserted into the live document, run, and its
    outputs written there; a markdown cell with ``run`` leaves the room untouched."""
    async with room() as person:
        body = {"action": "insert", "after_cell_id": "c1", "content": "print(6 * 7)"}
        result = await _ok(notebook_tool, **body, run=True, timeout=60)

        assert result["change"]["via"] == "document" and result["notebook"]["via"] == "document"
        assert result["text"].endswith("\n\n42") and result["isError"] is False
        index = result["change"]["cellIndex"]

        def ran():
            cell = person.doc.get_cell(index)
            return "".join(o.get("text", "") for o in cell["outputs"]) == "42\n"

        await person.wait_for(ran, "the inserted cell's output")
        assert person.sources()[index] == "print(6 * 7)"
        before = person.sources()
        markdown = {"action": "insert", "cell_index": 0, "content": "# t", "cell_type": "markdown"}
        status, refused = await notebook_tool({"notebook_path": P, **markdown, "run": True})
        assert (status, refused["message"]) == (400, f"Cell 0 is not a code cell in {P}")
        await asyncio.sleep(0.2)
        assert person.sources() == before


async def test_a_run_in_place_writes_into_the_room_while_its_cell_runs(
    notebook_tool, notebook, room, jp_fetch, tmp_path
):
    """The run's outputs reach the person's tab as they come, through the shared document."""
    from tests.support.inplace import run_ok

    gate = tmp_path / "go"
    code = (
        "import os, time\nprint('first', flush=True)\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.05)\nprint('second')"
    )
    async with room() as person:
        await _ok(notebook_tool, action="edit", cell_id="c4", content=code)
        running = asyncio.create_task(run_ok(jp_fetch, notebook_path=P, cell_id="c4"))

        def shown(text):
            cell = person.doc.get_cell(4)
            return "".join(o.get("text", "") for o in cell["outputs"]) == text

        # While the cell runs: what it printed so far, and the cell shown running ([*]).
        await person.wait_for(lambda: shown("first\n"), "the first line, live")
        assert str(person.doc.ycells[4]["execution_state"]) == "running"
        person.type(0, "typing meanwhile")
        gate.touch()
        result = await running
        await person.wait_for(lambda: shown("first\nsecond\n"), "the whole output")
        assert result["notebook"]["via"] == "document" and result["isError"] is False
        assert [c["outputsWritten"] for c in result["cells"]] == [True]
        await person.wait_for(
            lambda: (
                person.doc.get_cell(4)["execution_count"] == result["cells"][0]["executionCount"]
                and str(person.doc.ycells[4]["execution_state"]) == "idle"
            ),
            "the count, and the cell idle",
        )
        # One stream output, printed on in place (not replaced at every write).
        assert len(person.doc.ycells[4]["outputs"]) == 1
        assert person.sources()[0] == "typed: typing meanwhile"


class TestRealTimeCollaborationDisabled:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.YDocExtension.disable_rtc = True
        return config

    async def test_the_file_is_used(self, notebook_tool, notebook, room):
        async with room():
            result = await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 9")
        assert result["details"]["via"] == "file"
        assert load(notebook.read_text()).cells[3].source == "c = 9"


class TestARoomOpeningWhileTheFileIsChanged:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = (
            "tests.support.fakes.RoomOpensOnLoadContentsManager"
        )
        # A room made by get_document(create=True) ignores the store's configured db_path.
        config.YDocExtension.ystore_class = "jupyter_server_ydoc.stores.TempFileYStore"
        return config

    async def test_the_change_goes_to_the_room_not_the_file(
        self, notebook_tool, notebook, jp_serverapp
    ):
        before = notebook.read_bytes()
        result = await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 33")
        assert result["details"]["via"] == "document"
        ydoc = jp_serverapp.web_app.settings["jupyter_server_ydoc"]
        document = await ydoc.get_document(
            path=P, content_type="notebook", file_format="json", copy=False
        )
        assert str(document.ycells[3]["source"]) == "c = 33"
        assert notebook.read_bytes() == before or b"c = 33" in notebook.read_bytes()

"""The notebook tool with jupyter-server-documents (Jupyter AI 3's collaboration backend).

Run in an environment with jupyter-server-documents and without jupyter-collaboration
(``-m server_documents``; ``scripts/check.sh`` makes ``.venv-sdocs``). A person joins the
notebook's room over its websocket as its lab plugin does (``tests/support/yroom.py``) and types
while
the agent changes cells, reads them and runs them in place. Its outputs store
(``OutputProcessor.use_outputs_service``) is tested off (its default: outputs in the document)
and on (placeholders in the document, outputs in its ``OutputsManager``).
"""

from __future__ import annotations

import asyncio
import json
import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets.config import Config

from tests.support.inplace import run_ok
from tests.support.notebooks import jupyter_text, load
from tests.support.rtc import server_documents_config

pytestmark = pytest.mark.server_documents

P = "docs.ipynb"
VIA = "jupyter-server-documents"


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    import jupyter_server_documents  # noqa: F401  (fail, never skip, where it is missing)

    return server_documents_config(jp_server_config, jp_root_dir, tmp_path_factory.mktemp("sd"))


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
    """Join the notebook's room as a person would: ``async with room() as person``."""
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
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # the room is writing it: look again
        return None


def _rooms(serverapp):
    return serverapp.web_app.settings["yroom_manager"]


async def test_a_persons_typing_survives_every_kind_of_agent_change(notebook_tool, notebook, room):
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
            await _ok(
                notebook_tool,
                changes=[
                    {"action": "insert", "cell_index": 5, "content": "x = 1"},
                    {"action": "edit", "cell_id": "c4", "content": "d = 40"},
                    {"action": "move", "cell_id": "c2", "to_index": 5},
                ],
            ),
        ]
        await typing
        assert [r["details"]["via"] for r in results] == [VIA] * 6
        new_id = results[1]["details"]["cellId"]
        x_id = results[5]["details"]["changes"][0]["cellId"]
        expected = ["typed: " + typed, "d = 40", "a = 10", "new = 5", "x = 1", "b"]
        await person.wait_for(lambda: person.sources() == expected, "the agent's changes")
        assert person.ids() == ["c0", "c4", "c1", new_id, x_id, "c2"]
        # The room saves the document: every keystroke and every change reach the file.
        await _wait(
            lambda: (
                (nb := _saved(notebook)) is not None and [c.source for c in nb.cells] == expected
            ),
            "the room to save the file",
        )
    nb = load(notebook.read_text(encoding="utf-8"))
    nbformat.validate(nb)
    assert [c.cell_type for c in nb.cells] == ["code", "code", "code", "code", "code", "raw"]
    assert nb.cells[2].metadata == {"tags": ["keep"]} and nb.cells[2].execution_count == 1
    assert nb.cells[2].outputs[0]["text"] == "one\n"


class TestARoomThatDoesNotSaveYet:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.YRoomFileAPI.min_poll_interval = 3600.0  # the room's saves wait an hour
        return config

    async def test_read_and_find_see_unsaved_text_the_file_does_not_have(
        self, notebook_tool, notebook, room
    ):
        before = notebook.read_bytes()
        async with room() as person:
            person.type(3, "  # unsaved")
            text = ""
            deadline = time.monotonic() + 30
            while "unsaved" not in text and time.monotonic() < deadline:
                read = await _ok(notebook_tool, action="read")
                text = read["text"]
                await asyncio.sleep(0.05)
            assert "c = 3  # unsaved" in text
            assert read["details"]["via"] == VIA
            found = await _ok(notebook_tool, action="find", pattern="unsaved")
            assert found["details"]["via"] == VIA
            assert [m["cellId"] for m in found["details"]["matches"]] == ["c3"]
            assert notebook.read_bytes() == before


async def test_a_person_changing_the_cell_after_the_agent_read_it_is_a_409(
    notebook_tool, notebook, room
):
    async with room() as person:
        read = await _ok(notebook_tool, action="read")
        seen = read["details"]["cells"][1]["sourceHash"]
        person.type(1, "  # mine")
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
        assert result["details"]["cellSource"] == "a = 1  # mine"
        assert person.sources()[1] == "a = 1  # mine"


async def test_a_notebook_nobody_has_open_gets_no_room_and_the_file_is_changed(
    notebook_tool, notebook, jp_serverapp
):
    """Its ``get_document`` would open a room for any path: the tool never calls it."""
    result = await _ok(notebook_tool, action="edit", cell_id="c3", content="c = 0")
    assert result["details"]["via"] == "file"
    assert load(notebook.read_text()).cells[3].source == "c = 0"
    read = await _ok(notebook_tool, action="read")
    assert read["details"]["via"] == "file"
    assert _rooms(jp_serverapp).list_document_rooms() == []
    file_ids = jp_serverapp.web_app.settings["file_id_manager"]
    assert file_ids.get_id(P) is None  # not even given a file id


async def test_a_run_in_place_writes_its_outputs_into_the_document(
    notebook_tool, notebook, room, jp_fetch, tmp_path
):
    """Outputs reach the person as they come and end in the saved file; via names the backend."""
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

        await person.wait_for(lambda: shown("first\n"), "the first line, live")
        assert str(person.doc.ycells[4]["execution_state"]) == "running"
        person.type(0, "typing meanwhile")
        gate.touch()
        result = await running
        assert result["notebook"]["via"] == VIA and result["isError"] is False
        assert [c["outputsWritten"] for c in result["cells"]] == [True]
        count = result["cells"][0]["executionCount"]
        await person.wait_for(
            lambda: (
                shown("first\nsecond\n")
                and person.doc.get_cell(4)["execution_count"] == count
                and str(person.doc.ycells[4]["execution_state"]) == "idle"
            ),
            "the whole output, the count, the cell idle",
        )
        assert person.sources()[0] == "typed: typing meanwhile"
        read = await _ok(notebook_tool, action="read", cell_index=4, end_index=5)
        assert "first" in read["text"] and "second" in read["text"]

        def saved():
            nb = _saved(notebook)
            return nb is not None and nb.cells[4].get("execution_count") == count

        await _wait(saved, "the room to save the outputs")
    nb = load(notebook.read_text(encoding="utf-8"))
    assert "".join(o["text"] for o in nb.cells[4].outputs) == "first\nsecond\n"
    assert nb.cells[0].source == "typed: typing meanwhile"


class TestItsOutputsStore:
    """``OutputProcessor.use_outputs_service``: the document holds placeholders, the store
    the outputs, and the room's save writes the store's outputs into the file."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config, tmp_path_factory):
        return server_documents_config(
            jp_server_config,
            tmp_path_factory.mktemp("unused"),
            tmp_path_factory.mktemp("sd-outputs"),
            outputs_service=True,
        )

    async def test_run_outputs_go_to_the_store_and_the_saved_file(
        self, notebook_tool, notebook, room, jp_fetch, jp_serverapp
    ):
        store = jp_serverapp.web_app.settings["outputs_manager"]
        assert store is not None
        code = (
            "print('stored')\nfrom IPython.display import display\n"
            "display({'application/json': {'k': 1}, 'text/plain': 'k'}, raw=True)"
        )
        async with room() as person:
            # Loading the notebook moved its outputs into the store: the read shows them.
            read = await _ok(notebook_tool, action="read", cell_index=1, end_index=2)
            assert read["details"]["via"] == VIA and "[stdout] one" in read["text"]
            await _ok(notebook_tool, action="edit", cell_id="c3", content=code)
            result = await run_ok(jp_fetch, notebook_path=P, cell_id="c3")
            assert result["notebook"]["via"] == VIA and result["isError"] is False
            count = result["cells"][0]["executionCount"]

            def placeholders():
                cell = person.doc.get_cell(3)
                urls = [o.get("metadata", {}).get("url") for o in cell["outputs"]]
                return cell["execution_count"] == count and len(urls) == 2 and all(urls)

            await person.wait_for(placeholders, "the outputs' placeholders")
            outputs = person.doc.get_cell(3)["outputs"]
            assert [o["output_type"] for o in outputs] == ["stream", "display_data"]
            assert "stored" not in json.dumps(outputs)  # the document holds no output data
            # What the open notebook fetches for each placeholder: the output itself.
            fetched = []
            for output in outputs:
                parts = output["metadata"]["url"].strip("/").split("/")
                response = await jp_fetch(*parts, method="GET")
                fetched.append(json.loads(response.body))
            assert fetched[0]["text"] == "stored\n"
            assert fetched[1]["data"]["application/json"] == {"k": 1}
            read = await _ok(notebook_tool, action="read", cell_index=3, end_index=4)
            assert "[stdout] stored" in read["text"]
            # An edit of the cell's source keeps its stored outputs.
            await _ok(notebook_tool, action="edit", cell_id="c3", content=code + "\n# edited")
            assert person.doc.get_cell(3)["outputs"] == outputs or await _settled(person, outputs)

            def saved():
                nb = _saved(notebook)
                return nb is not None and nb.cells[3].source.endswith("# edited")

            await _wait(saved, "the room to save")
        nb = load(notebook.read_text(encoding="utf-8"))
        nbformat.validate(nb)
        assert nb.cells[3].execution_count == count
        assert nb.cells[3].outputs[0]["text"] == "stored\n"
        assert nb.cells[3].outputs[1]["data"]["application/json"] == {"k": 1}
        assert nb.cells[1].outputs[0]["text"] == "one\n"

    async def test_a_running_cells_outputs_are_stored_and_shown_as_they_come(
        self, notebook_tool, notebook, room, jp_fetch, tmp_path
    ):
        gate = tmp_path / "go"
        code = (
            "import os, time\nprint('first', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.05)\nprint('second')"
        )

        async def stored_text():
            texts = []
            for output in person.doc.get_cell(4)["outputs"]:
                parts = output["metadata"]["url"].strip("/").split("/")
                texts.append(json.loads((await jp_fetch(*parts, method="GET")).body)["text"])
            return "".join(texts)

        async with room() as person:
            await _ok(notebook_tool, action="edit", cell_id="c4", content=code)
            running = asyncio.create_task(run_ok(jp_fetch, notebook_path=P, cell_id="c4"))
            await person.wait_for(
                lambda: (
                    len(person.doc.get_cell(4)["outputs"]) == 1
                    and str(person.doc.ycells[4]["execution_state"]) == "running"
                ),
                "a placeholder while the cell runs",
            )
            assert await stored_text() == "first\n"
            gate.touch()
            result = await running
            assert result["notebook"]["via"] == VIA
            await person.wait_for(
                lambda: str(person.doc.ycells[4]["execution_state"]) == "idle", "the cell idle"
            )
            assert await stored_text() == "first\nsecond\n"

    async def test_a_whole_cell_put_back_keeps_its_outputs_in_the_store(
        self, notebook_tool, notebook, room, jp_fetch
    ):
        """The lab's revert of a delete inserts the whole cell, outputs included."""
        async with room() as person:
            deleted = await _ok(notebook_tool, action="delete", cell_id="c1")
            assert deleted["details"]["via"] == VIA
            cell = {
                "cell_type": "code",
                "id": "c1",
                "source": "a = 1",
                "metadata": {"tags": ["keep"]},
                "execution_count": 1,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "put back\n"}],
            }
            await _ok(notebook_tool, action="insert", cell_index=1, cell=cell)

            def put_back():
                return person.ids()[1:2] == ["c1"] and person.doc.get_cell(1)["outputs"]

            await person.wait_for(put_back, "the cell put back")
            [output] = person.doc.get_cell(1)["outputs"]
            assert "put back" not in json.dumps(output)  # a placeholder
            parts = output["metadata"]["url"].strip("/").split("/")
            stored = json.loads((await jp_fetch(*parts, method="GET")).body)
            assert stored["text"] == "put back\n"
            read = await _ok(notebook_tool, action="read", cell_index=1, end_index=2)
            assert "[stdout] put back" in read["text"]

            def saved():
                nb = _saved(notebook)
                return nb is not None and "put back" in json.dumps(nb.cells[1].get("outputs"))

            await _wait(saved, "the room to save the cell's outputs")
        nb = load(notebook.read_text(encoding="utf-8"))
        assert [c.id for c in nb.cells] == ["c0", "c1", "c2", "c3", "c4"]
        assert nb.cells[1].outputs == [new_output("stream", name="stdout", text="put back\n")]


async def _settled(person, outputs):
    await person.wait_for(lambda: person.doc.get_cell(3)["outputs"] == outputs, "the outputs")
    return True


async def test_a_run_of_a_notebook_nobody_has_open_goes_through_its_sessions_room(
    notebook, jp_fetch, jp_serverapp
):
    """jupyter-server-documents puts every notebook session in a room: the run's new session
    opens one, the outputs go to its document (not the file under it), and the room saves."""
    result = await run_ok(jp_fetch, notebook_path=P, cell_id="c3")
    assert result["kernel"]["started"] is True and result["isError"] is False
    assert result["notebook"]["via"] == VIA
    assert len(_rooms(jp_serverapp).list_document_rooms()) == 1
    count = result["cells"][0]["executionCount"]

    def saved():
        nb = _saved(notebook)
        return nb is not None and nb.cells[3].get("execution_count") == count

    await _wait(saved, "the room to save the outputs")

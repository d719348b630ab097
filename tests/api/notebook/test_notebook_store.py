"""The store's building blocks for later features: several changes at once, outputs of a run."""

from __future__ import annotations

import json

import pytest

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.notebook.edit.cells import apply_changes, parse_request
from jupyter_xcsh.notebook.model import notebook_revision, source_hash
from jupyter_xcsh.notebook.outputs import SelectedCell
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import jupyter_text, load, raw_cells, sample_notebook

P = "a.ipynb"


@pytest.fixture
def store(jp_serverapp):
    return jp_serverapp.web_app.settings["xcsh"].notebook_store


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / P
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


def _requests(*bodies):
    return [parse_request({"notebook_path": P, **body}) for body in bodies]


async def test_several_changes_are_saved_once_each_seeing_the_earlier_ones(
    store, notebook, jp_serverapp
):
    saves = []
    jp_serverapp.contents_manager.register_pre_save_hook(
        lambda model, path, **kw: saves.append(path)
    )
    changes = _requests(
        {"action": "insert", "cell_index": 0, "content": "first"},
        {"action": "edit", "cell_index": 1, "content": "# was cell 0"},
    )
    outcome = await store.update(P, lambda document: apply_changes(document, changes))
    assert [r.text for r in outcome.value] == [
        "Inserted code cell at position 0. Notebook now has 5 cells.",
        "Replaced cell 1 (markdown). Notebook now has 5 cells.",
    ]
    assert outcome.via == "file" and saves == [P]
    assert [c.source for c in load(notebook.read_text()).cells][:2] == ["first", "# was cell 0"]


async def test_a_failing_change_leaves_the_notebook_as_it_was(store, notebook):
    before = notebook.read_bytes()
    changes = _requests(
        {"action": "delete", "cell_index": 0},
        {"action": "delete", "cell_index": 9},
    )
    with pytest.raises(InvalidRequestError):
        await store.update(P, lambda document: apply_changes(document, changes))
    assert notebook.read_bytes() == before


def _selected(cell):
    return SelectedCell(0, cell.get("id"), cell.cell_type, cell.source)


async def test_outputs_of_a_run_change_only_that_cells_outputs_and_count(store, notebook):
    before = notebook.read_text()
    nb = load(before)
    outputs = [{"output_type": "stream", "name": "stdout", "text": "2\n"}]
    outcome = await store.write_outputs(P, _selected(nb.cells[1]), outputs, 12)
    assert outcome.via == "file" and outcome.value.cell.index == 1
    after = notebook.read_text()
    cells_before, cells_after = raw_cells(before), raw_cells(after)
    # As Jupyter writes outputs: multi-line strings as lists of lines.
    stored = [{"name": "stdout", "output_type": "stream", "text": ["2\n"]}]
    assert cells_after[1] == {**cells_before[1], "outputs": stored, "execution_count": 12}
    assert [json.dumps(c) for i, c in enumerate(cells_after) if i != 1] == [
        json.dumps(c) for i, c in enumerate(cells_before) if i != 1
    ]
    assert source_hash(cells_after[1]["source"]) == source_hash(cells_before[1]["source"])
    revision = notebook_revision(NotebookDocument.parse(before).cell_keys())
    assert notebook_revision(NotebookDocument.parse(after).cell_keys()) == revision
    assert outcome.value.revision == revision


async def test_outputs_go_only_to_a_code_cell_still_there(store, notebook, jp_serverapp):
    saves = []
    jp_serverapp.contents_manager.register_pre_save_hook(
        lambda model, path, **kw: saves.append(path)
    )
    before = notebook.read_bytes()
    nb = load(notebook.read_text())
    gone = SelectedCell(1, "nope", "code", "x")
    assert (await store.write_outputs(P, gone, [], None)).value.cell is None
    assert (await store.write_outputs(P, _selected(nb.cells[0]), [], None)).value.cell is None
    assert notebook.read_bytes() == before and saves == []


async def test_outputs_of_a_running_cell_are_never_written_to_a_file(store, notebook):
    before = notebook.read_bytes()
    nb = load(notebook.read_text())
    outputs = [{"output_type": "stream", "name": "stdout", "text": "so far\n"}]
    assert await store.show_outputs(P, _selected(nb.cells[1]), outputs, None) is None
    assert notebook.read_bytes() == before

"""The pure cell-edit core: request validation, source splitting and each action's rules."""

from __future__ import annotations

import re

import pytest

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.notebook.edit.cells import apply_change, parse_request, split_source
from jupyter_xcsh.notebook.model import notebook_revision, source_hash
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import jupyter_text, load, raw_cells, sample_notebook

P = "dir/a.ipynb"


def _doc(minor: int = 5) -> NotebookDocument:
    return NotebookDocument.parse(jupyter_text(sample_notebook(minor)))


def _apply(doc: NotebookDocument, **body):
    return apply_change(doc, parse_request({"notebook_path": P, **body}))


def _error(body) -> str:
    with pytest.raises(InvalidRequestError) as info:
        parse_request(body)
    return info.value.message


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        ("", [""]),
        ("a\n", ["a\n", ""]),
        ("a\nb", ["a\n", "b"]),
        ("a\n\nb\n", ["a\n", "\n", "b\n", ""]),
        ("x\r\ny", ["x\r\n", "y"]),
    ],
)
def test_content_splits_into_lines_keeping_every_newline_but_none_forced_at_the_end(content, lines):
    assert split_source(content) == lines


@pytest.mark.parametrize("value", [1.5, "1", True, [1], {"a": 1}])
def test_a_non_integer_cell_index_is_refused(value):
    body = {"action": "delete", "notebook_path": P, "cell_index": value}
    assert _error(body).startswith("cell_index must be an integer, got ")


def test_an_unknown_action_is_refused_with_the_exact_message():
    # The tool's actions (changes is served before the request is parsed), the nearest first.
    actions = "actions: edit, insert, delete, move, read, find, create, changes"
    assert _error({"action": "rename", "notebook_path": P}) == f"Invalid action: rename ({actions})"
    assert _error({"action": "raed", "notebook_path": P}) == (
        f"Invalid action: raed (did you mean read? {actions})"
    )
    assert _error({"action": 5, "notebook_path": P}) == f"Invalid action: 5 ({actions})"


def test_content_is_required_for_edit_and_insert():
    for action in ("edit", "insert"):
        body = {"action": action, "notebook_path": P, "cell_index": 0}
        assert _error(body) == f"Content is required for {action} action"


def test_null_fields_count_as_missing():
    body = {"action": "edit", "notebook_path": P, "cell_index": 0, "content": None}
    assert _error(body) == "Content is required for edit action"


def test_unknown_fields_and_fields_foreign_to_the_action_are_refused():
    # Each names the nearest field and the ones the action takes (all, without an action).
    read = (
        "read takes: notebook_path, cell_index, cell_id, end_index, max_chars, execution_count, "
        "images"
    )
    assert _error({"action": "read", "notebook_path": P, "path": "x"}) == (
        f"Unknown field: path (did you mean notebook_path? {read})"
    )
    assert _error({"action": "read", "notebook_path": P, "colour": 1}) == (
        f"Unknown field: colour ({read})"
    )
    assert _error({"notebook_path": P, "source": "x"}).startswith(
        "Unknown field: source (did you mean content? fields: action, notebook_path, cell_index,"
    )
    body = {"action": "delete", "notebook_path": P, "cell_index": 0, "content": "x"}
    assert _error(body) == (
        "Field content is not accepted by the delete action (delete takes: notebook_path, "
        "cell_index, cell_id, expected_source_hash, expected_revision)"
    )


def test_missing_path_index_and_bad_cell_type_are_explained():
    assert _error({"action": "read"}) == "notebook_path is required"
    assert _error({"action": "delete", "notebook_path": P}) == (
        "cell_index or cell_id is required for delete action"
    )
    assert _error({"action": "insert", "notebook_path": P, "content": ""}) == (
        "cell_index, after_cell_id or before_cell_id is required for insert action"
    )
    body = {
        "action": "insert",
        "notebook_path": P,
        "cell_index": 0,
        "content": "",
        "cell_type": "x",
    }
    assert _error(body) == "Invalid cell_type: x (expected one of code, markdown, raw)"
    assert _error({"action": "delete", "notebook_path": P, "cell_index": -1}) == (
        "cell_index must not be negative, got -1"
    )


def test_edit_replaces_source_and_keeps_type_outputs_count_metadata_and_id():
    doc = _doc()
    before = doc.cells[2]
    result = _apply(doc, action="edit", cell_index=2, content="x = 1\ny = 2")
    assert result.text == "Replaced cell 2 (code). Notebook now has 4 cells."
    assert result.details == {
        "action": "edit",
        "cellIndex": 2,
        "cellType": "code",
        "totalCells": 4,
        "cellSource": ["x = 1\n", "y = 2"],
        "cellId": before["id"],
        "sourceHash": source_hash("x = 1\ny = 2"),
        "revision": notebook_revision(doc.cell_keys()),
    }
    after = raw_cells(doc.dumps())[2]
    assert {k: v for k, v in after.items() if k != "source"} == {
        k: v for k, v in before.items() if k != "source"
    }
    load(doc.dumps())


def test_edit_with_another_cell_type_converts_code_to_markdown_and_back():
    doc = _doc()
    result = _apply(doc, action="edit", cell_index=2, content="# md", cell_type="markdown")
    assert result.text == (
        "Replaced cell 2 (markdown, converted from code). Notebook now has 4 cells."
    )
    assert result.details["previousCellType"] == "code"
    cell = raw_cells(doc.dumps())[2]
    assert "outputs" not in cell and "execution_count" not in cell
    load(doc.dumps())
    _apply(doc, action="edit", cell_index=2, content="1", cell_type="code")
    cell = raw_cells(doc.dumps())[2]
    assert cell["outputs"] == [] and cell["execution_count"] is None
    assert list(cell) == sorted(cell)
    load(doc.dumps())


def test_edit_with_the_same_cell_type_does_not_convert():
    result = _apply(_doc(), action="edit", cell_index=0, content="x", cell_type="markdown")
    assert result.text == "Replaced cell 0 (markdown). Notebook now has 4 cells."


@pytest.mark.parametrize(
    ("cell_type", "keys"),
    [
        ("code", ["cell_type", "execution_count", "id", "metadata", "outputs", "source"]),
        ("markdown", ["cell_type", "id", "metadata", "source"]),
        ("raw", ["cell_type", "id", "metadata", "source"]),
    ],
)
def test_insert_builds_exactly_the_cell_nbformat_expects(cell_type, keys):
    doc = _doc()
    result = _apply(doc, action="insert", cell_index=4, content="a\n", cell_type=cell_type)
    assert result.text == f"Inserted {cell_type} cell at position 4. Notebook now has 5 cells."
    cell = raw_cells(doc.dumps())[4]
    assert list(cell) == keys
    assert cell["source"] == ["a\n", ""] and cell["metadata"] == {}
    if cell_type == "code":
        assert cell["execution_count"] is None and cell["outputs"] == []
    load(doc.dumps())


def test_insert_defaults_to_code():
    result = _apply(_doc(), action="insert", cell_index=0, content="")
    assert result.details["cellType"] == "code" and result.details["cellSource"] == [""]


def test_insert_into_45_notebook_assigns_a_fresh_valid_unique_cell_id():
    doc = _doc()
    ids = {c["id"] for c in doc.cells}
    for _ in range(20):
        _apply(doc, action="insert", cell_index=0, content="")
    new_ids = [c["id"] for c in raw_cells(doc.dumps())[:20]]
    assert all(re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", i) for i in new_ids)
    assert len(set(new_ids)) == 20 and not set(new_ids) & ids
    load(doc.dumps())


def test_insert_into_44_notebook_adds_no_id():
    doc = _doc(minor=4)
    result = _apply(doc, action="insert", cell_index=1, content="")
    assert result.details["cellId"] is None
    assert "id" not in raw_cells(doc.dumps())[1]
    load(doc.dumps())


def test_index_ranges_differ_for_insert_and_other_actions():
    with pytest.raises(InvalidRequestError) as info:
        _apply(_doc(), action="insert", cell_index=5, content="")
    assert info.value.message == f"Cell index 5 out of range for insert (0-4) in {P}"
    for action, extra in (("edit", {"content": ""}), ("delete", {})):
        with pytest.raises(InvalidRequestError) as info:
            _apply(_doc(), action=action, cell_index=4, **extra)
        assert info.value.message == f"Cell index 4 out of range (0-3) in {P}"


def test_delete_returns_the_removed_source_exactly_as_stored():
    doc = NotebookDocument.parse(
        '{"cells": [{"cell_type": "raw", "metadata": {}, "source": "a\\nb"}],'
        ' "nbformat": 4, "nbformat_minor": 4, "metadata": {}}'
    )
    result = _apply(doc, action="delete", cell_index=0)
    assert result.text == "Deleted cell 0 (raw). Notebook now has 0 cells."
    assert result.details["cellSource"] == "a\nb"


def test_cell_id_addresses_a_cell_instead_of_an_index():
    doc = _doc()
    target = doc.cells[3]["id"]
    result = _apply(doc, action="edit", cell_id=target, content="new")
    assert result.details["cellIndex"] == 3
    with pytest.raises(NotFoundError) as info:
        _apply(doc, action="delete", cell_id="nope")
    assert info.value.message == f"Cell id not found: nope in {P}"
    with pytest.raises(InvalidRequestError, match="name different cells"):
        _apply(doc, action="delete", cell_id=target, cell_index=0)


def test_move_puts_the_cell_at_its_final_position():
    doc = _doc()
    moved = doc.cells[0]["id"]
    result = _apply(doc, action="move", cell_index=0, to_index=3)
    assert result.text == "Moved cell 0 to position 3 (markdown). Notebook now has 4 cells."
    assert result.details["fromIndex"] == 0 and result.details["cellIndex"] == 3
    assert raw_cells(doc.dumps())[3]["id"] == moved
    with pytest.raises(InvalidRequestError) as info:
        _apply(doc, action="move", cell_index=0, to_index=4)
    assert info.value.message == f"Target index 4 out of range (0-3) in {P}"


def test_move_to_the_same_place_reports_no_change():
    assert _apply(_doc(), action="move", cell_index=1, to_index=1).changed is False


def test_cells_that_are_not_objects_can_still_be_deleted_and_moved():
    doc = NotebookDocument.parse(
        '{"cells": [1, {"cell_type": "raw", "metadata": {}, "source": []}, "x"],'
        ' "nbformat": 4, "nbformat_minor": 4, "metadata": {}}'
    )
    moved = _apply(doc, action="move", cell_index=2, to_index=0)
    assert moved.details["cellType"] == "unknown" and moved.details["cellSource"] == []
    deleted = _apply(doc, action="delete", cell_index=0)
    assert deleted.text == "Deleted cell 0 (unknown). Notebook now has 2 cells."
    assert raw_cells(doc.dumps()) == [1, {"cell_type": "raw", "metadata": {}, "source": []}]

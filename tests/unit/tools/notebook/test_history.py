"""The notebook tool's ``changes`` history: the pure diff on ``CellKey`` lists, and its bounds."""

from __future__ import annotations

import pytest

from jupyter_xcsh.notebook.model import CellKey
from jupyter_xcsh.tools.notebook.history import NotebookHistory, cell_changes


def key(cell_id: str | None, source: str, cell_type: str = "code") -> CellKey:
    return CellKey(cell_id, cell_type, source)


def test_the_diff_matches_cells_by_id_and_keeps_the_most_cells_in_place():
    before = [key("a", "1"), key("b", "2"), key("c", "3"), key("d", "4")]
    after = [key("b", "2"), key("c", "3!"), key("a", "1"), key("e", "5", "markdown")]

    changes = cell_changes(before, after)

    assert changes == [
        {"change": "removed", "cellId": "d", "index": 3, "cellType": "code"},
        {"change": "edited", "cellId": "c", "index": 1, "cellType": "code"},
        {"change": "moved", "cellId": "a", "index": 2, "cellType": "code", "fromIndex": 0},
        {"change": "added", "cellId": "e", "index": 3, "cellType": "markdown"},
    ]


def test_without_ids_cells_are_compared_by_index():
    before = [key(None, "1"), key(None, "2")]
    after = [key(None, "1"), key(None, "2!"), key(None, "3")]

    assert [(c["change"], c["index"]) for c in cell_changes(before, after)] == [
        ("edited", 1),
        ("added", 2),
    ]


def test_the_history_is_bounded_and_forgets_the_oldest_states():
    history = NotebookHistory(max_entries=3, max_chars=10_000, max_notebooks=2)
    first = history.record("a", [key("x", "0")], "agent")
    for k in range(1, 4):
        history.record("a", [key("x", str(k))], "file")

    with pytest.raises(Exception, match="not in the change history"):
        history.since("a", first.revision)
    history.record("b", [key("x", "b")], "file")
    history.record("c", [key("x", "c")], "file")
    assert not history.knows("a") and history.knows("b") and history.knows("c")

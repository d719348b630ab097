"""The span-preserving notebook document: exact bytes survive every edit they are not part of."""

from __future__ import annotations

import difflib
import json

import nbformat
import pytest

from jupyter_xcsh.notebook import outputs
from jupyter_xcsh.notebook.storage import celltext
from jupyter_xcsh.notebook.storage.document import NoCellsError, NotebookDocument, NotJSONError
from tests.support.notebooks import jupyter_text, sample_notebook


def _changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_unchanged_document_dumps_byte_for_byte():
    text = jupyter_text(sample_notebook())
    assert NotebookDocument.parse(text).dumps() == text


def test_replacing_a_cell_changes_only_that_cells_lines():
    text = jupyter_text(sample_notebook())
    doc = NotebookDocument.parse(text)
    cell = dict(doc.cells[1], source=["y = 2"])
    doc.replace(1, cell)
    changed = _changed_lines(text, doc.dumps())
    assert changed == ['-    "x = 1\\n",', '-    "print(x)"', '+    "y = 2"']


def test_untouched_cells_keep_string_source_unknown_fields_and_key_order():
    cells = [
        {"source": "a\nb", "cell_type": "markdown", "metadata": {"z": 1, "a": 2}, "x-extra": [1]},
        {"cell_type": "markdown", "metadata": {}, "source": ["c"]},
    ]
    nb = {"nbformat": 4, "nbformat_minor": 4, "metadata": {"zeta": 1, "alpha": 2}, "cells": cells}
    text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    doc = NotebookDocument.parse(text)
    doc.replace(1, dict(doc.cells[1], source=["d"]))
    out = doc.dumps()
    first_cell_text = json.dumps(cells[0], indent=1).replace("\n", "\n  ")
    assert first_cell_text in out
    assert out.startswith('{\n "nbformat": 4,\n "nbformat_minor": 4,\n "metadata": {\n  "zeta": 1')
    assert json.loads(out)["cells"][1]["source"] == ["d"]


def test_new_cells_follow_the_files_own_indentation():
    nb = {"cells": [{"cell_type": "raw", "metadata": {}, "source": ["a"]}], "metadata": {}}
    nb.update(nbformat=4, nbformat_minor=4)
    text = json.dumps(nb, indent=2)
    doc = NotebookDocument.parse(text)
    doc.insert(1, {"cell_type": "raw", "metadata": {}, "source": ["b"]})
    out = doc.dumps()
    assert out == json.dumps(
        {**nb, "cells": [*nb["cells"], {"cell_type": "raw", "metadata": {}, "source": ["b"]}]},
        indent=2,
    )


def test_compact_files_stay_compact():
    nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    text = json.dumps(nb, separators=(",", ":"))
    doc = NotebookDocument.parse(text)
    doc.insert(0, {"cell_type": "raw", "metadata": {}, "source": []})
    doc.insert(1, {"cell_type": "raw", "metadata": {}, "source": ["x"]})
    out = doc.dumps()
    assert "\n" not in out
    assert json.loads(out)["cells"][1]["source"] == ["x"]


def test_insert_into_empty_and_delete_to_empty_match_jupyters_layout():
    nb = sample_notebook()
    nb.cells = []
    empty = jupyter_text(nb)
    doc = NotebookDocument.parse(empty)
    cell = {"cell_type": "raw", "id": "abc", "metadata": {}, "source": ["x"]}
    doc.insert(0, cell)
    nb.cells = [nbformat.from_dict(cell)]
    assert doc.dumps() == jupyter_text(nb)
    doc.delete(0)
    assert doc.dumps() == empty


@pytest.mark.parametrize("index", [0, 1, 3, 4])
def test_insert_at_each_position_matches_jupyter(index):
    nb = sample_notebook()
    doc = NotebookDocument.parse(jupyter_text(nb))
    cell = {"cell_type": "raw", "id": "new1", "metadata": {}, "source": ["x"]}
    doc.insert(index, cell)
    nb.cells.insert(index, nbformat.from_dict(cell))
    assert doc.dumps() == jupyter_text(nb)


@pytest.mark.parametrize("index", [0, 2, 3])
def test_delete_at_each_position_matches_jupyter(index):
    nb = sample_notebook()
    doc = NotebookDocument.parse(jupyter_text(nb))
    doc.delete(index)
    del nb.cells[index]
    assert doc.dumps() == jupyter_text(nb)


def test_move_keeps_the_moved_cells_exact_text():
    cells = [{"cell_type": "raw", "metadata": {}, "source": f"s{i}"} for i in range(3)]
    text = json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 4}, indent=1)
    doc = NotebookDocument.parse(text)
    doc.move(0, 2)
    out = doc.dumps()
    assert [c["source"] for c in json.loads(out)["cells"]] == ["s1", "s2", "s0"]
    assert out.count('"source": "s0"') == 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "not json",
        '{"cells": [1,]}',
        '{"cells": []} x',
        "{'a': 1}",
        '{"cells": [{"a" 1}]}',
        '{"cells": ["\\x"]}',
        '{"cells": [{"a": [1 2]}]}',
        '{"metadata": {"a" 1}, "cells": []}',
    ],
)
def test_invalid_json_is_reported_as_such(text):
    with pytest.raises(NotJSONError):
        NotebookDocument.parse(text)


@pytest.mark.parametrize(
    "text", ["[]", "1", '{"metadata": {}}', '{"cells": {}}', '{"cells": null}']
)
def test_json_without_a_cells_array_is_reported_as_such(text):
    with pytest.raises(NoCellsError):
        NotebookDocument.parse(text)


def test_parse_agrees_with_json_loads_on_content():
    text = jupyter_text(sample_notebook())
    assert NotebookDocument.parse(text).data == json.loads(text)


def test_an_edit_of_a_cells_source_keeps_the_rest_of_its_text_as_written():
    """Only the changed values of a cell are written anew (its outputs are often most of the
    file): an output written in a way Jupyter would not write it stays exactly so."""
    odd = '[ {"output_type":"stream",  "name":"stdout", "text":["hi\\n"]} ]'
    cell = (
        '  {\n   "cell_type": "code",\n   "execution_count": 1,\n   "id": "c1",\n'
        '   "metadata": {},\n   "outputs": ' + odd + ',\n   "source": [\n    "print(1)"\n   ]\n  }'
    )
    text = (
        '{\n "cells": [\n' + cell + '\n ],\n "metadata": {},\n "nbformat": 4,\n'
        ' "nbformat_minor": 5\n}\n'
    )
    doc = NotebookDocument.parse(text)
    doc.replace(0, dict(doc.cells[0], source=["changed = 1\n", "print(changed)"]))
    after = doc.dumps()
    assert odd in after
    assert _changed_lines(text, after) == [
        '-    "print(1)"',
        '+    "changed = 1\\n",',
        '+    "print(changed)"',
    ]
    nbformat.validate(nbformat.reads(after, as_version=4))


def test_the_revision_after_each_edit_is_that_of_the_cells_as_they_are():
    """The document hashes only the cells changed since its last revision; cells without an
    id (whose entry depends on their place) are hashed every time."""
    from jupyter_xcsh.notebook.model import CellKey, notebook_revision

    nb = sample_notebook()
    text = jupyter_text(nb)
    doc = NotebookDocument.parse(text)
    assert all("id" in cell for cell in doc.cells)
    for step in range(4):
        doc.replace(
            step % len(doc.cells), dict(doc.cells[step % len(doc.cells)], source=[f"s{step}"])
        )
        plain = [CellKey(k.cell_id, k.cell_type, k.source) for k in doc.cell_keys()]
        assert doc.revision() == notebook_revision(plain)
    without_id = {k: v for k, v in doc.cells[0].items() if k != "id"}
    doc.replace(0, without_id)  # another set of keys: written whole, its entry never kept
    doc.insert(1, dict(without_id, source=["inserted"]))
    for step in range(3):
        doc.replace(2, dict(doc.cells[2], source=[f"t{step}"]))
        plain = [CellKey(k.cell_id, k.cell_type, k.source) for k in doc.cell_keys()]
        assert doc.revision() == notebook_revision(plain)


def test_the_revision_kept_between_changes_follows_every_kind_of_change():
    """The revision is computed once per state (a look before each change asks for it again)
    and follows every change: replace, insert, delete, move and new outputs."""
    from jupyter_xcsh.notebook.model import CellKey, notebook_revision

    nb = sample_notebook()
    nb.cells.extend(nbformat.v4.new_code_cell(f"x = {i}") for i in range(4))
    doc = NotebookDocument.parse(jupyter_text(nb))
    assert not doc.keys_known  # nothing asked yet: a look at the keys costs every cell once
    first = doc.revision()
    assert doc.keys_known and doc.revision() == first
    code = next(i for i, cell in enumerate(doc.cells) if cell["cell_type"] == "code")
    changes = [
        lambda: doc.replace(1, dict(doc.cells[1], source=["changed"])),
        lambda: doc.insert(0, dict(nbformat.v4.new_markdown_cell("new"), id="fresh01")),
        lambda: doc.delete(2),
        lambda: doc.move(0, len(doc.cells) - 1),
        lambda: doc.set_outputs(code, [], 7),
    ]
    seen = {first}
    for change in changes:
        change()
        plain = [CellKey(k.cell_id, k.cell_type, k.source) for k in doc.cell_keys()]
        assert doc.revision() == notebook_revision(plain)
        assert doc.revision() == NotebookDocument.parse(doc.dumps()).revision()
        seen.add(doc.revision())
    assert len(seen) == 5  # new outputs leave the revision as it was


def _large_notebook(order: str = "jupyter") -> tuple[nbformat.NotebookNode, str]:
    """A notebook whose cell 1 holds ~3 MB of outputs: 30,000 lines and a 1 MB image, with a
    ``source`` key inside an output (what a search for the cell's own member must skip)."""
    lines = "".join(f"line {i:05d} " + "x" * 88 + "\n" for i in range(30_000))
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=lines),
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": "A" * (1 << 20), "text/plain": "<image>"},
            metadata={"source": ["not the cell's"]},
        ),
    ]
    cells = [
        nbformat.v4.new_markdown_cell("# Title", id="m0"),
        nbformat.v4.new_code_cell("show()", id="big", execution_count=3, outputs=outputs),
        nbformat.v4.new_code_cell("x = 1", id="c2"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    if order == "source first":  # a file another program wrote: keys in its own order
        cell = nb.cells[1]
        nb.cells[1] = nbformat.from_dict({"source": cell.source, **cell})
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    else:
        text = jupyter_text(nb)
    return nb, text


@pytest.mark.parametrize("order", ["jupyter", "source first"])
def test_edits_of_a_large_cell_write_what_jupyter_writes_without_making_it_anew(order, monkeypatch):
    # A large cell's text is kept in parts once spliced: each edit makes new only the parts it
    # touches (its source is found from the end, or from the start when it comes first, never
    # by scanning the outputs); the file is exactly what it would be otherwise.
    nb, text = _large_notebook(order)
    doc = NotebookDocument.parse(text)

    def scanned_whole(text: str) -> None:
        raise AssertionError(f"a cell of {len(text)} characters scanned whole")

    monkeypatch.setattr(outputs, "_members", scanned_whole)
    parts: tuple[str, ...] = ()
    for k, source in enumerate(["show(2)", "a = 1\nshow(a)", "show(3)"]):
        lines = source.splitlines(keepends=True)
        expected = json.loads(doc.dumps())
        expected["cells"][1]["source"] = lines
        doc.replace(1, dict(doc.cells[1], source=lines))
        after = doc.dumps()
        assert json.loads(after) == expected
        if order == "jupyter":
            nb.cells[1].source = source
            assert after == jupyter_text(nb)
        item = doc._layout.items[1]
        assert isinstance(item, tuple), type(item)
        assert max(map(len, item)) <= celltext.PART_CHARS
        if k:  # the parts no edit touched are the same strings, not copies
            assert sum(a is b for a, b in zip(item, parts, strict=False)) >= len(item) - 2
        parts = item
    # The cell as it was before the last edit, its text as the lab's revert gets it.
    cell, previous = doc.take_removed()[-1]
    assert json.loads(celltext.joined(previous)) == cell


def test_outputs_written_to_a_large_cell_and_its_move_keep_the_rest_exactly():
    nb, text = _large_notebook()
    doc = NotebookDocument.parse(text)
    doc.set_outputs(1, [], 4)
    nb.cells[1].outputs, nb.cells[1].execution_count = [], 4
    assert doc.dumps() == jupyter_text(nb)
    nb, text = _large_notebook()
    doc = NotebookDocument.parse(text)
    item = doc._layout.items[1]
    doc.move(1, 0)
    assert doc._layout.items[0] is item  # moved as it was: not written anew
    nb.cells.insert(0, nb.cells.pop(1))
    assert doc.dumps() == jupyter_text(nb)
    assert doc.take_removed() == []  # a moved cell is not a removed one


def test_a_large_cell_in_a_compact_file_stays_compact():
    nb, _ = _large_notebook()
    text = json.dumps(nb, separators=(",", ":"), ensure_ascii=False)
    doc = NotebookDocument.parse(text)
    doc.replace(1, dict(doc.cells[1], source=["show(2)"]))
    nb.cells[1].source = ["show(2)"]
    assert doc.dumps() == json.dumps(nb, separators=(",", ":"), ensure_ascii=False)

"""A room's shared notebook, changed in one transaction (docs/developers/contract.md §4.2).

:class:`SharedNotebook` implements the core's ``CellDocument`` over a ``jupyter_ydoc``
``YNotebook`` (the document a room serves to every open lab tab). Changes are first applied to a
Python-side view and recorded; :meth:`SharedNotebook.commit` then replays them on the shared
document inside one transaction. So a change that fails validation half-way touches nothing (a
batch is all or nothing), and a person's concurrent typing is merged by the CRDT, not overwritten:

- an edit changes only the differing middle of the cell's text (common prefix and suffix kept),
  so cursors and typing elsewhere in the cell survive;
- a change of type replaces the cell with one of the new type, keeping its id and metadata (the
  lab's shared cell models cannot change type in place);
- a move deletes the cell and inserts a copy — never a CRDT move, which the lab cannot decode;
- new outputs and an execution count change only those fields, inside the cell's own output
  list (the one open tabs observe); outputs that only grew — a stream printing on, new outputs
  after the old ones — are appended, as the lab appends the outputs of the cells it runs, so
  open tabs do not redraw the whole output at every write of a running cell.

With jupyter-server-documents' outputs store on, a cell's outputs in the document are
placeholders and the outputs themselves are in the store (``live.OutputsStore``): reads see the
stored outputs, new outputs are stored and their placeholders replace the cell's list.

Only the documented ``YNotebook`` API (``ycells``, ``get_cell``, ``create_ycell``, ``ydoc`` and
the ``meta`` map of its schema) is used, which jupyter_ydoc 3 and 4 share. No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.notebook.model import CellKey, cell_key, source_text

#: Cell fields the commit updates in place; a change of any other field replaces the cell.
_IN_PLACE = frozenset({"source", "outputs", "execution_count"})


def text_change(old: str, new: str) -> tuple[int, int, str] | None:
    """The smallest single replacement turning ``old`` into ``new``, in characters.

    Returns ``(start, end, text)`` — replace ``old[start:end]`` by ``text`` — keeping the common
    prefix and suffix, or None when nothing changes.
    """
    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, len(old) - suffix, new[prefix : len(new) - suffix]


def apply_text_change(ytext: Any, old: str, new: str) -> int | None:
    """Turn the shared text ``ytext`` (holding ``old``) into ``new`` with one minimal change.

    Returns the UTF-8 byte offset just after the text put in (None when nothing changed).
    """
    change = text_change(old, new)
    if change is None:
        return None
    start, end, text = change
    # pycrdt addresses text by UTF-8 byte offsets.
    start_byte = len(old[:start].encode("utf-8"))
    end_byte = start_byte + len(old[start:end].encode("utf-8"))
    if end_byte > start_byte:
        del ytext[start_byte:end_byte]
    if text:
        ytext.insert(start_byte, text)
    return start_byte + len(text.encode("utf-8"))


@dataclass
class _Cell:
    """One cell of the view: an untouched shared cell (by its index there) or a new JSON cell."""

    key: CellKey
    shared_index: int | None = None
    value: dict[str, Any] | None = None


@dataclass
class _Changes:
    """The recorded operations, replayed in order on the shared cells by ``commit``."""

    ops: list[tuple[Any, ...]] = field(default_factory=list)


class _CellView(Sequence[Any]):
    """The view's cells as nbformat JSON, converted from the shared document on first access."""

    def __init__(self, notebook: SharedNotebook) -> None:
        self._notebook = notebook

    def __len__(self) -> int:
        return len(self._notebook._cells)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._notebook._value(self._notebook._cells[index])


class SharedNotebook:
    """The edit core's view of a live ``YNotebook``; ``commit`` applies the recorded changes."""

    def __init__(self, ynotebook: Any, outputs: Any = None) -> None:
        """A view of ``ynotebook``; ``outputs``: the ``live.OutputsStore`` holding its outputs."""
        self._doc = ynotebook
        self._outputs = outputs
        self._nbformat = _nbformat(ynotebook)
        with_ids = self._nbformat >= (4, 5)
        self._cells = [
            _Cell(_shared_key(ycell, with_ids), shared_index=i)
            for i, ycell in enumerate(ynotebook.ycells)
        ]
        self._changes = _Changes()
        #: The ids of the shared cells the last ``commit`` changed: True for a change in place
        #: (source, outputs, count), False for a cell inserted, deleted, moved or replaced.
        self.touched: dict[str, bool] = {}
        #: The cell the last ``commit`` changed last, and the UTF-8 byte offset in its source
        #: just after the text it put in (None: its end) — where the agent's cursor goes.
        self.focus: tuple[str, int | None] | None = None

    # -- the CellDocument protocol --------------------------------------------------------------

    @property
    def cells(self) -> Sequence[Any]:
        """The cells as nbformat JSON (converted from the shared document when first read)."""
        return _CellView(self)

    @property
    def nbformat(self) -> tuple[int, int]:
        """The notebook's ``(nbformat, nbformat_minor)`` from the shared metadata."""
        return self._nbformat

    @property
    def uses_cell_ids(self) -> bool:
        """Whether cells carry ids in the saved file (nbformat 4.5 and later)."""
        return self._nbformat >= (4, 5)

    @property
    def metadata(self) -> dict[str, Any]:
        """The notebook's top-level metadata, from the shared ``meta`` map."""
        from pycrdt import Map

        metadata = self._doc.ydoc.get("meta", type=Map).get("metadata")
        value = metadata.to_py() if hasattr(metadata, "to_py") else metadata
        return value if isinstance(value, dict) else {}

    def cell_keys(self) -> list[CellKey]:
        """Each cell's id, type and source as the view holds them."""
        return [cell.key for cell in self._cells]

    def replace(self, index: int, cell: dict[str, Any]) -> None:
        """Replace the cell at ``index`` (recorded; applied by ``commit``)."""
        self._changes.ops.append(("replace", index, cell))
        self._cells[index] = _Cell(cell_key(cell), value=cell)

    def insert(self, index: int, cell: dict[str, Any]) -> None:
        """Insert ``cell`` at ``index`` (recorded; applied by ``commit``)."""
        self._changes.ops.append(("insert", index, cell))
        self._cells.insert(index, _Cell(cell_key(cell), value=cell))

    def delete(self, index: int) -> Any:
        """Remove the cell at ``index`` and return it (recorded; applied by ``commit``)."""
        removed = self._value(self._cells[index])
        self._changes.ops.append(("delete", index))
        del self._cells[index]
        return removed

    def move(self, index: int, to_index: int) -> None:
        """Move the cell at ``index`` to ``to_index`` (recorded; applied by ``commit``)."""
        self._changes.ops.append(("move", index, to_index))
        self._cells.insert(to_index, self._cells.pop(index))

    def set_outputs(
        self,
        index: int,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
        *,
        running: bool = False,
    ) -> None:
        """Give code cell ``index`` new outputs and count (recorded; applied by ``commit``).

        ``running`` shows the cell as running (``[*]``) in open tabs, until a write without it.
        """
        self._changes.ops.append(("outputs", index, outputs, execution_count, running))
        cell = self._cells[index]
        if cell.value is not None:
            cell.value = {**cell.value, "outputs": outputs, "execution_count": execution_count}

    # -- committing ----------------------------------------------------------------------------

    @property
    def changed(self) -> bool:
        """Whether any change is waiting to be committed."""
        return bool(self._changes.ops)

    def commit(self) -> None:
        """Replay the recorded changes on the shared document, in one transaction."""
        ops, self._changes = self._changes.ops, _Changes()
        if not ops:
            return
        doc = self._doc
        self.touched, self.focus = {}, None
        with doc.ydoc.transaction():
            for op in ops:
                getattr(self, f"_commit_{op[0]}")(*op[1:])

    def _touch(self, cell_id: Any, in_place: bool) -> None:
        """Note that the commit changed the cell ``cell_id`` (a change that moves it wins)."""
        if isinstance(cell_id, str):
            self.touched[cell_id] = in_place and self.touched.get(cell_id, True)
            self.focus = (cell_id, None)

    def _commit_replace(self, index: int, cell: dict[str, Any]) -> None:
        doc = self._doc
        ycell = doc.ycells[index]
        old = self._get_cell(index)
        changed = {
            k for k in old.keys() | cell.keys() if k != "source" and old.get(k) != cell.get(k)
        }
        if not changed <= _IN_PLACE:
            self._commit_delete(index)
            self._commit_insert(index, _with_id(cell, ycell))
            return
        self._touch(ycell.get("id"), True)
        new_source = source_text(cell.get("source"))
        ytext = ycell.get("source")
        if isinstance(ytext, str) or ytext is None:
            ycell["source"] = _text(new_source)
        else:
            end = apply_text_change(ytext, str(ytext), new_source)
            cell_id = ycell.get("id")
            if end is not None and isinstance(cell_id, str):
                self.focus = (cell_id, end)
        if "outputs" in changed:
            self._set_outputs(ycell, cell.get("outputs") or [])
        if "execution_count" in changed:
            ycell["execution_count"] = cell.get("execution_count")

    def _commit_outputs(
        self,
        index: int,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
        running: bool,
    ) -> None:
        ycell = self._doc.ycells[index]
        self._touch(ycell.get("id"), True)
        self._set_outputs(ycell, outputs)
        if ycell.get("execution_count") != execution_count:
            ycell["execution_count"] = execution_count
        # jupyter_ydoc gives code cells an execution_state, which the lab shows as [*].
        state = "running" if running else "idle"
        if "execution_state" in ycell and ycell.get("execution_state") != state:
            ycell["execution_state"] = state

    def _commit_insert(self, index: int, cell: dict[str, Any]) -> None:
        cell_id = cell.get("id")
        self._touch(cell_id, False)
        if self._outputs is not None and cell.get("outputs") and isinstance(cell_id, str):
            cell = {**cell, "outputs": self._outputs.placeholders(cell_id, cell["outputs"])}
        self._doc.ycells.insert(index, self._doc.create_ycell(cell))

    def _commit_delete(self, index: int) -> None:
        self._touch(self._doc.ycells[index].get("id"), False)
        del self._doc.ycells[index]

    def _commit_move(self, index: int, to_index: int) -> None:
        doc = self._doc
        cell = _with_id(doc.get_cell(index), doc.ycells[index])
        self._commit_delete(index)
        self._commit_insert(to_index, cell)

    # -- helpers -------------------------------------------------------------------------------

    def _value(self, cell: _Cell) -> dict[str, Any]:
        if cell.value is None:
            assert cell.shared_index is not None
            cell.value = self._get_cell(cell.shared_index)
        return cell.value

    def _get_cell(self, index: int) -> dict[str, Any]:
        """The shared cell ``index`` as JSON, its outputs from the outputs store if any."""
        cell: dict[str, Any] = self._doc.get_cell(index)
        return cell if self._outputs is None else self._outputs.resolve(cell)

    def _set_outputs(self, ycell: Any, outputs: list[dict[str, Any]]) -> None:
        cell_id = ycell.get("id")
        if self._outputs is None or not isinstance(cell_id, str):
            _set_outputs(ycell, outputs)
            return
        # The store's placeholders name outputs by position, not content: the list is replaced
        # so that open notebooks fetch the outputs again.
        from pycrdt import Array, Map

        placeholders = [Map(p) for p in self._outputs.placeholders(cell_id, outputs)]
        current = ycell.get("outputs")
        if isinstance(current, Array):
            current.clear()
            current.extend(placeholders)
        else:
            ycell["outputs"] = Array(placeholders)


def _nbformat(ynotebook: Any) -> tuple[int, int]:
    from pycrdt import Map

    meta = ynotebook.ydoc.get("meta", type=Map)
    major, minor = meta.get("nbformat"), meta.get("nbformat_minor")
    if isinstance(major, (int, float)) and isinstance(minor, (int, float)):
        return int(major), int(minor)
    return 0, 0


def is_loaded(ynotebook: Any) -> bool:
    """Whether a room has loaded its notebook (a room still loading has no ``nbformat`` yet)."""
    return _nbformat(ynotebook) != (0, 0)


def _shared_key(ycell: Any, with_ids: bool) -> CellKey:
    cell_id = ycell.get("id") if with_ids else None
    cell_type = ycell.get("cell_type")
    source = ycell.get("source")
    return CellKey(
        cell_id if isinstance(cell_id, str) else None,
        cell_type if isinstance(cell_type, str) else "unknown",
        str(source) if source is not None else "",
    )


def _with_id(cell: dict[str, Any], ycell: Any) -> dict[str, Any]:
    """``cell`` with the shared cell's id (kept even where the file format has no ids)."""
    cell_id = ycell.get("id")
    return {**cell, "id": cell_id} if isinstance(cell_id, str) else cell


def _text(value: str) -> Any:
    from pycrdt import Text

    return Text(value)


def _youtput(output: dict[str, Any]) -> Any:
    """One output as jupyter_ydoc holds it: stream text as shared text."""
    from pycrdt import Map, Text

    output = dict(output)
    if output.get("output_type") == "stream":
        output["text"] = Text(source_text(output.get("text", "")))
    return Map(output)


def _set_outputs(ycell: Any, outputs: list[dict[str, Any]]) -> None:
    """Give a shared cell ``outputs`` inside its own output list (the one open tabs observe).

    A new list set on the cell would go unseen by open tabs. Outputs that only grew since
    what the cell holds are appended (:func:`_append`); anything else replaces the list's
    contents.
    """
    from pycrdt import Array

    current = ycell.get("outputs")
    if not isinstance(current, Array):
        ycell["outputs"] = Array([_youtput(output) for output in outputs])
        return
    if not _append(current, outputs):
        current.clear()
        current.extend([_youtput(output) for output in outputs])


def _append(youtputs: Any, outputs: list[dict[str, Any]]) -> bool:
    """Turn ``youtputs`` into ``outputs`` by appending only; False when it takes more."""
    before = youtputs.to_py()
    if len(outputs) < len(before):
        return False
    if before:
        last, new = before[-1], outputs[len(before) - 1]
        if outputs[: len(before) - 1] != before[:-1]:
            return False
        if last != new:
            grown = _grown(last, new)
            ytext = youtputs[len(before) - 1].get("text")
            if grown is None or ytext is None or isinstance(ytext, str):
                return False
            ytext += grown
    for output in outputs[len(before) :]:
        youtputs.append(_youtput(output))
    return True


def _grown(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The text a stream output gained, when ``after`` is ``before`` printed on; else None."""
    if not before.get("output_type") == after.get("output_type") == "stream":
        return None
    if before.get("name") != after.get("name"):
        return None
    old, new = source_text(before.get("text", "")), source_text(after.get("text", ""))
    return new[len(old) :] if new.startswith(old) else None

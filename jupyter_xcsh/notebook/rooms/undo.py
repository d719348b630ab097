"""Undo of one agent call's change to a room's shared notebook, keeping everyone else's typing.

Each change the notebook tool makes in a collaboration room is one transaction whose origin
names its call (:func:`call_origin`). Just before that transaction a pycrdt ``UndoManager`` is
made for the call: scoped to the notebook's cells array (which holds every cell), tracking only
that origin. Undoing it is Yjs's item-level undo: the text the agent inserted is deleted and the
text it deleted is put back, while what anyone typed afterwards — in the same cell, too — stays,
as do later calls' changes. The undo of one cell of a call reuses the call's stack item with a
manager scoped to that cell's map only; a whole-call undo after it does not restore that cell's
text twice (Yjs restores an item once).

One cell of a call can be undone alone when the call changed it in place (its source, outputs or
execution count); a cell the call inserted, deleted, moved or replaced (a change of type) is
undone with the whole call only.

The managers live in :class:`RoomUndo`, a bounded registry (``max_calls``, oldest dropped
first) whose entries go with their room: each holds its document weakly, and a call is held
only while the room that the call changed is the one open for the notebook now.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.errors import ConflictError, NotFoundError

#: Calls held at most (across rooms); the oldest is dropped first.
MAX_CALLS = 200
#: ``reason`` of the 404 for a call no open room holds (the lab falls back to its file revert).
NOT_HELD = "not-held"
#: ``reason`` of the 409 for a call or cell already undone.
ALREADY_UNDONE = "already-undone"
#: ``reason`` of the 404 for a cell the call did not change.
NOT_CHANGED = "cell-not-changed"


def call_origin(call_id: str) -> str:
    """The transaction origin of the agent call ``call_id`` on a shared document."""
    return f"jupyter-xcsh:{call_id}"


@dataclass
class HeldCall:
    """One agent call's change to a room's document, and the manager that can undo it."""

    call_id: str
    api_path: str
    document: Callable[[], Any]
    manager: Any
    #: Cell id -> True when the call changed it in place (``SharedNotebook.touched``).
    cells: dict[str, bool] = field(default_factory=dict)
    undone: bool = False
    undone_cells: set[str] = field(default_factory=set)

    @property
    def fully_undone(self) -> bool:
        """Whether nothing of the call is left to undo."""
        return self.undone or (
            all(self.cells.values()) and set(self.cells) <= self.undone_cells and bool(self.cells)
        )


class UndoCapture:
    """One call's capture, made around its transaction by ``live.in_transaction``."""

    def __init__(self, registry: RoomUndo, api_path: str, call_id: str) -> None:
        """Capture the change of ``call_id`` to the notebook ``api_path`` into ``registry``."""
        self.registry = registry
        self.api_path = api_path
        self.call_id = call_id
        self.origin = call_origin(call_id)
        self._manager: Any = None
        #: After the transaction: the cell the call changed last, and where in its source
        #: (``SharedNotebook.focus``) — where the agent's cursor goes.
        self.focus: tuple[str, int | None] | None = None

    def begin(self, ynotebook: Any) -> None:
        """Before the call's transaction (never inside one): make its undo manager."""
        from pycrdt import UndoManager

        self._manager = UndoManager(scopes=[ynotebook.ycells], capture_timeout_millis=0)
        self._manager.include_origin(self.origin)

    def end(
        self,
        ynotebook: Any,
        touched: dict[str, bool],
        focus: tuple[str, int | None] | None = None,
    ) -> None:
        """After the call's transaction: hold its undo (if the transaction changed anything)."""
        self.focus = focus
        manager, self._manager = self._manager, None
        if manager is None or not manager.can_undo():
            return
        self.registry._hold(
            HeldCall(self.call_id, self.api_path, weakref.ref(ynotebook), manager, dict(touched))
        )


class RoomUndo:
    """The undo of agent calls' changes to open rooms, by ``callId`` (bounded)."""

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        """Hold at most ``max_calls`` calls (the oldest is dropped first)."""
        self.max_calls = max_calls
        self._calls: OrderedDict[str, HeldCall] = OrderedDict()

    def __len__(self) -> int:
        return len(self._calls)

    def capture(self, api_path: str, call_id: str) -> UndoCapture:
        """A capture of the call ``call_id``'s change to ``api_path``'s room."""
        return UndoCapture(self, api_path, call_id)

    def _hold(self, call: HeldCall) -> None:
        self._forget_closed()
        self._calls[call.call_id] = call
        while len(self._calls) > self.max_calls:
            self._calls.popitem(last=False)

    def _forget_closed(self) -> None:
        """Drop the calls whose room's document is gone (the room closed)."""
        for call_id in [k for k, call in self._calls.items() if call.document() is None]:
            del self._calls[call_id]

    def forget_path(self, api_path: str, ynotebook: Any) -> None:
        """Drop the calls on ``api_path`` made in another room than ``ynotebook``'s (None: any)."""
        for call_id in [
            k
            for k, call in self._calls.items()
            if call.api_path == api_path and call.document() is not ynotebook
        ]:
            del self._calls[call_id]

    def held(self, api_path: str, call_id: str, ynotebook: Any) -> HeldCall:
        """The call ``call_id`` on ``api_path`` as the open room ``ynotebook`` holds it; else 404.

        ``ynotebook``: the room's document open now (None without a room).
        """
        self.forget_path(api_path, ynotebook)
        call = self._calls.get(call_id)
        if call is None or call.api_path != api_path or ynotebook is None:
            raise NotFoundError(
                f"No open collaboration room of {api_path} holds call {call_id} (no room is open, "
                "the room was closed or the server restarted since, or the call is too old)",
                reason=NOT_HELD,
            )
        return call

    def undo(self, call: HeldCall, cell_id: str | None, ynotebook: Any) -> list[str]:
        """Undo ``call`` (or only its change to ``cell_id``) on ``ynotebook``; the cells undone.

        Raises 409 when it is undone already, 404 when the call did not change the cell or the
        cell can only be undone with the whole call. Never inside a transaction.
        """
        if cell_id is None:
            if call.fully_undone:
                raise ConflictError(f"Call {call.call_id} is already undone", reason=ALREADY_UNDONE)
            call.manager.undo()
            undone = [k for k in call.cells if k not in call.undone_cells]
            call.undone = True
            call.undone_cells.update(call.cells)
            return undone
        in_place = call.cells.get(cell_id)
        if in_place is None:
            raise NotFoundError(
                f"Call {call.call_id} did not change cell {cell_id}", reason=NOT_CHANGED
            )
        if call.undone or cell_id in call.undone_cells:
            raise ConflictError(
                f"The change of call {call.call_id} to cell {cell_id} is already undone",
                reason=ALREADY_UNDONE,
            )
        if not in_place:
            raise NotFoundError(
                f"Call {call.call_id} inserted, deleted, moved or replaced cell {cell_id}: that "
                "change is held only with the whole call (undo the call without cell_id)",
                reason=NOT_HELD,
            )
        ycell = next((c for c in ynotebook.ycells if c.get("id") == cell_id), None)
        stack = call.manager.undo_stack
        if ycell is not None and stack:
            from pycrdt import UndoManager

            try:
                one = UndoManager(scopes=[ycell], capture_timeout_millis=0, undo_stack=[stack[-1]])
            except TypeError:  # a pycrdt whose undo managers cannot start from a stack item
                raise NotFoundError(
                    f"This server's pycrdt cannot undo one cell of a call alone: undo call "
                    f"{call.call_id} as a whole",
                    reason=NOT_HELD,
                ) from None
            one.undo()
        # A cell someone deleted since has nothing left to undo.
        call.undone_cells.add(cell_id)
        return [cell_id]

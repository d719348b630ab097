"""What changed in a notebook since a revision, and who: the notebook tool's ``changes`` history.

The notebook tool (``tool.py``) keeps the history (``NotebookHistory``) and answers its
``changes`` action from it.

The server keeps, per notebook an agent has read or changed through the tool, the states it
has seen: each a revision with every cell's id, type and source (``CellKey``), and who brought
it about — an agent's change through the tool (``agent``, with that caller's identity), or a
change the tool found when it next looked: typed in a collaboration room (``room``) or saved
to the file, by the lab or another program (``file``). ``changes`` with ``since_revision``
compares the states from that revision on, step by step: the cells added, removed, moved and
edited, each with who. Bounded: ``MAX_ENTRIES`` states per notebook, ``MAX_CHARS`` characters
of sources per notebook, ``MAX_NOTEBOOKS`` notebooks (the least recently used forgotten);
when the history no longer reaches the revision asked for, the answer is a 409 telling the
agent to read again. Changes made while no agent looked are seen as one step.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import ConflictError
from jupyter_xcsh.notebook.model import CellKey, notebook_revision

#: States kept per notebook, characters of their sources per notebook, notebooks kept.
MAX_ENTRIES, MAX_CHARS, MAX_NOTEBOOKS = 50, 1_000_000, 64
#: The most changes one answer lists, and the default budget of the sources it shows.
MAX_CHANGES, DEFAULT_MAX_CHARS = 200, 8000
#: Characters of one cell's source shown at most.
MAX_CELL_CHARS = 2000


@dataclass(frozen=True)
class Step:
    """One state of a notebook and who brought it about (``agent``, ``room``, ``file``)."""

    revision: str
    keys: tuple[CellKey, ...]
    by: str
    agent: str = ""  # the identity of the agent, for ``by == "agent"``
    at: float = 0.0

    @functools.cached_property
    def chars(self) -> int:
        """The characters of its sources (what it costs to keep; counted once)."""
        return sum(len(key.source) for key in self.keys)


class NotebookHistory:
    """The states seen of each notebook, bounded, to answer "what changed since".

    ``path`` arguments are the notebooks' API paths.
    """

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_chars: int = MAX_CHARS,
        max_notebooks: int = MAX_NOTEBOOKS,
    ) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.max_notebooks = max_notebooks
        self._steps: OrderedDict[str, deque[Step]] = OrderedDict()

    def knows(self, path: str) -> bool:
        """Whether states of ``path`` are kept."""
        return path in self._steps

    def record(self, path: str, keys: Sequence[CellKey], by: str, agent: str = "") -> Step:
        """Note the notebook's state ``keys``, brought about by ``by``; the latest step.

        A state equal to the latest one adds nothing (the latest step is returned).
        """
        steps = self._steps.get(path)
        revision = notebook_revision(keys)
        if steps is not None:
            self._steps.move_to_end(path)
            if steps[-1].revision == revision:
                return steps[-1]
        else:
            steps = self._steps[path] = deque()
            while len(self._steps) > self.max_notebooks:
                self._steps.popitem(last=False)
        step = Step(revision, tuple(keys), by, agent, time.time())
        steps.append(step)
        chars = sum(s.chars for s in steps)
        while len(steps) > 1 and (len(steps) > self.max_entries or chars > self.max_chars):
            chars -= steps.popleft().chars
        return step

    def since(self, path: str, revision: str) -> list[tuple[Step, Step]]:
        """The pairs of successive states from ``revision`` on (oldest first).

        ``ConflictError`` (reason ``history_gone``) when no kept state has that revision.
        """
        steps = list(self._steps.get(path, ()))
        for k in range(len(steps) - 1, -1, -1):
            if steps[k].revision == revision:
                return list(zip(steps[k:], steps[k + 1 :], strict=False))
        raise ConflictError(
            f"Revision {revision} is not in the change history of {path} (too old, or never "
            f"seen by this server): read the notebook again (action read) and use its revision",
            reason="history_gone",
        )


def _moved(before: list[str], after: list[str]) -> set[str]:
    """The ids among both lists whose relative order changed (outside a longest kept order)."""
    position = {cell_id: k for k, cell_id in enumerate(after)}
    sequence = [position[cell_id] for cell_id in before if cell_id in position]
    # Longest increasing subsequence (patience sorting), to keep the most cells in place.
    tails: list[int] = []
    tails_at: list[int] = []
    parent = [-1] * len(sequence)
    for k, value in enumerate(sequence):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if tails[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        parent[k] = tails_at[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(value)
            tails_at.append(k)
        else:
            tails[lo], tails_at[lo] = value, k
    kept: set[int] = set()
    k = tails_at[-1] if tails_at else -1
    while k >= 0:
        kept.add(sequence[k])
        k = parent[k]
    return {after[p] for p in sequence if p not in kept}


def cell_changes(before: Sequence[CellKey], after: Sequence[CellKey]) -> list[dict[str, Any]]:
    """The cells added, removed, moved and edited from ``before`` to ``after``. Pure.

    Cells are matched by id; in a notebook whose cells have no ids (nbformat < 4.5), by index.
    """
    changes: list[dict[str, Any]] = []
    with_ids = all(key.cell_id for key in (*before, *after))
    if not with_ids:
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else None
            new = after[index] if index < len(after) else None
            if new is None and old is not None:
                changes.append(_entry("removed", old, index))
            elif old is None and new is not None:
                changes.append(_entry("added", new, index))
            elif old != new and new is not None:
                changes.append(_entry("edited", new, index))
        return changes
    old_at = {key.cell_id: (k, key) for k, key in enumerate(before)}
    new_at = {key.cell_id: (k, key) for k, key in enumerate(after)}
    for k, key in enumerate(before):
        if key.cell_id not in new_at:
            changes.append(_entry("removed", key, k))
    moved = _moved(
        [str(key.cell_id) for key in before if key.cell_id in new_at],
        [str(key.cell_id) for key in after if key.cell_id in old_at],
    )
    for k, key in enumerate(after):
        if key.cell_id not in old_at:
            changes.append(_entry("added", key, k))
            continue
        old_index, old = old_at[key.cell_id]
        if key.cell_id in moved:
            changes.append({**_entry("moved", key, k), "fromIndex": old_index})
        if old.source != key.source or old.cell_type != key.cell_type:
            changes.append(_entry("edited", key, k))
    return changes


def _entry(change: str, key: CellKey, index: int) -> dict[str, Any]:
    return {"change": change, "cellId": key.cell_id, "index": index, "cellType": key.cell_type}


#: How each author reads in the answer's text.
WHO = {
    "you": "you",
    "agent": "another agent",
    "room": "a person (collaboration room, unsaved typing included)",
    "file": "a save of the file (the lab or another program)",
}


def describe_changes(
    pairs: Sequence[tuple[Step, Step]], caller: str, max_chars: int = DEFAULT_MAX_CHARS
) -> tuple[list[dict[str, Any]], bool]:
    """The changes of ``pairs`` as the answer lists them, with sources within ``max_chars``.

    Each change names who made it (``by``: ``you``, ``agent``, ``room``, ``file``; ``you``
    being the agent ``caller``). Returns the changes and whether the list or a source was cut.
    """
    listed: list[dict[str, Any]] = []
    budget, cut = max_chars, False
    for before, after in pairs:
        by = "you" if after.by == "agent" and after.agent == caller else after.by
        sources = {key.cell_id: key.source for key in after.keys}
        old_sources = {key.cell_id: key.source for key in before.keys}
        for change in cell_changes(before.keys, after.keys):
            if len(listed) >= MAX_CHANGES:
                return listed, True
            entry = {**change, "by": by}
            kind = change["change"]
            if kind in ("added", "edited", "removed"):
                if change["cellId"] is None:
                    keys = after.keys if kind != "removed" else before.keys
                    source = keys[change["index"]].source
                else:
                    table = old_sources if kind == "removed" else sources
                    source = table[change["cellId"]]
                shown = source[: min(MAX_CELL_CHARS, max(budget, 0))]
                budget -= len(shown)
                entry["source"] = shown
                if len(shown) < len(source):
                    entry["sourceTruncated"] = True
                    cut = True
            listed.append(entry)
    return listed, cut


def changes_text(details: dict[str, Any]) -> str:
    """The ``changes`` answer as the agent reads it."""
    since, now, changes = details["sinceRevision"], details["revision"], details["changes"]
    if not changes:
        return f"No changes since revision {since}."
    lines = [f"{len(changes)} change(s) since revision {since} (now {now}), oldest first:"]
    for change in changes:
        cell = f"cell {change['cellId']}" if change["cellId"] else "a cell"
        where = (
            f"from index {change['fromIndex']} to {change['index']}"
            if change["change"] == "moved"
            else f"at index {change['index']}"
        )
        lines.append(
            f"- {cell} ({change['cellType']}) {change['change']} {where} by {WHO[change['by']]}"
        )
        if "source" in change:
            more = " [...cut]" if change.get("sourceTruncated") else ""
            lines.extend("    " + line for line in (change["source"] + more).split("\n"))
    if details["truncated"]:
        lines.append("[The list or a source was cut: read the notebook for the rest.]")
    return "\n".join(lines)

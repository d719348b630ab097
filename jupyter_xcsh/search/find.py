"""The notebook tool's ``find`` action: which cells' sources match a pattern, and on which lines.

The search sees the notebook as ``read`` does (the live document when a room is open, else the
file) through one snapshot of every cell's id, type and source, so the hashes it reports are
those of the state it searched. Literal patterns are searched in the server (``str.find`` is
linear); regex patterns in a child process with a deadline (``regex_workers.py``). The answer
is bounded like ``read``'s: a character budget spent at cell boundaries, at most
``MAX_LINES_PER_CELL`` lines shown per cell, each line cut around its match, and a "continue
at" notice.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, Protocol

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.notebook.edit.request import NotebookRequest
from jupyter_xcsh.notebook.model import CellKey, Snapshot, notebook_revision, source_hash
from jupyter_xcsh.notebook.reader import ReadLimits
from jupyter_xcsh.search.grep import Hit, search_texts
from jupyter_xcsh.search.regex_workers import RegexWorkers, SearchTimeout, WorkerFailed

#: Matching lines shown per cell (all are counted).
MAX_LINES_PER_CELL = 20
#: Characters of a matching line shown; a longer line is cut around its match.
MAX_LINE_CHARS = 200


class SnapshotSource(Protocol):
    """Where ``find`` gets its snapshot from (the notebook store)."""

    async def snapshot(self, path: str) -> Snapshot:
        """The notebook's cells as they are now."""


def compile_pattern(request: NotebookRequest) -> None:
    """Check a regex pattern compiles; a 400 naming Python's error when it does not."""
    if not request.regex:
        return
    assert request.pattern is not None
    check_regex(request.pattern)


def check_regex(pattern: str) -> None:
    """Check a regex compiles; a 400 ``Invalid regex: <Python's error>`` when it does not."""
    try:
        re.compile(pattern)
    except re.error as e:
        raise InvalidRequestError(f"Invalid regex: {e}") from None
    except (OverflowError, RecursionError, ValueError) as e:  # e.g. a repeat count too large
        raise InvalidRequestError(f"Invalid regex: {e}") from None


class NotebookFinder:
    """Answer ``find`` requests: snapshot, search (regex with a deadline), bounded view."""

    def __init__(
        self, store: SnapshotSource, limits: ReadLimits, regex: RegexWorkers | None = None
    ) -> None:
        self.store = store
        self.limits = limits
        self.regex = regex or RegexWorkers()

    async def find(self, request: NotebookRequest) -> dict[str, Any]:
        """Return the ``{"text", "details"}`` of a find request."""
        compile_pattern(request)
        snapshot = await self.store.snapshot(request.notebook_path)
        start, end = _range(request, len(snapshot.keys))
        wanted = request.cell_type
        searched = [
            i for i in range(start, end) if wanted is None or snapshot.keys[i].cell_type == wanted
        ]
        texts = [snapshot.keys[i].source for i in searched]
        pattern = request.pattern
        assert pattern is not None
        if request.regex:
            try:
                hits = await self.regex.search(texts, pattern, MAX_LINES_PER_CELL)
            except SearchTimeout:
                raise InvalidRequestError(
                    f"Regex search stopped after {self.regex.timeout:g} seconds in "
                    f"{request.notebook_path}: the pattern backtracks too much (nested "
                    "repetition such as (a+)+ can take exponential time); simplify it"
                ) from None
            except WorkerFailed as e:
                raise InvalidRequestError(f"Regex search failed: {e}") from None
        else:
            hits = await asyncio.to_thread(search_texts, texts, pattern, False, MAX_LINES_PER_CELL)
        result = find_view(snapshot, request, searched, hits, self.limits, (start, end))
        result["details"].update(via=snapshot.via, lastModified=snapshot.last_modified)
        return result

    async def close(self) -> None:
        """Stop the regex search processes."""
        await self.regex.close()


def _range(request: NotebookRequest, total: int) -> tuple[int, int]:
    start = request.cell_index or 0
    if start > total:
        raise InvalidRequestError(
            f"Cell index {start} out of range (0-{total}) in {request.notebook_path}"
        )
    end = total if request.end_index is None else min(request.end_index, total)
    if end < start:
        raise InvalidRequestError(f"end_index {end} is before the first cell searched ({start})")
    return start, end


def clip_line(line: str, start: int) -> str:
    """``line`` cut to ``MAX_LINE_CHARS`` around its match (which begins at ``start``)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    # The window opens a little before the match: the words leading to it help to read it.
    first = max(0, min(start - MAX_LINE_CHARS // 4, len(line) - MAX_LINE_CHARS))
    last = first + MAX_LINE_CHARS
    return ("…" if first > 0 else "") + line[first:last] + ("…" if last < len(line) else "")


def _cell_block(index: int, key: CellKey, hit: Hit) -> tuple[str, dict[str, Any]]:
    """One matching cell: its text block and its ``details.matches`` entry."""
    _, count, located = hit
    source_lines = key.source.split("\n")
    header = f"--- cell {index} · {key.cell_type}"
    if key.cell_id is not None:
        header += f" · id {key.cell_id}"
    lines = []
    for number, start, _end in located:
        lines.append({"line": number, "text": clip_line(source_lines[number - 1], start)})
    block = [header + " ---", *(f"{entry['line']}: {entry['text']}" for entry in lines)]
    if count > len(lines):
        block.append(f"… {count - len(lines)} more matching lines in this cell")
    entry = {
        "index": index,
        "cellId": key.cell_id,
        "cellType": key.cell_type,
        "sourceHash": source_hash(key.source),
        "matchCount": count,
        "lines": lines,
    }
    return "\n".join(block), entry


def find_view(
    snapshot: Snapshot,
    request: NotebookRequest,
    searched: Sequence[int],
    hits: Sequence[Hit],
    limits: ReadLimits,
    bounds: tuple[int, int],
) -> dict[str, Any]:
    """Render the matches (``hits`` over the cells ``searched``) within the character budget."""
    keys = snapshot.keys
    start, end = bounds
    budget = request.max_chars or limits.max_chars
    blocks: list[str] = []
    matches: list[dict[str, Any]] = []
    used = 0
    stop = end
    for hit in hits:
        index = searched[hit[0]]
        block, entry = _cell_block(index, keys[index], hit)
        if blocks and used + len(block) + 1 > budget:
            stop = index
            break
        blocks.append(block)
        used += len(block) + 1
        matches.append(entry)
    truncated = stop < end
    kind = "regex" if request.regex else "text"
    where = f"{request.cell_type} cells" if request.cell_type else "cells"
    scope = f"{where} {start}-{end - 1}" if end > start else f"no {where}"
    lines = sum(hit[1] for hit in hits)
    if hits:
        heading = (
            f"Found {kind} {request.pattern!r} on {lines} line{'s' if lines != 1 else ''} of "
            f"{len(hits)} cell{'s' if len(hits) != 1 else ''} in {request.notebook_path} "
            f"(searched {scope} of {len(keys)})"
        )
    else:
        heading = (
            f"No match for {kind} {request.pattern!r} in {request.notebook_path} "
            f"(searched {scope} of {len(keys)})"
        )
    text = "\n".join([heading, *blocks])
    if truncated:
        text += (
            f"\n[Showing {len(matches)} of {len(hits)} matching cells, up to cell {stop - 1} "
            f"({budget} character budget). Continue with cell_index={stop}]"
        )
    details = {
        "action": "find",
        "pattern": request.pattern,
        "regex": bool(request.regex),
        "cellType": request.cell_type,
        "totalCells": len(keys),
        "startIndex": start,
        "endIndex": stop,
        "truncated": truncated,
        "matchedCells": len(hits),
        "matchedLines": lines,
        "matches": matches,
        "revision": notebook_revision(keys),
    }
    return {"text": text, "details": details}

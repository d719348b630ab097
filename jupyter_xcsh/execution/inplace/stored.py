"""The outputs a run in place stores in its cells, built as nbclient builds them (pure, no I/O).

A person reopening the notebook, or converting it with nbconvert, must find what running the
cells in JupyterLab or with nbclient would have left: every IOPub output turned into an
nbformat output by ``nbformat.v4.output_from_msg``, consecutive streams of one name merged (with
carriage returns and backspaces applied, as nbclient's stream coalescing does), a
``clear_output(wait=True)`` applied when the next output arrives, ``update_display_data``
replacing the outputs that share its ``display_id`` (in any cell of the run), ``transient``
never stored, and the execution count taken from the kernel.

Two things differ on purpose: what a cell stores is bounded. Past ``max_stream_bytes`` of a
cell's stream text, only its tail is kept and a ``display_data`` notice before it links to the
artifact holding the whole output, so a cell printing gigabytes leaves a notebook (and a server)
of bounded size. Past ``max_outputs`` other outputs (displays and results; errors always count
as stored), the later ones are left out and a notice at the end says how many, so a loop
displaying a figure per step does not grow the notebook without end.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from html import escape
from typing import Any

from nbformat.v4 import output_from_msg

from jupyter_xcsh.outputs.sink import format_size

__all__ = ["ArtifactLink", "CellOutputs", "RunOutputs"]

#: As nbclient: text before a carriage return that does not end its line is overwritten.
_CARRIAGE_RETURN = re.compile(r".*\r(?=[^\n])")
#: A character followed by a backspace is erased. (nbclient writes ``r"[^\n]\b"``, where ``\b``
#: is a word boundary, not a backspace, and erases text; this is what it means.)
_BACKSPACE = re.compile("[^\n]\x08")

#: The IOPub messages that become stored outputs (``update_display_data`` only updates).
_OUTPUT_TYPES = {"stream", "display_data", "execute_result", "error"}
_DISPLAY_TYPES = {"display_data", "execute_result", "update_display_data"}


@dataclass(frozen=True)
class ArtifactLink:
    """Where a cell's whole output is kept: ``artifact://<id>`` at contents path ``api_path``."""

    id: str
    api_path: str


def _utf8_len(text: str) -> int:
    # Program output is mostly ASCII, where characters are bytes: no encoding needed.
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


def _utf8_tail(text: str, max_bytes: int) -> str:
    """The longest tail of ``text`` that fits in ``max_bytes`` of UTF-8 (whole characters)."""
    if len(text) > max_bytes:
        text = text[-max_bytes:]  # a character is at least one byte
    if text.isascii():
        return text
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    cut = len(data) - max_bytes
    while cut < len(data) and data[cut] & 0xC0 == 0x80:
        cut += 1
    return data[cut:].decode("utf-8", "replace")


def _overwrite(text: str) -> str:
    """Apply backspaces and carriage returns as a terminal shows them (nbclient's rules)."""
    old = None
    while old is None or len(text) < len(old):
        old = text
        text = _BACKSPACE.sub("", text)
    return _CARRIAGE_RETURN.sub("", text)


class _Stream:
    """One stored stream output, its text held as chunks (joined only when read)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.chunks: deque[tuple[str, int]] = deque()  # (text, its UTF-8 length)
        self.nbytes = 0

    def append(self, text: str) -> None:
        if "\r" in text or "\x08" in text or (self.chunks and self.chunks[-1][0].endswith("\r")):
            # Overwrites act within a line: only the unfinished last line can change.
            line: list[str] = []
            while self.chunks:
                last, size = self.chunks.pop()
                self.nbytes -= size
                cut = last.rfind("\n") + 1
                if cut:
                    head = last[:cut]
                    self._push(head)
                    line.append(last[cut:])
                    break
                line.append(last)
            text = _overwrite("".join(reversed(line)) + text)
        self._push(text)

    def _push(self, text: str) -> None:
        if text:
            size = _utf8_len(text)
            self.chunks.append((text, size))
            self.nbytes += size

    def drop_head(self, nbytes: int) -> int:
        """Drop about ``nbytes`` from the start (whole characters); return the bytes dropped."""
        dropped = 0
        while self.chunks and dropped < nbytes:
            text, size = self.chunks[0]
            if dropped + size <= nbytes:
                self.chunks.popleft()
                dropped += size
                continue
            kept = _utf8_tail(text, size - (nbytes - dropped))
            kept_size = _utf8_len(kept)
            self.chunks[0] = (kept, kept_size)
            dropped += size - kept_size
        self.nbytes -= dropped
        return dropped

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "output_type": "stream",
            "text": "".join(text for text, _ in self.chunks),
        }


class CellOutputs:
    """The stored outputs and execution count of one cell while it runs."""

    def __init__(self, max_stream_bytes: int, max_outputs: int = 0) -> None:
        self.max_stream_bytes = max_stream_bytes
        self.max_outputs = max_outputs
        self.items: list[dict[str, Any] | _Stream] = []
        self.displays = 0  # outputs stored that count against max_outputs
        self.left_out = 0  # ... and those left out past it
        self.execution_count: int | None = None
        self.clear_pending = False
        self.dropped_bytes = 0  # stream bytes left out of the stored text
        self.artifact: ArtifactLink | None = None
        self.notebook_dir = ""  # the notebook's folder (API path), for the artifact's link

    @property
    def stream_bytes(self) -> int:
        """UTF-8 bytes of stream text stored now."""
        return sum(item.nbytes for item in self.items if isinstance(item, _Stream))

    def clear(self) -> None:
        """Remove every output (``clear_output``); what was dropped before is gone too."""
        self.items.clear()
        self.clear_pending = False
        self.dropped_bytes = 0
        self.displays = self.left_out = 0

    def add_output(self, output: dict[str, Any]) -> bool:
        """Store a non-stream output; False when it is left out (past ``max_outputs``)."""
        if output.get("output_type") != "error":
            if self.max_outputs and self.displays >= self.max_outputs:
                self.left_out += 1
                return False
            self.displays += 1
        self.items.append(output)
        return True

    def add_stream(self, name: str, text: str) -> None:
        """Append stream text, merged into the previous output when it is the same stream."""
        if len(text) > self.max_stream_bytes:
            kept = _utf8_tail(text, self.max_stream_bytes)
            head = len(text) - len(kept)
            self.dropped_bytes += head if text.isascii() else _utf8_len(text[:head])
            text = kept
        last = self.items[-1] if self.items else None
        if not isinstance(last, _Stream) or last.name != name:
            last = _Stream(name)
            self.items.append(last)
        last.append(text)
        self._bound()

    def _bound(self) -> None:
        excess = self.stream_bytes - self.max_stream_bytes
        if excess <= 0:
            return
        for item in list(self.items):
            if not isinstance(item, _Stream):
                continue
            dropped = item.drop_head(excess)
            self.dropped_bytes += dropped
            excess -= dropped
            if not item.chunks:
                self.items.remove(item)
            if excess <= 0:
                return

    def to_json(self) -> list[dict[str, Any]]:
        """The outputs as stored: plain JSON (a copy), the truncation notice included."""
        outputs = [
            item.to_json() if isinstance(item, _Stream) else dict(item) for item in self.items
        ]
        if self.dropped_bytes:
            first = next(
                (i for i, item in enumerate(self.items) if isinstance(item, _Stream)),
                len(self.items),
            )
            outputs.insert(first, self._notice())
        if self.left_out:
            outputs.append(self._left_out_notice())
        return outputs

    def _left_out_notice(self) -> dict[str, Any]:
        text = (
            f"[{self.left_out} more output(s) not stored: a cell stores at most "
            f"{self.max_outputs} displays and results (XcshSettings.run_max_outputs)]"
        )
        return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}

    def _notice(self) -> dict[str, Any]:
        size = format_size(self.dropped_bytes)
        text = f"[Output truncated: the first {size} of stream output are not stored here."
        html = escape(text)
        if self.artifact is not None:
            uri = f"artifact://{self.artifact.id}"
            text += f" Full output: {uri} ({self.artifact.api_path})]"
            # A relative link: the lab opens it as a file, nbconvert's HTML keeps it working.
            href = posixpath.relpath(self.artifact.api_path, self.notebook_dir or os.curdir)
            html += (
                f' Full output: <a href="{escape(href)}" target="_blank">{escape(uri)}</a>'
                f" ({escape(self.artifact.api_path)})]"
            )
        else:
            text += "]"
            html += "]"
        return {
            "output_type": "display_data",
            "data": {"text/plain": text, "text/html": f"<pre>{html}</pre>"},
            "metadata": {},
        }


class RunOutputs:
    """The outputs of every cell of one run, and the display ids they share."""

    def __init__(self, max_stream_bytes: int, max_outputs: int = 0) -> None:
        self.max_stream_bytes = max_stream_bytes
        self.max_outputs = max_outputs
        self.cells: dict[Hashable, CellOutputs] = {}
        # display_id -> the outputs showing it, with their cell (as nbclient's _display_id_map)
        self._displays: dict[str, list[tuple[Hashable, dict[str, Any]]]] = {}

    def start(self, key: Hashable, notebook_dir: str = "") -> CellOutputs:
        """Begin a cell: its outputs start empty, as nbclient clears them before executing."""
        cell = CellOutputs(self.max_stream_bytes, self.max_outputs)
        cell.notebook_dir = notebook_dir
        self.cells[key] = cell
        self._forget(key)
        return cell

    def _forget(self, key: Hashable) -> None:
        for refs in self._displays.values():
            refs[:] = [ref for ref in refs if ref[0] != key]

    def handle(self, key: Hashable, msg: dict[str, Any]) -> set[Hashable]:
        """Apply one IOPub message of cell ``key``; return the cells whose outputs changed."""
        cell = self.cells[key]
        kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        content = msg.get("content") or {}
        changed: set[Hashable] = set()
        transient = content.get("transient")
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if display_id and kind in _DISPLAY_TYPES:
            changed |= self._update_display(display_id, content)
        if isinstance(content.get("execution_count"), int):
            cell.execution_count = content["execution_count"]
            changed.add(key)
        if kind == "clear_output":
            if content.get("wait"):
                cell.clear_pending = True
            else:
                cell.clear()
                self._forget(key)
                changed.add(key)
        elif kind in _OUTPUT_TYPES:
            if cell.clear_pending:
                cell.clear()
                self._forget(key)
            if kind == "stream":
                cell.add_stream(str(content.get("name", "stdout")), str(content.get("text", "")))
            else:
                output = self._output(kind, msg)
                if output is None:
                    return changed
                if not cell.add_output(output):
                    changed.add(key)  # the notice counts it
                    return changed
                if display_id:
                    self._displays.setdefault(display_id, []).append((key, output))
            changed.add(key)
        return changed

    @staticmethod
    def _output(kind: str, msg: dict[str, Any]) -> dict[str, Any] | None:
        try:
            message = {"header": {"msg_type": kind}, "content": msg["content"]}
            node = output_from_msg(message)  # type: ignore[no-untyped-call]
        except (KeyError, ValueError):
            return None  # a malformed message: nbclient logs it and stores nothing
        return _plain(node)

    def _update_display(self, display_id: str, content: dict[str, Any]) -> set[Hashable]:
        refs = self._displays.get(display_id)
        if not refs:
            return set()
        data, metadata = content.get("data", {}), content.get("metadata", {})
        for _, output in refs:
            output["data"], output["metadata"] = _plain(data), _plain(metadata)
        return {key for key, _ in refs}


def _plain(value: Any) -> Any:
    """JSON values as plain dicts and lists (``NotebookNode`` is a dict subclass)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

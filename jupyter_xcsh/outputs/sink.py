"""The OutputSink: every execution's output, counted, bounded in memory, spilled whole to a file.

The sink keeps in memory only the start of the stream (its first ``head_lines`` lines, at most
``max_bytes``) and its end (at most ``keep_bytes``), and, the first time the stream outgrows
them, opens an artifact and writes the full stream to it from the first byte on. What it shows
is chosen by ``view.render_view``: the whole output when it fits ``max_bytes`` and
``head_lines + tail_lines`` lines, else those lines cut on line boundaries, after a notice
naming the artifact (opened then, if it was not yet, so the notice always has one to name).
It knows neither kernels nor HTTP: the caller pushes text and dumps a result.

What it shows is plain text (``terminal.terminal_line``): no terminal escape sequences, no
control characters, a carriage return overwriting its line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_xcsh.outputs.sizes import format_size
from jupyter_xcsh.outputs.view import OutputView, ViewLimits, cut_notice, render_view, sanitize

__all__ = [
    "DEFAULT_HEAD_LINES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TAIL_LINES",
    "OutputSink",
    "SinkResult",
    "SpillFile",
    "count_newlines",
    "format_size",
    "sanitize",
    "truncation_notice",
]

log = logging.getLogger(__name__)

#: Default bytes of text shown of one execution's output (head and tail together): 8 KiB.
DEFAULT_MAX_BYTES = 8192
#: Default lines shown from the start and from the end of an output that is cut.
DEFAULT_HEAD_LINES = 20
DEFAULT_TAIL_LINES = 60


#: Bytes kept of what precedes the stream's end in memory (to skip an escape sequence cut there).
BEFORE_BYTES = 512

#: Characters of one pushed chunk encoded at a time (bounds the transient copy of a huge chunk).
ENCODE_SLICE = 1024 * 1024


def count_newlines(data: bytes) -> int:
    """Count newlines in ``data``, fast for the line lengths program output has.

    ``bytes.count`` walks byte by byte (~3 GB/s); removing the newlines with ``bytes.replace``
    jumps between them with ``memchr`` and copies the runs, which is 2-3x faster once lines
    average 40 bytes or more, and slower for very short lines. A small sample picks the method.
    """
    if len(data) < 4096 or data.count(b"\n", 0, 2048) * 32 > 2048:
        return data.count(b"\n")
    return len(data) - len(data.replace(b"\n", b""))


class SpillFile(Protocol):
    """What the sink needs of an artifact being written (``ArtifactWriter`` is one)."""

    @property
    def id(self) -> str:
        """The artifact id (``artifact://<id>``)."""

    @property
    def api_path(self) -> str:
        """The artifact's contents API path."""

    def write(self, data: bytes) -> None:
        """Append bytes (they may wait in a buffer until ``flush`` or ``close``)."""

    def flush(self) -> None:
        """Put every appended byte into the file, for a reader of the artifact meanwhile."""

    def close(self) -> None:
        """Finish the artifact."""

    def abort(self) -> None:
        """Close and delete an artifact that could not be written whole."""


@dataclass(frozen=True)
class SinkResult:
    """What one execution printed: the text shown and the counters of the whole stream.

    ``output`` is the text shown: the whole output, or (``truncated``) the ``notice`` line and
    the lines kept. ``total_lines``/``total_bytes`` count everything pushed (lines = newlines +
    1, 0 for no data); ``output_lines``/``output_bytes`` count the output's text shown in
    ``output``, not the notices or the markers of what was left out.
    """

    output: str
    truncated: bool
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    artifact_id: str | None
    artifact_path: str | None
    #: The line before a cut output saying what it shows and where the rest is; None if whole.
    notice: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The result with camelCase keys; ``artifactId``/``artifactPath`` only when spilled."""
        body: dict[str, Any] = {
            "output": self.output,
            "truncated": self.truncated,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
        }
        if self.artifact_id is not None:
            body["artifactId"] = self.artifact_id
            body["artifactPath"] = self.artifact_path
        return body


def truncation_notice(result: SinkResult) -> str | None:
    """The notice put before a cut output (its first line, or second after a timeout's)."""
    return result.notice


class OutputSink:
    """Collect one execution's output with memory bounded by a few times ``max_bytes``.

    Parameters
    ----------
    max_bytes
        Bytes of UTF-8 text shown of the output at most, head and tail together.
    head_lines, tail_lines
        Lines shown from the start and from the end of an output that is cut; both 0: no
        line limit (only ``max_bytes`` cuts, keeping the tail).
    keep_bytes
        Bytes of the stream's end kept in memory (default ``2 * max_bytes``, so that escape
        sequences removed from the text shown still leave it its ``max_bytes``); the stream
        spills once it outgrows them. At least ``max_bytes``.
    open_artifact
        Opens the artifact the full stream spills to, called at most once: on the first
        overflow, or when the output shown is cut. None: no artifact.
    on_chunk
        Receives the raw pushed text for live streaming. Chunks pushed less than
        ``chunk_interval`` seconds after the previous delivery are concatenated and delivered
        with a later push, by ``flush_chunks()`` or by ``dump()``: nothing is lost.
    chunk_interval
        Minimum seconds between two ``on_chunk`` calls; 0 delivers every chunk.
    clock
        Monotonic clock in seconds (for tests).

    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        head_lines: int = DEFAULT_HEAD_LINES,
        tail_lines: int = DEFAULT_TAIL_LINES,
        keep_bytes: int | None = None,
        open_artifact: Callable[[], SpillFile] | None = None,
        on_chunk: Callable[[str], None] | None = None,
        chunk_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes < 4:
            raise ValueError("max_bytes must hold at least one UTF-8 character (4 bytes)")
        if head_lines < 0 or tail_lines < 0:
            raise ValueError("head_lines and tail_lines must be 0 or more")
        self._limits = ViewLimits(max_bytes, head_lines, tail_lines)
        self._max = max(keep_bytes if keep_bytes is not None else 2 * max_bytes, max_bytes)
        self._open_artifact = open_artifact
        self._on_chunk = on_chunk
        self._interval = chunk_interval
        self._clock = clock
        # The stream's start: its first head_lines lines, within max_bytes.
        self._head = bytearray()
        self._head_newlines = 0
        self._head_full = head_lines == 0
        # The stream's end: its last keep_bytes bytes, from a character boundary.
        self._buf = bytearray()
        self._buf_starts_line = True  # the byte before the window is a newline (or none)
        self._before = b""  # the last bytes before the window
        self._total_bytes = 0
        self._newlines = 0
        self._last_byte = 0
        self._spilled = False
        self._artifact: SpillFile | None = None
        self._artifact_id: str | None = None
        self._artifact_path: str | None = None
        self._pending: list[str] = []
        self._pending_chars = 0
        self._last_delivery: float | None = None
        self._closed = False

    @property
    def truncated(self) -> bool:
        """Whether the output is cut (not shown whole) as it stands."""
        return self._view().truncated

    @property
    def total_bytes(self) -> int:
        """UTF-8 bytes pushed so far."""
        return self._total_bytes

    def push(self, chunk: str) -> None:
        """Add text to the stream: count it, keep its ends, spill it, forward it."""
        if self._closed:
            raise RuntimeError("OutputSink is closed")
        if not chunk:
            return
        if len(chunk) <= ENCODE_SLICE:
            self._push_text(chunk)
        else:
            # A kernel may send tens of megabytes in one message: encode it a slice at a time,
            # so no second full-size copy of it is ever held.
            for start in range(0, len(chunk), ENCODE_SLICE):
                self._push_text(chunk[start : start + ENCODE_SLICE])
        if self._on_chunk is not None:
            self._forward(chunk)

    def _push_text(self, text: str) -> None:
        # A lone surrogate (possible in JSON from a kernel) has no UTF-8 form: it becomes "?".
        data = text.encode("utf-8", "replace")
        self._total_bytes += len(data)
        self._newlines += count_newlines(data)
        self._last_byte = data[-1]
        if not self._head_full:
            self._keep_head(data)
        if not self._spilled and len(self._buf) + len(data) > self._max:
            self._start_spill()
        if self._artifact is not None:
            self._spill(data)
        self._keep(data)

    def _keep_head(self, data: bytes) -> None:
        piece = data[: self._limits.max_bytes - len(self._head)]
        end = -1
        for _ in range(self._limits.head_lines - self._head_newlines):
            end = piece.find(b"\n", end + 1)
            if end < 0:
                break
        if end >= 0:  # the head_lines-th newline: the head is complete
            piece = piece[: end + 1]
            self._head_full = True
        self._head_newlines += piece.count(b"\n")
        self._head += piece
        if len(self._head) >= self._limits.max_bytes:
            self._head_full = True

    def _keep(self, data: bytes) -> None:
        buf = self._buf
        excess = len(buf) + len(data) - self._max
        if excess <= 0:
            buf += data
            return
        # What is dropped: its last byte says whether the window starts a line, its end
        # whether the window starts inside an escape sequence.
        if excess <= len(buf):
            gone = bytes(buf[max(0, excess - BEFORE_BYTES) : excess])
        else:
            cut = excess - len(buf)
            gone = bytes(buf[-BEFORE_BYTES:]) + data[max(0, cut - BEFORE_BYTES) : cut]
        if len(data) >= self._max:
            self._buf = buf = bytearray(memoryview(data)[len(data) - self._max :])
        else:
            # Drop first, then append: the buffer never grows past the limit (no reallocation).
            del buf[:excess]
            buf += data
        # Cut forward to a character boundary: drop the continuation bytes of a split character.
        while buf and buf[0] & 0xC0 == 0x80:
            gone += buf[:1]
            del buf[0]
        self._buf_starts_line = gone[-1:] == b"\n"
        self._before = (self._before + gone)[-BEFORE_BYTES:]

    def _start_spill(self) -> None:
        self._spilled = True
        if self._open_artifact is None:
            return
        try:
            artifact = self._open_artifact()
        except OSError as e:
            log.warning("Could not create an output artifact, keeping only the ends: %s", e)
            return
        self._artifact = artifact
        self._artifact_id = artifact.id
        self._artifact_path = artifact.api_path
        # Not spilled yet: the window still holds the stream from its first byte.
        self._spill(bytes(self._buf))

    def _spill(self, data: bytes) -> None:
        assert self._artifact is not None
        try:
            self._artifact.write(data)
        except OSError as e:
            # An artifact missing part of the stream would mislead: remove it, keep the ends.
            log.warning("Could not write output artifact %s, removing it: %s", self._artifact_id, e)
            artifact, self._artifact = self._artifact, None
            self._artifact_id = self._artifact_path = None
            try:
                artifact.abort()
            except OSError:
                log.warning("Could not remove the partial artifact", exc_info=True)

    def _forward(self, chunk: str) -> None:
        self._pending.append(chunk)
        self._pending_chars += len(chunk)
        now = self._clock()
        due = self._last_delivery is None or now - self._last_delivery >= self._interval
        # Deliver early rather than let coalesced text grow past the memory limit.
        if due or self._pending_chars >= self._max:
            self.flush_chunks()

    def flush_chunks(self) -> None:
        """Deliver the coalesced chunks waiting for the throttle interval, if any."""
        if not self._pending or self._on_chunk is None:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        self._last_delivery = self._clock()
        self._on_chunk(text)

    def close(self) -> None:
        """Stop accepting output and close the artifact, keeping it (idempotent)."""
        self._closed = True
        artifact, self._artifact = self._artifact, None
        if artifact is None:
            return
        try:
            artifact.close()
        except OSError as e:
            # The last buffered bytes never reached the disk: the artifact is not whole.
            log.warning("Could not finish output artifact %s, removing it: %s", artifact.id, e)
            self._artifact_id = self._artifact_path = None
            try:
                artifact.abort()
            except OSError:
                log.warning("Could not remove the partial artifact", exc_info=True)

    def dump(self, notice: str | None = None) -> SinkResult:
        """Close the sink and return the text shown, the counters and the artifact.

        ``notice`` (e.g. ``"Command timed out after 30 seconds"``) is prefixed to the output
        as ``[<notice>]`` on a line of its own, before the notice of a cut output.
        """
        self.flush_chunks()
        view = self._view()
        if view.truncated and not self._spilled:
            self._start_spill()  # the notice names an artifact holding everything
        self.close()
        return self._result(notice, view)

    def snapshot(self) -> SinkResult:
        """What ``dump()`` would return now, without closing the sink (for a partial result).

        The artifact it names gets every byte pushed so far: a caller told to read it while
        the execution waits (for input, say) finds the whole output up to now.
        """
        view = self._view()
        if view.truncated and not self._spilled:
            self._start_spill()
        if self._artifact is not None:
            try:
                self._artifact.flush()
            except OSError as e:
                log.warning("Could not flush output artifact %s: %s", self._artifact_id, e)
        return self._result(None, view)

    def _view(self) -> OutputView:
        """What is shown of the stream as it stands (``view.render_view``)."""
        ends_line = self._last_byte == 0x0A
        total_lines = self._newlines + (0 if ends_line or not self._total_bytes else 1)
        dropped = self._total_bytes - len(self._buf)
        if dropped == 0:
            whole: bytes | None = bytes(self._buf)
        elif len(self._head) >= dropped:  # the two ends meet: everything is still here
            whole = bytes(self._head[:dropped]) + self._buf
        else:
            whole = None
        if whole is not None:
            return render_view(
                self._limits, total_lines=total_lines, whole=whole.decode("utf-8", "replace")
            )
        return render_view(
            self._limits,
            total_lines=total_lines,
            # The head may end inside a character: "ignore" drops only that.
            head=self._head.decode("utf-8", "ignore"),
            tail=self._buf.decode("utf-8", "replace"),
            tail_starts_line=self._buf_starts_line,
            before_tail=self._before.decode("utf-8", "ignore"),
        )

    def _result(self, notice: str | None, view: OutputView) -> SinkResult:
        cut = None
        if view.truncated:
            total_lines = self._newlines + (0 if self._last_byte == 0x0A else 1)
            cut = cut_notice(view, total_lines, self._total_bytes, self._artifact_id)
        lines = [line for line in (f"[{notice}]" if notice else None, cut) if line]
        content = view.content
        return SinkResult(
            output="\n".join([*lines, view.text]) if lines else view.text,
            truncated=view.truncated,
            total_lines=self._newlines + 1 if self._total_bytes else 0,
            total_bytes=self._total_bytes,
            output_lines=content.count("\n") + 1 if content else 0,
            output_bytes=len(content.encode("utf-8")),
            artifact_id=self._artifact_id,
            artifact_path=self._artifact_path,
            notice=cut,
        )

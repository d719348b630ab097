"""The OutputSink: every execution's output, counted, bounded in memory, spilled whole to a file.

The sink keeps only the tail of the stream in memory (at most ``max_bytes`` of UTF-8) and, the
first time the stream would not fit, opens an artifact and writes the full stream to it from the
first byte on. It knows neither kernels nor HTTP: the caller pushes text and dumps a result.

What it keeps is safe to show as plain text (``sanitize``): no terminal escape sequences, no
control characters. The patterns are data, ``escapes.json`` next to this file, so that the lab
extension strips the same sequences: its copy is generated from that file at build time.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .sizes import format_size

__all__ = [
    "OutputSink",
    "SinkResult",
    "SpillFile",
    "count_newlines",
    "format_size",
    "sanitize",
    "truncation_notice",
]

log = logging.getLogger(__name__)

#: The terminal escape sequences and control characters ``sanitize`` removes (the lab's too).
_ESCAPES_DATA = json.loads((Path(__file__).parent / "escapes.json").read_text(encoding="utf-8"))
# ANSI CSI, OSC, DCS/SOS/PM/APC and two-character (and nF) sequences, each with its terminator:
# an unterminated sequence does not match here and loses only its ESC to _CONTROLS below.
_ESCAPES = re.compile("|".join(_ESCAPES_DATA["escapes"]))
# C0 controls but TAB and LF, CR, DEL and C1 controls.
_CONTROLS = re.compile(_ESCAPES_DATA["controls"])


def sanitize(text: str) -> str:
    r"""Return ``text`` with terminal escape sequences and control characters removed.

    Removed: ANSI CSI, OSC, DCS, SOS, PM and APC sequences; two-character ESC sequences (and the
    longer ones with intermediates, such as ``ESC ( B``); every ``\r``; C0 controls except TAB
    and LF; DEL; C1 controls. An escape sequence that never terminates loses only its ESC, so no
    visible text after it disappears.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


#: Default in-memory limit of one execution's output: 50 KiB.
DEFAULT_MAX_BYTES = 51200


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
    """What one execution printed: the visible tail and the counters of the whole stream.

    ``total_lines``/``total_bytes`` count everything pushed (lines = newlines + 1, 0 for no
    data); ``output_lines``/``output_bytes`` count the sanitized tail in ``output``, not the
    notice prefixed to it.
    """

    output: str
    truncated: bool
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    artifact_id: str | None
    artifact_path: str | None

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


def truncation_notice(result: SinkResult, limit_bytes: int) -> str | None:
    """The notice telling the caller which lines it sees and where the rest is; None if whole."""
    if not result.truncated:
        return None
    last = result.total_lines
    first = min(last, last - result.output_lines + 1)
    text = f"[Showing lines {first}-{last} of {last} ({format_size(limit_bytes)} limit)"
    if result.artifact_id is None:
        return text + "]"
    return text + f". Read artifact://{result.artifact_id} for full output]"


class OutputSink:
    """Collect one execution's output with memory bounded by ``max_bytes``.

    Parameters
    ----------
    max_bytes
        Bytes of UTF-8 kept in memory and returned; past it only the tail is kept.
    open_artifact
        Opens the artifact the full stream spills to, called at most once, on the first
        overflow. None: no artifact, the head of an overflowing stream is dropped.
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
        open_artifact: Callable[[], SpillFile] | None = None,
        on_chunk: Callable[[str], None] | None = None,
        chunk_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes < 4:
            raise ValueError("max_bytes must hold at least one UTF-8 character (4 bytes)")
        self._max = max_bytes
        self._open_artifact = open_artifact
        self._on_chunk = on_chunk
        self._interval = chunk_interval
        self._clock = clock
        self._buf = bytearray()
        self._total_bytes = 0
        self._newlines = 0
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
        """Whether the stream outgrew ``max_bytes``, so only its tail is kept."""
        return self._total_bytes > self._max

    @property
    def total_bytes(self) -> int:
        """UTF-8 bytes pushed so far."""
        return self._total_bytes

    def push(self, chunk: str) -> None:
        """Add text to the stream: count it, keep the tail, spill it, forward it."""
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
        if not self._spilled and len(self._buf) + len(data) > self._max:
            self._start_spill()
        if self._artifact is not None:
            self._spill(data)
        self._keep(data)

    def _keep(self, data: bytes) -> None:
        buf = self._buf
        if len(data) >= self._max:
            self._buf = buf = bytearray(memoryview(data)[len(data) - self._max :])
        else:
            buf += data
            excess = len(buf) - self._max
            if excess <= 0:
                return
            del buf[:excess]
        # Cut forward to a character boundary: drop the continuation bytes of a split character.
        while buf and buf[0] & 0xC0 == 0x80:
            del buf[0]

    def _start_spill(self) -> None:
        self._spilled = True
        if self._open_artifact is None:
            return
        try:
            artifact = self._open_artifact()
        except OSError as e:
            log.warning("Could not create an output artifact, keeping only the tail: %s", e)
            return
        self._artifact = artifact
        self._artifact_id = artifact.id
        self._artifact_path = artifact.api_path
        self._spill(bytes(self._buf))

    def _spill(self, data: bytes) -> None:
        assert self._artifact is not None
        try:
            self._artifact.write(data)
        except OSError as e:
            # An artifact missing part of the stream would mislead: remove it, keep the tail.
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
        """Close the sink and return the sanitized tail, the counters and the artifact.

        ``notice`` (e.g. ``"Command timed out after 30 seconds"``) is prefixed to the output
        as ``[<notice>]`` on a line of its own.
        """
        self.flush_chunks()
        self.close()
        return self._result(notice)

    def snapshot(self) -> SinkResult:
        """What ``dump()`` would return now, without closing the sink (for a partial result).

        The artifact it names gets every byte pushed so far: a caller told to read it while
        the execution waits (for input, say) finds the whole output up to now.
        """
        if self._artifact is not None:
            try:
                self._artifact.flush()
            except OSError as e:
                log.warning("Could not flush output artifact %s: %s", self._artifact_id, e)
        return self._result(None)

    def _result(self, notice: str | None) -> SinkResult:
        text = sanitize(self._buf.decode("utf-8", "replace"))
        output_lines = text.count("\n") + 1 if text else 0
        output_bytes = len(text.encode("utf-8"))
        return SinkResult(
            output=f"[{notice}]\n{text}" if notice else text,
            truncated=self.truncated,
            total_lines=self._newlines + 1 if self._total_bytes else 0,
            total_bytes=self._total_bytes,
            output_lines=output_lines,
            output_bytes=output_bytes,
            artifact_id=self._artifact_id,
            artifact_path=self._artifact_path,
        )

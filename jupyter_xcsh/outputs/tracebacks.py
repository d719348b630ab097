"""Fold a traceback for a model to read: its frames that matter whole, the rest one line each.

A kernel's traceback is written for a person at a terminal: every frame with its source, in
colour, all the way down a library and a thousand times over for a recursion. What a model
needs is the user's code, where it went wrong and the exception. ``fold_traceback`` keeps:

- the user's frames whole (``Cell In[..]``, and files that are not a library's: the user's
  modules, under the server root or anywhere else);
- the last frame of the exception raised whole (where it was raised, even inside a library);
- library frames (``site-packages``, ``dist-packages``, the standard library, Cython sources
  ``.pyx``/``.pxi``/``.pxd``, frozen modules) as one line: file (from the package on), line,
  function;
- a frame or a run of frames repeated three times or more once, then
  ``[... previous frame repeated N times]`` (a ``RecursionError``);
- the exception lines and the chaining lines as they are;

and drops IPython's ``Could not get source`` lines and its separator of dashes. Pure: the caller
saves the full text (``save_traceback``) and names it in the text when anything was folded.

It reads IPython's formats (8 and later) and Python's own (``%xmode Plain``, other kernels'
Python); a traceback it cannot read (another language's) is left as it is, escapes removed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.outputs.view import terminal_line

__all__ = ["FoldedTraceback", "fold_traceback", "save_traceback"]

log = logging.getLogger(__name__)

#: A frame's first line: IPython's ``File <path>:<line>, in <function>`` (no comma with
#: ``%xmode Plain``) and ``Cell In[<n>], line <k>``, IPython 8.0-8.3's ``Input In [<n>]``,
#: Python's ``File "<path>", line <k>, in <function>``.
_FRAME = re.compile(
    r"^\s*(?:"
    r"File (?P<ipath>.+?):\d+(?:,? in .*)?"
    r"|Cell In ?\[\d+\], line \d+(?:, in .*)?"
    r"|Input In \[\d+\](?:, in .*)?"
    r'|File "(?P<ppath>[^"]+)", line \d+(?:, in .*)?'
    r")$"
)
#: A line of a frame after its first: indented source, or IPython's arrow (``---->``, ``->``).
_FRAME_BODY = re.compile(r"^(?:\s+\S|-*>)")
#: Where library code lives: installed packages, the standard library, Cython, frozen modules.
_LIBRARY = re.compile(
    r"(?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[\d.]*t?[/\\]|[/\\]Lib[/\\]"
    r"|\.(?:pyx|pxi|pxd)$|^<frozen "
)
#: The part of a library path left out of its one line (up to the package or the stdlib module).
_LIBRARY_PREFIX = re.compile(
    r"^.*(?:(?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[\d.]*t?[/\\]|[/\\]Lib[/\\])"
)
#: IPython's first line of a traceback, ``<ename>   Traceback (most recent call last)``.
_HEADER = re.compile(r"^\S.*?\s+Traceback \(most recent call last\):?$")
#: What IPython's first line becomes: Python's own.
TRACEBACK = "Traceback (most recent call last):"
_SEPARATOR = re.compile(r"^-{20,}$")
_NO_SOURCE = "Could not get source"
_CHAINS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
#: Longest run of frames recognised as repeated (mutual recursion through that many functions).
MAX_PERIOD = 8
#: Times a frame (or run) must appear in a row to be collapsed.
MIN_REPEATS = 3


@dataclass
class _Frame:
    header: str
    body: list[str]
    path: str | None  # None: a cell of the notebook or console

    @property
    def library(self) -> bool:
        return self.path is not None and _LIBRARY.search(self.path) is not None

    def one_line(self) -> str:
        """The frame's first line, its path from the package (or stdlib module) on."""
        header = self.header.strip()
        assert self.path is not None
        return header.replace(self.path, _LIBRARY_PREFIX.sub("", self.path), 1)


@dataclass(frozen=True)
class FoldedTraceback:
    """A traceback's text for a model, and what was folded away (the full text has it)."""

    text: str
    library_frames: int = 0
    repeated_frames: int = 0
    dropped_lines: int = 0

    @property
    def folded(self) -> bool:
        """Whether anything of the traceback was left out (so the full text must be kept)."""
        return bool(self.library_frames or self.repeated_frames or self.dropped_lines)

    def notice(self, artifact_id: str | None) -> str:
        """The line put before a folded traceback: what was folded, where the whole one is."""
        what = []
        if self.library_frames:
            s = "" if self.library_frames == 1 else "s"
            what.append(f"{self.library_frames} library frame{s} on one line")
        if self.repeated_frames:
            s = "" if self.repeated_frames == 1 else "s"
            what.append(f"{self.repeated_frames} repeated frame{s} collapsed")
        folded = ", ".join(what) or "source lines IPython could not get left out"
        if artifact_id is None:
            return f"[Traceback folded: {folded}]"
        return f"[Traceback folded: {folded}; full traceback: artifact://{artifact_id}]"


def _parse(lines: list[str]) -> list[str | _Frame]:
    """Lines and frames, in order (blank lines between frames are dropped)."""
    items: list[str | _Frame] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _FRAME.match(line)
        i += 1
        if match is None:
            if line.strip() or not (items and isinstance(items[-1], _Frame)):
                items.append(line)
            continue
        body: list[str] = []
        while i < len(lines) and _FRAME_BODY.match(lines[i]) and not _FRAME.match(lines[i]):
            body.append(lines[i])
            i += 1
        items.append(_Frame(line, body, match.group("ipath") or match.group("ppath")))
    return items


def _key(frame: _Frame) -> str:
    return frame.header.strip()


def _repeats(frames: list[_Frame], start: int) -> tuple[int, int]:
    """The period and count of the longest run of repeats starting at ``start`` (count >= 3)."""
    best = (1, 1)
    for period in range(1, MAX_PERIOD + 1):
        block = [_key(f) for f in frames[start : start + period]]
        if len(block) < period:
            break
        count = 1
        while [_key(f) for f in frames[start + count * period : start + (count + 1) * period]] == (
            block
        ):
            count += 1
        if count >= MIN_REPEATS and period * count > best[0] * best[1]:
            best = (period, count)
    return best


def fold_traceback(text: str) -> FoldedTraceback:
    """Fold a traceback's text (escapes are removed here); see the module's docstring."""
    lines = [terminal_line(line) for line in text.split("\n")]
    items = _parse(lines)
    last_section = max(
        (i for i, item in enumerate(items) if isinstance(item, str) and item.strip() in _CHAINS),
        default=-1,
    )
    last_frame = max(
        (i for i, item in enumerate(items) if isinstance(item, _Frame) and i > last_section),
        default=-1,
    )
    out: list[str] = []
    library = repeated = dropped = 0

    def blank() -> None:
        if out and out[-1] != "":
            out.append("")

    def emit(frame: _Frame, whole: bool) -> None:
        nonlocal library, dropped
        if whole or not frame.library:
            kept = [line for line in frame.body if _NO_SOURCE not in line]
            dropped += len(frame.body) - len(kept)
            if out and out[-1] != TRACEBACK:
                blank()
            out.extend([frame.header, *kept, ""])
        else:
            library += 1
            out.append(frame.one_line())

    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, str):
            i += 1
            if _SEPARATOR.match(item):
                continue
            if not item.strip():
                blank()
                continue
            if item.strip() in _CHAINS:
                blank()
            out.append(TRACEBACK if _HEADER.match(item) else item)
            continue
        end = i
        while end < len(items) and isinstance(items[end], _Frame):
            end += 1
        frames = [f for f in items[i:end] if isinstance(f, _Frame)]
        k = 0
        while k < len(frames):
            period, count = _repeats(frames, k)
            if (
                count > 1
                and i + k <= last_frame < i + k + period * count
                and frames[last_frame - i].library
            ):
                count -= 1  # the last block is shown after the marker, its last frame whole
            for offset, frame in enumerate(frames[k : k + period]):
                emit(frame, whole=i + k + offset == last_frame)
            if count > 1:
                repeated += period * (count - 1)
                what = "frame" if period == 1 else f"{period} frames"
                if out and out[-1] == "":
                    out.pop()
                out.extend([f"[... previous {what} repeated {count - 1} times]", ""])
            k += period * count
        i = end
    while out and out[-1] == "":
        out.pop()
    return FoldedTraceback("\n".join(out), library, repeated, dropped)


def save_traceback(store: ArtifactStore | None, tool: str) -> Callable[[str], str | None]:
    """A function saving a traceback's full text as an artifact; it returns the id (or None)."""

    def save(text: str) -> str | None:
        if store is None:
            return None
        try:
            return store.save(tool, "log", text.encode("utf-8", "replace")).id
        except OSError as e:
            log.warning("Could not save a traceback artifact: %s", e)
            return None

    return save

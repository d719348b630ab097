"""The notebooks the tool last read or wrote, kept parsed while their file is unchanged.

Parsing a 20 MB notebook, and computing its signature, costs tens of milliseconds each; an
agent editing one notebook cell after cell pays them on every change. So the store keeps, per
file, the document it last parsed or saved (its cells parsed, its text as cell-sized slices:
``document.py``) and its signature, and reuses them while the file is the one it saw.

"The one it saw" is decided by the file's status, read with ``os.stat`` (only for contents
managers that keep files: others always load the file again):

- device, inode, size, modification and change times in nanoseconds, permissions and owner
  must all be equal. The tool's own saves replace the file by a new inode
  (``atomic.replacing_file``), whose status is noted as the temporary file is written and
  checked again once it is in place; another program writing the file in place changes its
  modification time (and its change time, even when it sets the modification time back), one
  replacing it changes its inode;
- a status noted within ``RACY_NS`` of the modification time it shows is never trusted
  ("racy", as git calls it): file systems stamp files with a coarse clock, so a write in the
  same clock tick could leave the time and size unchanged. Such a file is read again. A
  modification time of whole seconds (a file system of second timestamps) widens the window
  to ``COARSE_RACY_NS``;
- every save through the contents manager other than the tool's own (a JupyterLab save, a
  collaboration room's) drops the file's entry before it writes (``saves.SaveGuard``).

Memory is bounded: at most one document per file, the least recently used dropped past
``max_bytes`` (the documents' text sizes; a parsed notebook costs about as much again).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.notebook.storage.document import NotebookDocument


def _coarse_tick_ns() -> int:
    """The tick of the clock file systems stamp files with (Linux: ``CLOCK_REALTIME_COARSE``)."""
    try:
        return int(time.clock_getres(5) * 1e9)  # CLOCK_REALTIME_COARSE, not named by ``time``
    except (OSError, AttributeError):
        return 10_000_000


#: How close (ns) to a file's modification time its status may be noted and still be trusted:
#: twice the file system clock's tick (a write stamps at most one tick before it happened).
RACY_NS = min(max(2 * _coarse_tick_ns(), 2_000_000), 20_000_000)
#: The same for files whose modification time is whole seconds (coarse file systems).
COARSE_RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class FileStamp:
    """A file's status as the cache compares it, and when it was read (``time.time_ns``)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    #: Permission bits and owner (a file made unreadable is read again, and refused).
    access: tuple[int, int, int]
    #: The inode's change time: no program can set it back (as it can the modification time).
    ctime_ns: int
    noted_ns: int

    @classmethod
    def of(cls, status: os.stat_result, noted_ns: int) -> FileStamp:
        """The stamp of an ``os.stat``/``os.fstat`` result read at (or after) ``noted_ns``."""
        access = (status.st_mode, status.st_uid, status.st_gid)
        return cls(
            status.st_dev,
            status.st_ino,
            status.st_size,
            status.st_mtime_ns,
            access,
            status.st_ctime_ns,
            noted_ns,
        )

    def same_file(self, other: FileStamp) -> bool:
        """Whether ``other`` shows the same file, unchanged (the time it was noted aside)."""
        return self.same_written(other) and self.ctime_ns == other.ctime_ns

    def same_written(self, other: FileStamp) -> bool:
        """``same_file`` but for the change time (which renaming the written file changes)."""
        return (self.device, self.inode, self.size, self.mtime_ns, self.access) == (
            other.device,
            other.inode,
            other.size,
            other.mtime_ns,
            other.access,
        )

    @property
    def racy(self) -> bool:
        """Whether a write in the same clock tick could have left this status unchanged."""
        window = COARSE_RACY_NS if self.mtime_ns % 1_000_000_000 == 0 else RACY_NS
        return self.mtime_ns >= self.noted_ns - window


def stamp_of(os_path: str) -> FileStamp | None:
    """The file's stamp now; None when it cannot be read (gone, not allowed)."""
    noted = time.time_ns()  # before the status: a later write cannot look older than it
    try:
        return FileStamp.of(os.stat(os_path), noted)
    except (OSError, ValueError):
        return None


@dataclass
class CachedNotebook:
    """A parsed notebook as its file was when ``stamp`` was noted."""

    document: NotebookDocument
    #: None: the file's status is not known (not a file): the entry is never kept.
    stamp: FileStamp | None
    #: The contents manager's ``last_modified`` of that file.
    last_modified: Any
    #: The notary's signature of this content, when known.
    signature: str | None = None
    #: The notary store's state (``trust.NotebookTrust.state``) when this content was found not
    #: trusted; None when unknown.
    untrusted_in: Any = None
    #: Views using the document now: a change must not take it meanwhile.
    readers: int = 0

    @property
    def size(self) -> int:
        """What the entry counts against the cache's bound (the notebook's text size)."""
        return self.document.size


class NotebookCache:
    """At most one parsed notebook per file key, least recently used dropped past ``max_bytes``.

    ``max_bytes`` 0 keeps nothing. Used on the event loop's thread only.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, CachedNotebook] = OrderedDict()
        self._sizes: dict[str, int] = {}  # each entry's size when it was kept
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The kept documents' total size."""
        return self._bytes

    def get(self, key: str, stamp: FileStamp | None) -> CachedNotebook | None:
        """The entry of ``key`` if its file still is what ``stamp`` shows now, else None.

        An entry whose file changed is dropped.
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if stamp is None or entry.stamp is None or not entry.stamp.same_file(stamp):
            self.drop(key)
            return None
        self._entries.move_to_end(key)
        return entry

    def take(self, key: str, stamp: FileStamp | None) -> CachedNotebook | None:
        """As ``get``, but the entry leaves the cache (to be changed); None while it is read."""
        entry = self.get(key, stamp)
        if entry is None or entry.readers:
            return None
        self.drop(key)
        return entry

    def put(self, key: str, entry: CachedNotebook) -> None:
        """Keep ``entry`` for ``key`` (replacing any), unless its stamp is racy or it is too big."""
        self.drop(key)
        size = entry.size
        if entry.stamp is None or entry.stamp.racy or size > self.max_bytes:
            return
        self._entries[key] = entry
        self._sizes[key] = size
        self._bytes += size
        while self._bytes > self.max_bytes:
            self.drop(next(iter(self._entries)))

    def drop(self, key: str) -> bool:
        """Forget ``key``'s entry; whether there was one."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        self._bytes -= self._sizes.pop(key)
        return True

    def forget(self, key: str) -> None:
        """``drop``, for listeners (``saves.SaveGuard.on_change``)."""
        self.drop(key)

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._sizes.clear()
        self._bytes = 0

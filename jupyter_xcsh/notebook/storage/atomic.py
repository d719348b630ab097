"""The tool's atomic writes: a file replaced through a temporary one, all of it or none.

``replacing_file`` writes the new text to a hidden temporary file in the same folder, flushes it
to disk and renames it over the file, so a reader sees the old or the new file, never a part;
the save guard (``saves.py``) routes the tool's saves of notebooks through it, and the
artifacts' store writes its files with the same temporary files.

A server killed in the middle of such a save leaves its temporary file behind. The file's name
carries the writer's process id (``.~xcsh-<pid>-<random>.tmp``) and every folder the tool has
written one in is noted in a journal in the server's runtime folder, so a server starting later
removes the leftovers (:class:`TemporaryFiles`): only files of that name, older than itself,
whose writer no longer runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import queue
import re
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import IO, Any

from jupyter_xcsh.memory import libc_function
from jupyter_xcsh.notebook.storage.cache import RACY_NS

#: Where the current task's atomic save notes the status of the file it wrote (and when):
#: set by the save guard around a save whose status it keeps.
WRITTEN: ContextVar[list[tuple[os.stat_result, int]] | None] = ContextVar(
    "xcsh_written_status", default=None
)


def _umask() -> int:
    """The process umask, read without changing it where the system tells (Linux)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The process umask, read once: the mode of a file created where none was.
_NEW_FILE_MODE = 0o666 & ~_umask()


#: The name of a temporary file of the tool: ``.~xcsh-<pid>-<random>.tmp`` (the pid is missing
#: from those of versions before it was added). ``mkstemp``'s random part has no ``-``.
TEMPORARY_NAME = re.compile(r"\.~xcsh-(?:(\d+)-)?[A-Za-z0-9_]+\.tmp")
#: Folders at most in the journal of ``TemporaryFiles`` (the most recently noted are kept).
MAX_JOURNAL_FOLDERS = 10_000


class TemporaryFiles:
    """The folders the tool writes temporary files in, and the removal of those a crash left.

    ``journal`` is a text file (one folder a line) shared by the servers of a runtime folder;
    None keeps no journal (nothing is removed later).
    """

    def __init__(self, journal: str | None, log: logging.Logger | None = None) -> None:
        self.journal = journal
        self.log = log or logging.getLogger(__name__)
        self._noted: set[str] = set()
        self._lock = threading.Lock()  # saves run on the contents manager's threads

    @staticmethod
    def prefix() -> str:
        """The start of this process's temporary file names."""
        return f".~xcsh-{os.getpid()}-"

    def note(self, folder: str) -> None:
        """Record ``folder`` in the journal (once per process) before a file is made there."""
        if self.journal is None or folder in self._noted:
            return
        with self._lock:
            if folder in self._noted:
                return
            try:
                os.makedirs(os.path.dirname(self.journal), exist_ok=True)
                # One short appended line: whole even when servers append at once.
                with open(self.journal, "a", encoding="utf-8") as journal:
                    journal.write(folder + "\n")
            except OSError as e:  # no journal: a crash's leftover stays, the save goes on
                self.log.warning("xcsh: could not note %s in %s: %s", folder, self.journal, e)
            self._noted.add(folder)

    def remove_leftovers(self, started: float) -> list[str]:
        """Remove the temporary files a crashed writer left in the journal's folders.

        Only files named as the tool names them, last written before ``started`` (this
        server's start, as seconds since the epoch) and whose writer no longer runs. The
        journal is rewritten with the folders that still exist. Returns the removed paths.
        """
        if self.journal is None:
            return []
        try:
            with open(self.journal, encoding="utf-8") as journal:
                folders = list(dict.fromkeys(line.rstrip("\n") for line in journal if line.strip()))
        except FileNotFoundError:
            return []
        removed: list[str] = []
        kept = []
        for folder in folders[-MAX_JOURNAL_FOLDERS:]:
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as e:
                self.log.warning("xcsh: could not look for leftovers in %s: %s", folder, e)
                kept.append(folder)
                continue
            kept.append(folder)
            for entry in entries:
                if _is_leftover(entry, started):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
                        removed.append(entry.path)
        folders = [*kept, *(self._noted - set(kept))]
        with (
            self._lock,
            contextlib.suppress(OSError),
            open(self.journal, "w", encoding="utf-8") as journal,
        ):
            journal.writelines(folder + "\n" for folder in folders)
        return removed


def _is_leftover(entry: os.DirEntry[str], started: float) -> bool:
    match = TEMPORARY_NAME.fullmatch(entry.name)
    if match is None:
        return False
    try:
        if not entry.is_file(follow_symlinks=False) or entry.stat().st_mtime >= started:
            return False
    except OSError:
        return False
    pid = match[1]
    return pid is None or int(pid) == os.getpid() or not _running(int(pid))


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, OSError):
        return False
    return True


_SYNC_FILE_RANGE = libc_function(
    "sync_file_range", ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint
)
#: ``sync_file_range``'s flag: start writing the range's dirty pages, do not wait.
_SYNC_FILE_RANGE_WRITE = 2


def start_writeback(stream: IO[bytes], start: int, length: int) -> None:
    """Start writing bytes ``start`` to ``start + length`` of ``stream``'s file to disk; no wait.

    What the tool saves is written to disk while the rest of the file is still being encoded,
    so the ``fsync`` that ends the save waits only for the last part: the save of a 21 MB
    notebook here went from ~30 ms to ~13 ms (``bench/notebook_edit.py``). The ``fsync`` stays
    what makes the file durable; this only starts the work earlier (Linux; nothing elsewhere).
    """
    if _SYNC_FILE_RANGE is None:
        return
    stream.flush()
    _SYNC_FILE_RANGE(stream.fileno(), start, length, _SYNC_FILE_RANGE_WRITE)


#: A replaced file at least this large is let go on ``_LATER``'s thread (see ``replacing_file``).
RELEASE_LATER_BYTES = 1 << 20


class _ClosingLater:
    """Closes file descriptors on a thread of its own, so the caller does not wait for it.

    The last close of a file that was renamed over frees its blocks: ~7 ms for 21 MB here,
    which would otherwise be part of the rename that ends every save of it.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def close(self, fd: int) -> None:
        """Close ``fd`` soon, on this closer's thread (started the first time)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="xcsh-release", daemon=True)
                self._thread.start()
        self._queue.put(fd)

    def _run(self) -> None:
        while True:
            fd = self._queue.get()
            with contextlib.suppress(OSError):
                os.close(fd)


_LATER = _ClosingLater()


def _hold_replaced(target: str, current: os.stat_result) -> int | None:
    """A descriptor keeping ``target``'s old file until ``_LATER`` lets it go (large files only)."""
    if os.name != "posix":  # Windows refuses to replace a file someone has open
        return None
    if not stat.S_ISREG(current.st_mode) or current.st_nlink != 1:
        return None
    if current.st_size < RELEASE_LATER_BYTES:
        return None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    if os.fstat(fd).st_ino != current.st_ino:  # replaced meanwhile: not the file we saw
        os.close(fd)
        return None
    return fd


def _settle_modification_time(fd: int, replaced: os.stat_result | None) -> None:
    """Stamp the file the tool wrote so that its status can be kept (``cache.FileStamp``).

    A status noted within ``cache.RACY_NS`` of the modification time it shows is never trusted
    (a write in the same clock tick could leave it unchanged), and the save noted it right after
    its last write: the tool read the notebook again at its next edit, every time the save took
    less than that window (every notebook of a few MB, and a 21 MB one since its save starts
    writing early). The time is set back to just before that window, and after the modification
    time of the file it replaces (a collaboration room sees a file newer than the one it saved
    as changed), so any later write, in place, stamps a later time. When that is not possible
    (the file it replaces is as recent) or the file system keeps whole seconds only, the time is
    left as written, and the status is not kept.
    """
    if os.utime not in os.supports_fd:
        return  # the status is then not kept: the next edit reads the file
    settled = time.time_ns() - RACY_NS - 1_000
    if replaced is not None:
        if replaced.st_mtime_ns % 1_000_000_000 == 0:
            return  # a file system of second timestamps: ``racy`` holds such a file anyway
        if settled <= replaced.st_mtime_ns:
            return
    with contextlib.suppress(OSError):
        os.utime(fd, ns=(settled, settled))


@contextlib.contextmanager
def replacing_file(
    path: str,
    text: bool = True,
    encoding: str = "utf-8",
    *,
    temporaries: TemporaryFiles | None = None,
    **kwargs: Any,
) -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file renamed over it: all of the new file or none.

    The file keeps its permission bits (and owner, when allowed); a symlink is written through
    to its target, as jupyter_server's ``atomic_writing`` does. ``temporaries`` notes the
    folder first, so a file a crash leaves there is removed by a later server. The old file a
    large save replaces is let go on another thread (``_ClosingLater``): the rename does not
    wait for its blocks to be freed.
    """
    kwargs.pop("log", None)
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    if temporaries is not None:
        temporaries.note(folder)
    fd, temporary = tempfile.mkstemp(prefix=TemporaryFiles.prefix(), suffix=".tmp", dir=folder)
    current: os.stat_result | None = None
    try:
        try:
            current = os.stat(target)
        except FileNotFoundError:
            os.fchmod(fd, _NEW_FILE_MODE)
        else:
            os.fchmod(fd, stat.S_IMODE(current.st_mode))
            with contextlib.suppress(OSError):  # only root may give a file to another owner
                os.fchown(fd, current.st_uid, current.st_gid)
        mode = "w" if text else "wb"
        if text:
            kwargs.setdefault("newline", "\n")  # Unix newlines, as jupyter_server writes
            stream: IO[Any] = open(fd, mode, encoding=encoding, **kwargs)  # noqa: SIM115
        else:
            stream = open(fd, mode, **kwargs)  # noqa: SIM115
        with stream:
            yield stream
            stream.flush()
            written = WRITTEN.get()
            if written is not None:
                _settle_modification_time(stream.fileno(), current)
            os.fsync(stream.fileno())
            if written is not None:  # the status of the file as it will be once renamed
                noted = time.time_ns()
                written.append((os.fstat(stream.fileno()), noted))
        old = None if current is None else _hold_replaced(target, current)
        try:
            os.replace(temporary, target)
        finally:
            if old is not None:
                _LATER.close(old)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

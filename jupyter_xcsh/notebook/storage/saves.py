"""How the tool saves a notebook: one writer at a time per file, atomically, trust kept.

Why: jupyter_server's file contents managers write a file *in place* (after copying a backup),
and the async one writes in a worker thread. Two saves of one file — a JupyterLab PUT and a
notebook tool change — can then interleave and leave a whole document followed by a stale tail,
which neither the lab nor the tool can read again. jupyter_server has no lock to share, so
:class:`SaveGuard` puts one per file around the contents manager's ``save`` (the instance's, so
every caller — the contents API, jupyter-collaboration's rooms, other extensions — goes through
it) and the tool holds the same lock while it loads and saves.

The tool's own saves are also made atomic: on a file-backed contents manager (one with
``atomic_writing``, jupyter_server's ``FileManagerMixin``) the new text goes to a hidden
temporary file in the same folder, is flushed to disk and renamed over the notebook, so a reader
sees the old or the new notebook, never a part. The save still goes through ``save`` — pre/post
save hooks, contents events and checkpoints behave as for any save — and a manager that keeps no
files (no ``atomic_writing``) is used unchanged. ``use_atomic_writing = False`` (for file systems
where renames misbehave) is honoured: the tool then writes in place as the server does.

On jupyter_server's async file managers the tool's save is written on a worker thread, all of
it — encoding the text, writing, syncing to disk and renaming (``_saving_in_thread``) — where
the server's own ``_save_file`` does all but the write on the event loop: a 21 MB notebook's
save then no longer keeps the server from answering other requests for tens of milliseconds.
The file's lock is held until the thread is done, even when the caller is cancelled.

A server killed in the middle of such a save leaves its temporary file behind. The file's name
carries the writer's process id (``.~xcsh-<pid>-<random>.tmp``) and every folder the tool has
written one in is noted in a journal in the server's runtime folder, so a server starting later
removes the leftovers (:class:`TemporaryFiles`): only files of that name, older than itself,
whose writer no longer runs.

Replacing methods on the manager's instance is the ``save_guard`` fast path
(``jupyter_xcsh.fast_paths``, also ``XcshSettings.guard_saves``): ``probe_save_guard`` checks
at startup that the instance takes them. Without it the tool's own saves still wait for each
other per file, and go through the manager's ``save`` as it is (its own atomic writing).

A trusted notebook stays trusted when the tool saves it (``jupyter trust`` semantics,
:class:`NotebookTrust`). A notebook is trusted when the contents manager's notary knows the
signature of its content. Every edit changes that signature, and the tool saves notebook text as
a file (to keep every untouched byte), which skips the signing a notebook save does. So the tool
checks the signature before the change and, when the notebook was trusted, signs the changed
notebook — what ``jupyter trust`` would do — and never signs a notebook that was not trusted.
The signature is the notary's (``NotebookNotary.compute_signature``: an HMAC over every key and
value, keys sorted) of the notebook as nbformat reads it — transient fields stripped — computed
on the already parsed notebook: the HMAC digests the same bytes whether a source is a list of
lines or their joined text, so reading the file again with nbformat is not needed, and feeding
the digest a few joined strings instead of one piece at a time halves the cost on large
notebooks; the digest of one segment runs on another thread while the next one is walked.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import inspect
import logging
import os
import queue
import re
import sqlite3
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from hmac import HMAC
from typing import IO, Any, TypeVar

from jupyter_core.utils import ensure_async
from nbformat import NotebookNode
from nbformat.sign import NotebookNotary
from tornado.web import HTTPError

from jupyter_xcsh.memory import hand_over, libc_function
from jupyter_xcsh.notebook.storage.cache import RACY_NS

T = TypeVar("T")

#: The file keys whose lock the current task holds (so a save inside them does not wait on itself).
_HELD: ContextVar[frozenset[str]] = ContextVar("xcsh_held_save_locks", default=frozenset())
#: The real path the current task is saving atomically, if any.
_REPLACING: ContextVar[str | None] = ContextVar("xcsh_replacing_path", default=None)
#: The text of the save ``save_noting`` makes, as pieces to write one after another (the
#: model's content is then empty: see ``SaveGuard.writes_pieces``).
_PIECES: ContextVar[list[str] | None] = ContextVar("xcsh_save_pieces", default=None)
#: Where the current task's atomic save notes the status of the file it wrote (and when).
_WRITTEN: ContextVar[list[tuple[os.stat_result, int]] | None] = ContextVar(
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
            written = _WRITTEN.get()
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


class SaveGuard:
    """Serialise the saves of each file through one contents manager; make the tool's atomic."""

    def __init__(
        self,
        contents_manager: Any,
        temporaries: TemporaryFiles | None = None,
        *,
        install: bool = True,
    ) -> None:
        """Guard ``contents_manager``'s saves; ``install`` False: only the tool's own saves.

        ``temporaries`` notes where the tool's atomic saves make their temporary files.
        """
        self.contents_manager = contents_manager
        self.temporaries = temporaries
        #: Called with a file's key before any save, delete or rename of it through the
        #: contents manager (only when ``installed``): the tool's kept copies forget it.
        self.on_change: list[Callable[[str], None]] = []
        #: Whether the contents manager's methods are wrapped (else ``on_change`` is never called).
        self.installed = install
        # One lock per file, dropped once nobody holds or awaits it.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        #: The contents manager's ``_save_file`` as this guard wrapped it (None: not wrapped).
        self._save_file: Any = None
        if install:
            self._install()

    # -- keys and locks ------------------------------------------------------------------------

    def os_path(self, api_path: str) -> str | None:
        """The real file of an API path on a file-backed manager; None otherwise or if invalid."""
        get_os_path = getattr(self.contents_manager, "_get_os_path", None)
        if get_os_path is None:
            return None
        try:
            return os.path.realpath(get_os_path(api_path.strip("/")))
        except Exception:  # a path the manager refuses: its save will say why
            return None

    def key(self, api_path: str) -> str:
        """The lock key of a path: its real file (two names of one file share it), else the path."""
        return self.os_path(api_path) or api_path.strip("/")

    @contextlib.asynccontextmanager
    async def holding(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of file ``key``: no save of that file runs meanwhile (re-entrant)."""
        held = _HELD.get()
        if key in held:
            yield
            return
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            token = _HELD.set(held | {key})
            try:
                yield
            finally:
                _HELD.reset(token)

    async def save_replacing(self, model: dict[str, Any], api_path: str) -> dict[str, Any]:
        """Save through the contents manager under the file's lock, atomically where on disk."""
        return (await self.save_noting(model, api_path))[0]

    async def save_noting(
        self, model: dict[str, Any], api_path: str
    ) -> tuple[dict[str, Any], tuple[os.stat_result, int] | None]:
        """``save_replacing``, also returning the written file's status and when it was read.

        The status is that of the temporary file renamed into place (``os.fstat`` after it was
        flushed to disk, with ``time.time_ns`` from just before); None when the save did not
        go through ``replacing_file`` (no file, or atomic writing off).
        """
        return await self._save_noting(api_path, model=model)

    async def save_text_noting(
        self, pieces: list[str], api_path: str
    ) -> tuple[dict[str, Any], tuple[os.stat_result, int] | None]:
        """``save_noting`` of a text file whose text is ``pieces`` joined.

        Where this guard writes the tool's saves itself (``writes_pieces``), the pieces are
        encoded and written about a MiB at a time (``_write_text``): the text of a 21 MB
        notebook is never made whole (21 MB more memory, and 5-10 ms of the GIL to join it);
        else they are joined and saved as any text.
        """
        return await self._save_noting(api_path, pieces=pieces)

    def writes_pieces(self) -> bool:
        """Whether a save of the tool's can hand its text over in pieces (``save_text_noting``).

        Only when the tool's saves are written by this guard (jupyter_server's own async file
        manager, with the save guard installed) and no pre-save hook would be shown the model:
        a hook reads and may change the model's content, which is then empty.
        """
        cm = self.contents_manager
        return (
            self._save_file is not None
            and getattr(cm, "_save_file", None) is self._save_file
            and getattr(cm, "pre_save_hook", None) is None
            and not getattr(cm, "_pre_save_hooks", None)
        )

    async def _save_noting(
        self,
        api_path: str,
        *,
        model: dict[str, Any] | None = None,
        pieces: list[str] | None = None,
    ) -> tuple[dict[str, Any], tuple[os.stat_result, int] | None]:
        """Save ``model``, or a text file of ``pieces`` (see ``save_text_noting``)."""
        target = self.os_path(api_path)
        written: list[tuple[os.stat_result, int]] = []
        async with self.holding(target or api_path.strip("/")):
            if pieces is not None:
                if self.writes_pieces():  # no await from here to the write: no hook between
                    model = {"type": "file", "format": "text", "content": ""}
                else:
                    content = await asyncio.to_thread("".join, pieces)
                    model, pieces = {"type": "file", "format": "text", "content": content}, None
            assert model is not None  # one of the two is given
            token = _REPLACING.set(target)
            noting = _WRITTEN.set(written)
            handing = _PIECES.set(pieces)
            try:
                saved = await ensure_async(self.contents_manager.save(model, api_path))
            finally:
                _PIECES.reset(handing)
                _WRITTEN.reset(noting)
                _REPLACING.reset(token)
        return dict(saved), (written[-1] if len(written) == 1 else None)

    def _changing(self, *paths: str) -> None:
        for path in paths:
            key = self.key(path)
            for listener in self.on_change:
                listener(key)

    # -- hooking the contents manager ----------------------------------------------------------

    def _install(self) -> None:
        cm = self.contents_manager
        save = cm.save
        # A synchronous manager blocks the event loop for the whole save, so its saves cannot
        # interleave with the tool's; only an async save can be suspended half-way.
        if inspect.iscoroutinefunction(save):

            async def guarded_save(model: Any, path: str = "", *args: Any, **kwargs: Any) -> Any:
                async with self.holding(self.key(path)):
                    self._changing(path)
                    return await save(model, path, *args, **kwargs)

            cm.save = guarded_save
        else:

            def noted_save(model: Any, path: str = "", *args: Any, **kwargs: Any) -> Any:
                self._changing(path)
                return save(model, path, *args, **kwargs)

            cm.save = noted_save
        for name in ("delete_file", "rename_file"):
            method = getattr(cm, name, None)
            if callable(method):
                setattr(cm, name, self._noting(method))
        writing = getattr(cm, "atomic_writing", None)
        if writing is not None:
            cm.atomic_writing = self._writing(writing)
            if _servers_own_save_file(cm):
                self._save_file = self._saving_in_thread(cm._save_file)
                cm._save_file = self._save_file

    def _noting(self, method: Any) -> Any:
        """``method`` (delete_file or rename_file), telling ``on_change`` of its paths first."""
        if inspect.iscoroutinefunction(method):

            async def noted_async(*paths: Any, **kwargs: Any) -> Any:
                self._changing(*(p for p in paths if isinstance(p, str)))
                return await method(*paths, **kwargs)

            return noted_async

        def noted(*paths: Any, **kwargs: Any) -> Any:
            self._changing(*(p for p in paths if isinstance(p, str)))
            return method(*paths, **kwargs)

        return noted

    def _saving_in_thread(self, server_save_file: Any) -> Any:
        """``_save_file`` writing the tool's own saves on a worker thread, whole.

        jupyter_server's async ``_save_file`` encodes the text and opens, flushes, syncs and
        renames the file on the event loop (only the write is on a thread): 20-70 ms of a
        21 MB notebook during which no other request is answered. The tool's saves (text, to
        the file ``save_noting`` names) run all of it on a worker thread instead, through the
        same ``atomic_writing``; every other save is the server's own. The file's save lock is
        held throughout (the caller's), and a cancelled caller still waits for the write to
        end: one writer per file at a time.
        """
        cm = self.contents_manager

        async def save_file(os_path: str, content: Any, format: Any, *args: Any, **kw: Any) -> Any:
            target, pieces = _REPLACING.get(), _PIECES.get()
            ours = target is not None and os.path.realpath(os_path) == target
            if pieces is not None:
                if not ours or format != "text" or content != "" or args or kw:
                    # Never write the empty placeholder in place of the text.
                    raise HTTPError(500, f"Unexpected save of {os_path} while writing pieces")
            elif not ours or format != "text" or not isinstance(content, str) or args or kw:
                return await server_save_file(os_path, content, format, *args, **kw)
            else:
                pieces = [content]
            await to_the_end_in_thread(functools.partial(_write_text, cm, os_path, pieces))
            return None

        return save_file

    def _writing(self, server_writing: Any) -> Any:
        cm = self.contents_manager

        @contextlib.contextmanager
        def atomic_writing(os_path: str, *args: Any, **kwargs: Any) -> Iterator[IO[Any]]:
            target = _REPLACING.get()
            ours = target is not None and os.path.realpath(os_path) == target
            if not ours or not getattr(cm, "use_atomic_writing", True):
                with server_writing(os_path, *args, **kwargs) as stream:
                    yield stream
                return
            permission_errors = getattr(cm, "perm_to_403", None)
            guard = permission_errors(os_path) if permission_errors else contextlib.nullcontext()
            with (
                guard,
                replacing_file(os_path, *args, temporaries=self.temporaries, **kwargs) as stream,
            ):
                yield stream

        return atomic_writing


def _servers_own_save_file(contents_manager: Any) -> bool:
    """Whether the manager's ``_save_file`` is jupyter_server's async one (not overridden)."""
    try:
        from jupyter_server.services.contents.fileio import AsyncFileManagerMixin
    except ImportError:  # pragma: no cover - jupyter_server is a dependency
        return False
    own = getattr(type(contents_manager), "_save_file", None)
    return own is AsyncFileManagerMixin._save_file and "_save_file" not in vars(contents_manager)


#: Text is encoded and written this many characters at a time (``_write_text``).
WRITE_CHUNK_CHARS = 1 << 20


def _write_text(contents_manager: Any, os_path: str, pieces: list[str]) -> None:
    """jupyter_server's ``_save_file`` of text (same errors), on the calling thread.

    The text is ``pieces`` joined; it is encoded and written about ``WRITE_CHUNK_CHARS`` at a
    time: encoding holds the GIL, and the whole text of a 21 MB notebook at once held it for
    10-20 ms, the event loop's thread waiting all along; its bytes were a second copy of the
    notebook for the save's length. The pieces of a chunk (a notebook's cells and what is
    between them: thousands) are joined as text and encoded once, at C speed, rather than one
    by one (a third of the time for 21 MB here). Each chunk starts on its way to disk as soon
    as it is written (``start_writeback``). A piece that cannot be encoded (a lone surrogate)
    fails the write before the file is replaced: nothing of it is left.
    """
    with contents_manager.atomic_writing(os_path, text=False) as stream:
        chunk: list[str] = []
        size = 0  # characters in ``chunk``
        written = 0  # bytes written before it

        def write_chunk() -> None:
            nonlocal size, written
            try:
                data = "".join(chunk).encode("utf8")
            except UnicodeError as e:
                raise HTTPError(400, f"Encoding error saving {os_path}: {e}") from e
            chunk.clear()
            size = 0
            stream.write(data)
            hand_over()
            start_writeback(stream, written, len(data))
            written += len(data)

        for piece in pieces:
            if len(piece) > WRITE_CHUNK_CHARS:  # a huge cell: a slice at a time
                for start in range(0, len(piece), WRITE_CHUNK_CHARS):
                    part = piece[start : start + WRITE_CHUNK_CHARS]
                    chunk.append(part)
                    size += len(part)
                    if size >= WRITE_CHUNK_CHARS:
                        write_chunk()
                continue
            chunk.append(piece)
            size += len(piece)
            if size >= WRITE_CHUNK_CHARS:
                write_chunk()
        if chunk:
            write_chunk()


async def to_the_end_in_thread(function: Callable[[], T]) -> T:
    """``function()`` on a worker thread; a caller cancelled meanwhile still waits for its end.

    So the locks the caller holds (a file's save lock) are never let go while it still writes;
    the cancellation is raised once it has ended.
    """
    future = asyncio.ensure_future(asyncio.to_thread(function))
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
        except Exception:
            break  # the function's own error: raised by result() below
    if cancelled:
        raise asyncio.CancelledError
    return future.result()


def probe_save_guard(contents_manager: Any) -> str | None:
    """Whether methods set on ``contents_manager``'s instance replace its own; None when so."""
    for name in ("save", "atomic_writing"):
        method = getattr(contents_manager, name, None)
        if method is None and name == "atomic_writing":
            continue  # a manager that keeps no files: only its save is wrapped
        if not callable(method):
            return f"the contents manager's {name} is not callable"
        marker = functools.partial(method)
        try:
            setattr(contents_manager, name, marker)
            taken = getattr(contents_manager, name) is marker
        finally:
            vars(contents_manager).pop(name, None)
        if not taken:
            return f"the contents manager's instance does not take a {name} of its own"
    return None


#: Strings of the notebook walked before their bytes go to the digest thread (~2-4 MB).
SEGMENT_PIECES = 16384

#: One thread runs every HMAC update, in submission order (so each digest's parts in order).
_DIGESTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xcsh-signature")

#: Notebook metadata nbformat drops when it reads a notebook (``strip_transient``).
_TRANSIENT = ("orig_nbformat", "orig_nbformat_minor", "signature")


def _as_read(data: dict[str, Any]) -> NotebookNode | None:
    """The notebook as ``nbformat.reads`` sees it, sharing all but the changed containers."""
    metadata = data.get("metadata")
    cells = data.get("cells")
    if not isinstance(metadata, dict) or not isinstance(cells, list):
        return None
    if not isinstance(data.get("nbformat"), int):
        return None
    stripped_cells = []
    for cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        if isinstance(meta, dict) and "trusted" in meta:
            cell = {**cell, "metadata": {k: v for k, v in meta.items() if k != "trusted"}}
        stripped_cells.append(cell)
    return NotebookNode(  # type: ignore[no-untyped-call]
        {
            **data,
            "metadata": {k: v for k, v in metadata.items() if k not in _TRANSIENT},
            "cells": stripped_cells,
        }
    )


def _pieces(value: Any, into: list[str]) -> None:
    """Collect what ``nbformat.sign.yield_everything`` yields, as strings, in the same order."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key in sorted(value):
            into.append(key)
            _pieces(value[key], into)
    elif isinstance(value, list):
        if len(value) > LONG_LIST and set(map(type, value)) == {str}:
            into.extend(value)  # output lines: at C speed, not an iteration each
            return
        for item in value:
            if isinstance(item, str):
                into.append(item)
            else:
                _pieces(item, into)
    else:
        into.append(str(value))


#: A list longer than this is checked for holding only strings at once (``_pieces``).
LONG_LIST = 256
#: Most characters of the notebook encoded at once for its signature (``_encoded``).
FEED_CHARS = 4 << 20


def _encoded(pieces: list[str]) -> Iterator[bytes]:
    """``pieces`` joined and encoded, at most about ``FEED_CHARS`` characters at a time.

    Joining and encoding hold the GIL: a segment holding a cell with 50 MB of outputs (one
    long string, or half a million lines walked in one go) held it, and with it the event
    loop, for ~100 ms at once; even the sum of half a million lengths is 20-30 ms of one C
    call. So the pieces are taken ``SEGMENT_PIECES`` at a time, joined at C speed (a longer
    piece is cut), and what is joined is encoded once ``FEED_CHARS`` are reached. The digest of
    the bytes in order is the same.
    """
    run: list[str] = []
    size = 0
    for start in range(0, len(pieces), SEGMENT_PIECES):
        chunk = pieces[start : start + SEGMENT_PIECES]
        chars = sum(map(len, chunk))
        if chars <= FEED_CHARS:  # pieces of ordinary lengths: at once
            run.append("".join(chunk))
            size += chars
        else:
            for piece in chunk:
                for cut in range(0, len(piece), FEED_CHARS):
                    part = piece[cut : cut + FEED_CHARS] if len(piece) > FEED_CHARS else piece
                    run.append(part)
                    size += len(part)
                    if size >= FEED_CHARS:
                        yield "".join(run).encode("utf8")
                        run, size = [], 0
                        hand_over()
        if size >= FEED_CHARS:
            yield "".join(run).encode("utf8")
            run, size = [], 0
            hand_over()
    if run:
        yield "".join(run).encode("utf8")


def _hmac(notary: Any, notebook: NotebookNode) -> str:
    """``NotebookNotary.compute_signature``, fed with a few long strings.

    The cells are walked a segment at a time; each segment's bytes go to ``_DIGESTER``, whose
    thread runs the HMAC (which releases the GIL) while this thread walks the next segment.
    """
    digest = HMAC(notary.secret, digestmod=notary.digestmod)
    top = {k: v for k, v in notebook.items() if k != "metadata"}
    top["metadata"] = {k: v for k, v in notebook["metadata"].items() if k != "signature"}
    pieces: list[str] = []
    fed: list[Future[None]] = []

    def feed() -> None:
        for data in _encoded(pieces):
            fed.append(_DIGESTER.submit(digest.update, data))
        pieces.clear()

    try:
        for key in sorted(top):
            pieces.append(key)
            value = top[key]
            if not isinstance(value, list):
                _pieces(value, pieces)
                continue
            for item in value:  # the cells, cut into segments between two cells
                if isinstance(item, str):
                    pieces.append(item)
                else:
                    _pieces(item, pieces)
                if len(pieces) >= SEGMENT_PIECES:
                    feed()
        feed()
    finally:
        for done in fed:  # one worker runs them in order: all of them before the digest is read
            done.result()
    return digest.hexdigest()


class NotebookTrust:
    """Check and renew notebook signatures with a contents manager's notary.

    ``signature`` is CPU work (run it off the event loop); ``is_trusted`` and ``sign`` touch
    the notary's database, which belongs to the event loop's thread.
    """

    def __init__(self, contents_manager: Any) -> None:
        self.notary = getattr(contents_manager, "notary", None)

    def signature(self, data: dict[str, Any]) -> str | None:
        """The notary's signature of a parsed notebook; None when there is no notary or notebook."""
        if self.notary is None:
            return None
        notebook = _as_read(data)
        if notebook is None or notebook.nbformat < 3:
            return None
        try:
            if type(self.notary).compute_signature is NotebookNotary.compute_signature:
                return _hmac(self.notary, notebook)
            return str(self.notary.compute_signature(notebook))  # a notary of its own kind
        except Exception:  # not JSON-like data: such a notebook cannot have been signed
            return None

    def state(self) -> Any:
        """A token that differs whenever the notary's store may have changed; None if unknown.

        For nbformat's SQLite store: the changes made through its connection and SQLite's
        ``data_version`` (which changes when another connection — another process's ``jupyter
        trust`` — commits). A notebook found not trusted stays so while the token is equal and
        the notebook unchanged, so its signature need not be computed again (``store.py``).
        """
        store = getattr(self.notary, "store", None)
        db = getattr(store, "db", None)
        if not isinstance(db, sqlite3.Connection):
            return None
        try:
            (version,) = db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None
        return (id(store), id(db), db.total_changes, version)

    def is_trusted(self, signature: str | None) -> bool:
        """Whether the notary has signed a notebook with this signature."""
        if self.notary is None or signature is None:
            return False
        return bool(self.notary.store.check_signature(signature, self.notary.algorithm))

    def sign(self, signature: str | None) -> None:
        """Record a signature as trusted, as ``jupyter trust`` does."""
        if self.notary is not None and signature is not None:
            self.notary.store.store_signature(signature, self.notary.algorithm)

"""How the tool saves a notebook: one writer at a time per file, atomically.

Why: jupyter_server's file contents managers write a file *in place* (after copying a backup),
and the async one writes in a worker thread. Two saves of one file — a JupyterLab PUT and a
notebook tool change — can then interleave and leave a whole document followed by a stale tail,
which neither the lab nor the tool can read again. jupyter_server has no lock to share, so
:class:`SaveGuard` puts one per file around the contents manager's ``save`` (the instance's, so
every caller — the contents API, jupyter-collaboration's rooms, other extensions — goes through
it) and the tool holds the same lock while it loads and saves.

The tool's own saves are also made atomic: on a file-backed contents manager (one with
``atomic_writing``, jupyter_server's ``FileManagerMixin``) the new text goes to a hidden
temporary file in the same folder, is flushed to disk and renamed over the notebook
(``atomic.py``), so a reader sees the old or the new notebook, never a part. The save still goes
through ``save`` — pre/post save hooks, contents events and checkpoints behave as for any save —
and a manager that keeps no files (no ``atomic_writing``) is used unchanged.
``use_atomic_writing = False`` (for file systems where renames misbehave) is honoured: the tool
then writes in place as the server does.

On jupyter_server's async file managers the tool's save is written on a worker thread, all of
it — encoding the text, writing, syncing to disk and renaming (``_saving_in_thread``) — where
the server's own ``_save_file`` does all but the write on the event loop: a 21 MB notebook's
save then no longer keeps the server from answering other requests for tens of milliseconds.
The file's lock is held until the thread is done, even when the caller is cancelled.

Replacing methods on the manager's instance is the ``save_guard`` fast path
(``jupyter_xcsh.fast_paths``, also ``XcshSettings.guard_saves``): ``probe_save_guard`` checks
at startup that the instance takes them. Without it the tool's own saves still wait for each
other per file, and go through the manager's ``save`` as it is (its own atomic writing).

A trusted notebook stays trusted when the tool saves it: the store signs it (``trust.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import IO, Any, TypeVar

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from jupyter_xcsh.memory import hand_over
from jupyter_xcsh.notebook.storage.atomic import (
    WRITTEN,
    TemporaryFiles,
    replacing_file,
    start_writeback,
)

T = TypeVar("T")

#: The file keys whose lock the current task holds (so a save inside them does not wait on itself).
_HELD: ContextVar[frozenset[str]] = ContextVar("xcsh_held_save_locks", default=frozenset())
#: The real path the current task is saving atomically, if any.
_REPLACING: ContextVar[str | None] = ContextVar("xcsh_replacing_path", default=None)
#: The text of the save ``save_noting`` makes, as pieces to write one after another (the
#: model's content is then empty: see ``SaveGuard.writes_pieces``).
_PIECES: ContextVar[list[str] | None] = ContextVar("xcsh_save_pieces", default=None)


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
            noting = WRITTEN.set(written)
            handing = _PIECES.set(pieces)
            try:
                saved = await ensure_async(self.contents_manager.save(model, api_path))
            finally:
                _PIECES.reset(handing)
                WRITTEN.reset(noting)
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

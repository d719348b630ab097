"""The artifact store: full execution output kept as files inside the server's contents root.

An artifact is ``<folder>/<id>.<tool>.<extension>`` under the contents root — ``.log`` for output
text, ``.png``/``.jpg``/``.gif``/``.webp``/``.svg`` for images — so a person can open it from the
JupyterLab file browser; callers refer to it as ``artifact://<id>``. Ids are
``<UTC yyyymmddThhmmss>-<12 hex>``: sortable by creation time, random enough to be unique across
sessions and server restarts, and created with ``O_EXCL`` so an existing file is never
overwritten. The store knows neither kernels nor HTTP.

Where the contents root is not a local directory (a contents manager keeping files in S3, a
database, ...), ``ContentsArtifactStore`` keeps the same files through the server's contents
manager instead: same names, ids, API and retention; each artifact staged in a temporary file
while it is written, then saved whole, at most ``upload_max_bytes`` of it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import inspect
import io
import logging
import math
import os
import queue
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Awaitable, Generator, Iterable
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, BinaryIO

from tornado.web import HTTPError

from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.notebook.storage.atomic import TemporaryFiles
from jupyter_xcsh.outputs.sizes import format_size

log = logging.getLogger(__name__)

__all__ = [
    "ARTIFACT_ID_PATTERN",
    "DEFAULT_FOLDER",
    "LEGACY_FOLDER",
    "MEDIA_TYPES",
    "ArtifactInfo",
    "ArtifactStore",
    "ArtifactWriter",
    "ContentsArtifactStore",
    "artifact_media_type",
    "is_text_artifact",
    "iter_byte_range",
    "iter_line_range",
]

#: The artifacts folder by default: hidden, so out of the person's file browser.
DEFAULT_FOLDER = ".xcsh-artifacts"

#: The default folder before issue 41, visible at the root; its artifacts are moved (``adopt``).
LEGACY_FOLDER = "xcsh-artifacts"

#: What an artifact id looks like; anything else is refused before the file system is touched.
ARTIFACT_ID_PATTERN = re.compile(r"\A[0-9]{8}T[0-9]{6}-[0-9a-f]{12}\Z")

_TOOL_PATTERN = re.compile(r"\A[a-z][a-z0-9_-]{0,31}\Z")

#: The media type of each artifact file extension (the extension says what the file holds).
MEDIA_TYPES = {
    "log": "text/plain; charset=utf-8",
    "png": "image/png",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "svg": "image/svg+xml",
}
_FILE_PATTERN = re.compile(
    r"\A([0-9]{8}T[0-9]{6}-[0-9a-f]{12})\.([a-z][a-z0-9_-]{0,31})"
    rf"\.({'|'.join(MEDIA_TYPES)})\Z"
)

_O_BINARY: int = getattr(os, "O_BINARY", 0)

#: Bytes read from disk at a time when an artifact is served.
READ_BLOCK = 64 * 1024


#: Bytes an artifact file gathers before it writes them out: output comes in chunks of tens of
#: kilobytes, and one system call per 256 KiB costs less than one per chunk (sink ~+8%).
WRITE_BUFFER = 256 * 1024


def folder_parts(folder: str) -> list[str]:
    """The parts of an artifacts folder; ``ValueError`` unless relative and inside the root."""
    parts = [p for p in folder.replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts or os.path.isabs(folder) or ".." in parts:
        raise ValueError(f"Artifacts folder must be a relative path inside the root: {folder!r}")
    return parts


def new_artifact_id() -> str:
    """Return a fresh artifact id: the UTC second it was made and 48 random bits."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(6)}"


def validate_artifact_id(artifact_id: str) -> str:
    """Return ``artifact_id`` if it has the store's own form, else raise ``InvalidRequestError``."""
    if not ARTIFACT_ID_PATTERN.match(artifact_id):
        raise InvalidRequestError(f"Invalid artifact id: {artifact_id!r}")
    return artifact_id


@dataclass(frozen=True)
class ArtifactInfo:
    """One artifact file as found on disk."""

    id: str
    tool: str
    os_path: str
    size: int
    mtime: float
    extension: str = "log"

    @property
    def media_type(self) -> str:
        """What the file holds, as a ``Content-Type``."""
        return MEDIA_TYPES[self.extension]

    @property
    def name(self) -> str:
        """The file's name, ``<id>.<tool>.<extension>``."""
        return f"{self.id}.{self.tool}.{self.extension}"


def artifact_media_type(os_path: str) -> str:
    """What an artifact file holds, as a ``Content-Type``, from its extension."""
    return MEDIA_TYPES.get(os_path.rsplit(".", 1)[-1], "application/octet-stream")


def is_text_artifact(os_path: str) -> bool:
    """Whether an artifact file holds output text (rather than an image)."""
    return os_path.endswith(".log")


class ArtifactWriter:
    """An artifact being written: append bytes, then close (also as a context manager)."""

    def __init__(
        self,
        store: ArtifactStore,
        artifact_id: str,
        tool: str,
        file: BinaryIO,
        extension: str = "log",
    ) -> None:
        self.id = artifact_id
        self.tool = tool
        self.extension = extension
        self.api_path = f"{store.folder}/{artifact_id}.{tool}.{extension}"
        self.os_path = os.path.join(store.os_folder, f"{artifact_id}.{tool}.{extension}")
        self._store = store
        self._file = file

    @property
    def closed(self) -> bool:
        """Whether the writer no longer accepts data."""
        return self._file.closed

    def write(self, data: bytes) -> None:
        """Append ``data`` to the artifact (buffered: on disk by ``flush`` or ``close``)."""
        self._file.write(data)

    def flush(self) -> None:
        """Put every byte appended so far into the file."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file; the artifact becomes eligible for pruning. Idempotent."""
        try:
            self._file.close()
        finally:
            self._store._release(self.id)

    def abort(self) -> None:
        """Close and delete the artifact, for output that could not be written whole."""
        try:
            self._file.close()
        except OSError:
            pass
        finally:
            self._store._release(self.id)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.os_path)

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ArtifactStore:
    """Create, find, read and prune artifact files in one folder of the contents root.

    Parameters
    ----------
    root_dir
        The server's contents root (``ServerApp.root_dir``).
    folder
        The artifacts folder, relative to ``root_dir`` (``/``-separated, no ``..``).
    max_bytes
        Total size the folder may reach before the oldest artifacts are pruned; 0 = no limit.
    max_age
        Seconds after its last write when an artifact is pruned; 0 = kept forever.
    prune_interval
        Least seconds between two retention passes run when an artifact is finished (so a
        burst of large outputs cannot push the folder far past ``max_bytes`` between the
        server's periodic passes); 0 = a pass after every artifact; the default (infinity)
        leaves retention to explicit ``prune()`` calls.

    """

    def __init__(
        self,
        root_dir: str,
        folder: str = DEFAULT_FOLDER,
        max_bytes: int = 512 * 1024 * 1024,
        max_age: float = 7 * 24 * 3600,
        prune_interval: float = math.inf,
    ) -> None:
        parts = folder_parts(folder)
        self.root_dir = os.path.abspath(root_dir)
        self.folder = "/".join(parts)
        self.os_folder = os.path.join(self.root_dir, *parts)
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.prune_interval = prune_interval
        self._last_prune = -math.inf
        self._writing: set[str] = set()
        self._lock = threading.Lock()

    @property
    def directory(self) -> str:
        """Absolute os path of the artifacts folder, created if it does not exist yet."""
        os.makedirs(self.os_folder, exist_ok=True)
        return self.os_folder

    def create(self, tool: str, extension: str = "log") -> ArtifactWriter:
        """Create a new, empty artifact for ``tool`` (e.g. ``"python"``) and return its writer.

        ``extension`` says what it will hold: ``log`` (output text) or an image type of
        ``MEDIA_TYPES``.
        """
        if not _TOOL_PATTERN.match(tool):
            raise ValueError(f"Invalid tool name for an artifact: {tool!r}")
        if extension not in MEDIA_TYPES:
            raise ValueError(f"Invalid artifact extension: {extension!r}")
        directory = self.directory
        while True:
            artifact_id = new_artifact_id()
            path = os.path.join(directory, f"{artifact_id}.{tool}.{extension}")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
            except FileExistsError:
                continue
            break
        with self._lock:
            self._writing.add(artifact_id)
        file = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        return ArtifactWriter(self, artifact_id, tool, file, extension)

    #: Most bytes ``save`` writes (None: no bound); past it nothing is kept.
    save_max_bytes: int | None = None

    def save(self, tool: str, extension: str, data: bytes | Iterable[bytes]) -> ArtifactWriter:
        """Write ``data`` whole as a new artifact and return its (closed) writer.

        ``data`` may come in chunks (a large text encoded a piece at a time, off the event
        loop's way). Raises ``OSError`` when it cannot be written whole, past
        ``save_max_bytes`` too; nothing partial is left behind.
        """
        limit, written = self.save_max_bytes, 0
        writer = self.create(tool, extension)
        try:
            for chunk in (data,) if isinstance(data, bytes) else data:
                written += len(chunk)
                if limit is not None and written > limit:
                    raise OSError(
                        errno.EFBIG,
                        f"At least {format_size(written)}, past the {format_size(limit)} an "
                        "artifact may have through the contents manager",
                    )
                writer.write(chunk)
            writer.close()
        except BaseException:
            writer.abort()
            raise
        return writer

    def _release(self, artifact_id: str) -> None:
        with self._lock:
            self._writing.discard(artifact_id)
        self._prune_if_due()

    def _prune_if_due(self) -> None:
        """A retention pass, if ``prune_interval`` has passed since the last one."""
        if math.isfinite(self.prune_interval) and (
            time.monotonic() - self._last_prune >= self.prune_interval
        ):
            try:
                self.prune()
            except OSError as e:  # retention must never fail the output it follows
                log.warning("Could not prune artifacts in %s: %s", self.folder, e)

    def close(self, timeout: float | None = None) -> bool:
        """Wait for writes still under way; whether none is left.

        Here every write is on disk when its writer closes: none ever is.
        """
        return True

    def is_writing(self, artifact_id: str) -> bool:
        """Whether the artifact is still being written (and so protected from pruning)."""
        with self._lock:
            return artifact_id in self._writing

    def adopt(self, folder: str) -> int:
        """Move the artifacts of ``folder`` (of the same root) into this store's folder.

        Only files named as artifacts move, never over one already here; ``folder`` goes when
        nothing else is left in it. Their ids, and so every ``artifact://`` link, keep working.
        Returns how many moved; a folder that is missing (or this store's own) moves nothing.
        """
        source = os.path.join(self.root_dir, *folder_parts(folder))
        if os.path.realpath(source) == os.path.realpath(self.os_folder):
            return 0
        # A link in place of the old folder is not this root's: nothing is taken through it
        # (it could be another server's folder, or anything outside the root).
        if os.path.islink(source):
            return 0
        try:
            names = os.listdir(source)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        moved = 0
        for name in names:
            path = os.path.join(source, name)
            if not _FILE_PATTERN.match(name) or os.path.islink(path) or not os.path.isfile(path):
                continue
            target = os.path.join(self.directory, name)
            if os.path.lexists(target):
                continue
            try:
                os.rename(path, target)
            except OSError as e:
                log.warning("Could not move the artifact %s into %s: %s", name, self.folder, e)
                continue
            moved += 1
        with contextlib.suppress(OSError):
            os.rmdir(source)  # only when empty: anything the person put there stays
        return moved

    def resolve(self, artifact_id: str) -> str:
        """Return the os path of an artifact.

        Raises ``InvalidRequestError`` for an id not of the store's form (before touching the
        file system) and ``NotFoundError`` for an unknown one.
        """
        validate_artifact_id(artifact_id)
        try:
            names = os.listdir(self.os_folder)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        prefix = artifact_id + "."
        for name in names:
            if name.startswith(prefix) and _FILE_PATTERN.match(name):
                path = os.path.join(self.os_folder, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    return path
        raise NotFoundError(f"Artifact not found: {artifact_id}")

    def entries(self) -> list[ArtifactInfo]:
        """Every artifact in the folder, oldest (by last write) first."""
        found: list[ArtifactInfo] = []
        try:
            entries = list(os.scandir(self.os_folder))
        except (FileNotFoundError, NotADirectoryError):
            return found
        for entry in entries:
            match = _FILE_PATTERN.match(entry.name)
            if not match or not entry.is_file(follow_symlinks=False):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            found.append(
                ArtifactInfo(match[1], match[2], entry.path, st.st_size, st.st_mtime, match[3])
            )
        found.sort(key=lambda a: (a.mtime, a.id))
        return found

    def prune(self, now: float | None = None) -> list[str]:
        """Remove artifacts past ``max_age``, then the oldest until under ``max_bytes``.

        An artifact being written is never removed. Returns the ids removed.
        """
        self._last_prune = time.monotonic()
        now = time.time() if now is None else now
        artifacts = self.entries()
        total = sum(a.size for a in artifacts)
        removed: list[str] = []
        for artifact in artifacts:
            too_old = self.max_age > 0 and now - artifact.mtime > self.max_age
            too_big = self.max_bytes > 0 and total > self.max_bytes
            if not (too_old or too_big) or self.is_writing(artifact.id):
                continue
            self._remove(artifact)
            total -= artifact.size
            removed.append(artifact.id)
        return removed

    def _remove(self, artifact: ArtifactInfo) -> None:
        """Delete one artifact's file (gone already is fine)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(artifact.os_path)

    def size(self, artifact_id: str) -> int:
        """Current size in bytes of an artifact."""
        try:
            return os.path.getsize(self.resolve(artifact_id))
        except FileNotFoundError:
            raise NotFoundError(f"Artifact not found: {artifact_id}") from None

    def open(self, artifact_id: str) -> BinaryIO:
        """Open an artifact for reading in binary mode (the caller closes it)."""
        try:
            return open(self.resolve(artifact_id), "rb")
        except FileNotFoundError:
            # Pruned between resolve and open.
            raise NotFoundError(f"Artifact not found: {artifact_id}") from None


#: Default of ``ContentsArtifactStore.upload_max_bytes``
#: (``XcshSettings.artifacts_upload_max_bytes``).
UPLOAD_MAX_BYTES = 16 * 1024 * 1024


class ContentsArtifactWriter(ArtifactWriter):
    """An artifact being written to its staged file, saved through the contents manager on close.

    At most ``limit`` bytes reach the staged file; past them output text (``log``) ends with a
    line saying where it was cut and how much there was, and anything else is not kept (its
    ``close`` raises ``OSError``).
    """

    def __init__(
        self,
        store: ContentsArtifactStore,
        artifact_id: str,
        tool: str,
        file: BinaryIO,
        extension: str,
        staged_path: str,
        limit: int,
    ) -> None:
        super().__init__(store, artifact_id, tool, file, extension)
        self.os_path = ""  # nothing of the artifact is a file of the contents root
        #: The temporary file holding the bytes until the upload, then removed.
        self.staged_path = staged_path
        self._contents_store = store
        self._limit = limit
        self._staged = 0
        self._total = 0
        self._full = False
        self._handed_over = False

    @property
    def cut(self) -> bool:
        """Whether more was written than the staged file keeps."""
        return self._total > self._staged

    def write(self, data: bytes) -> None:
        """Append ``data``, as far as ``limit`` allows (buffered: staged by ``flush``/``close``)."""
        self._total += len(data)
        if self._full:
            return
        room = self._limit - self._staged
        if len(data) > room:
            self._full = True  # nothing after the cut, not even a byte that would fit
            kept = memoryview(data)[:room]
            if self.extension == "log":
                kept = kept[: _character_boundary(kept)]
            data = bytes(kept)
        self._file.write(data)
        self._staged += len(data)

    def close(self) -> None:
        """Finish the staged file and hand it to the upload thread (idempotent)."""
        if self._handed_over or self._file.closed:
            return
        text = self.extension == "log"
        try:
            if self.cut and text:
                self._file.write(self._cut_notice().encode("utf-8"))
            self._file.close()
        except BaseException:
            self.abort()
            raise
        if self.cut and not text:  # an image cut short is no image
            self.abort()
            raise OSError(
                errno.EFBIG,
                f"Artifact {self.id} is {format_size(self._total)}, past the "
                f"{format_size(self._limit)} saved through the contents manager",
            )
        self._handed_over = True
        self._contents_store._upload_later(self)

    def _cut_notice(self) -> str:
        return (
            f"\n[Artifact cut at {format_size(self._staged)} of {format_size(self._total)}: "
            "artifacts are saved whole through the server's contents manager, at most "
            "XcshSettings.artifacts_upload_max_bytes each]\n"
        )

    def abort(self) -> None:
        """Close and remove the staged file; nothing is uploaded."""
        try:
            self._file.close()
        except OSError:
            pass
        finally:
            self._contents_store._forget(self.id, self.staged_path)


def _character_boundary(data: memoryview) -> int:
    """The length of ``data`` without a UTF-8 character its end cuts in two."""
    end = len(data)
    start = end
    # At most three continuation bytes follow a lead byte.
    while start > 0 and end - start < 4 and data[start - 1] & 0xC0 == 0x80:
        start -= 1
    if start == 0 or data[start - 1] < 0x80:
        return end  # ends on ASCII, or no lead byte in reach: nothing to drop
    lead = data[start - 1]
    width = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
    return end if end - (start - 1) >= width else start - 1


def contents_folder(contents_manager: Any, folder: str) -> str:
    """The artifacts folder ``contents_manager`` can keep: ``folder``, or ``LEGACY_FOLDER``.

    The hidden default becomes the earlier visible folder on a manager that refuses hidden
    paths. A manager refuses them when it says the folder is hidden and does not allow hidden files
    (jupyter_server's own rules, which some managers apply in their methods); one that cannot
    say (no ``is_hidden``, or an asynchronous one, unknown here) is taken to refuse. s3contents
    says no folder is hidden: the hidden default is kept, and the lab's file browser leaves it
    out of its listing as it does any name starting with a dot.
    """
    if folder != DEFAULT_FOLDER or getattr(contents_manager, "allow_hidden", False) is True:
        return folder
    try:
        hidden = contents_manager.is_hidden(folder)
    except Exception:
        hidden = True
    if inspect.isawaitable(hidden):
        if inspect.iscoroutine(hidden):
            hidden.close()
        hidden = True
    return LEGACY_FOLDER if hidden else folder


class ContentsArtifactStore(ArtifactStore):
    """Artifacts kept through the server's contents manager: a root that is not a local directory.

    The files, their names, ids and retention are ``ArtifactStore``'s, in ``folder`` of the
    contents root, but every read, save, listing and delete goes through ``contents_manager``
    (sync or async), so the artifacts live where the notebooks do (S3, a database, ...) and
    nothing is left in a local directory.

    Memory stays bounded while output streams: a writer appends to a temporary file in
    ``staging_dir`` (the system's temporary folder by default; named as the tool names its
    temporary files, and noted in ``temporaries`` so that a crashed server's are removed at the
    next start). A contents manager takes a file whole, so at most ``upload_max_bytes`` are
    staged (output text past it ends with a line saying where it was cut). Closing the writer
    hands the file to one upload thread of the store's own, which saves it through the contents
    manager (never over an existing file) and removes it; the event loop never waits for an
    upload. Until its upload is done an artifact is read from its staged file. An upload holds
    the artifact in memory several times over for its duration: here its bytes and the model's
    text, then the contents manager's own copies (s3contents: the server's peak grew by about
    five times the artifact's size); reading one back holds it twice, then serves it from an
    unnamed temporary file. An upload that fails is logged, and the artifact is then unknown.

    ``loop`` is the server's event loop: an asynchronous contents manager's methods run there,
    awaited from the store's threads. Call ``open``, ``size``, ``entries`` and ``prune`` off
    that loop (``asyncio.to_thread``); ``create``, ``save`` and the writers are safe on it.
    """

    def __init__(
        self,
        contents_manager: Any,
        folder: str = DEFAULT_FOLDER,
        max_bytes: int = 512 * 1024 * 1024,
        max_age: float = 7 * 24 * 3600,
        prune_interval: float = math.inf,
        *,
        upload_max_bytes: int = UPLOAD_MAX_BYTES,
        staging_dir: str | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        temporaries: TemporaryFiles | None = None,
    ) -> None:
        folder = contents_folder(contents_manager, folder)
        super().__init__("", folder, max_bytes, max_age, prune_interval)
        self.root_dir = self.os_folder = ""  # no local folder: every file is the manager's
        self.contents_manager = contents_manager
        self.upload_max_bytes = upload_max_bytes
        self.save_max_bytes = upload_max_bytes
        self.staging_dir = staging_dir or tempfile.gettempdir()
        self.loop = loop
        self.temporaries = temporaries
        #: Artifacts written or waiting for their upload: id -> (staged file, artifact name).
        self._staged: dict[str, tuple[str, str]] = {}
        self._uploads: queue.SimpleQueue[ContentsArtifactWriter | None] = queue.SimpleQueue()
        self._uploader: threading.Thread | None = None
        self._folder_ready = False

    @property
    def directory(self) -> str:
        """Empty: the artifacts folder is not a local directory."""
        return ""

    # -- writing ---------------------------------------------------------------------------------

    def create(self, tool: str, extension: str = "log") -> ArtifactWriter:
        """Create a new artifact, staged in a temporary file until its writer is closed."""
        if not _TOOL_PATTERN.match(tool):
            raise ValueError(f"Invalid tool name for an artifact: {tool!r}")
        if extension not in MEDIA_TYPES:
            raise ValueError(f"Invalid artifact extension: {extension!r}")
        if self.temporaries is not None:
            self.temporaries.note(self.staging_dir)
        fd, staged = tempfile.mkstemp(
            prefix=TemporaryFiles.prefix(), suffix=".tmp", dir=self.staging_dir
        )
        with self._lock:
            artifact_id = new_artifact_id()
            while artifact_id in self._staged:
                artifact_id = new_artifact_id()
            self._staged[artifact_id] = (staged, f"{artifact_id}.{tool}.{extension}")
            self._writing.add(artifact_id)
        file = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        return ContentsArtifactWriter(
            self, artifact_id, tool, file, extension, staged, self.upload_max_bytes
        )

    def _forget(self, artifact_id: str, staged: str) -> None:
        """Drop a staged artifact: its file removed, no longer protected from retention."""
        with self._lock:
            self._staged.pop(artifact_id, None)
            self._writing.discard(artifact_id)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)

    def _release(self, artifact_id: str) -> None:
        # Retention lists and deletes through the contents manager: only on the upload thread
        # (after each upload, _upload_loop) or the server's own passes, never on a writer's.
        with self._lock:
            self._writing.discard(artifact_id)

    def _upload_later(self, writer: ContentsArtifactWriter) -> None:
        with self._lock:
            if self._uploader is None or not self._uploader.is_alive():
                self._uploader = threading.Thread(
                    target=self._upload_loop, name="xcsh-artifact-uploads", daemon=True
                )
                self._uploader.start()
            self._uploads.put(writer)

    def _upload_loop(self) -> None:
        while True:
            writer = self._uploads.get()
            if writer is None:
                return
            try:
                self._upload(writer)
            except Exception as e:
                log.warning(
                    "Could not save artifact %s through the contents manager, it is lost: %s",
                    writer.id,
                    e,
                )
            finally:
                self._forget(writer.id, writer.staged_path)
            try:
                self._prune_if_due()
            except Exception:  # retention never stops the uploads
                log.warning("Could not prune artifacts in %s", self.folder, exc_info=True)

    def _upload(self, writer: ContentsArtifactWriter) -> None:
        """Save the staged file through the contents manager."""
        with open(writer.staged_path, "rb") as f:
            data = f.read()
        text = None
        if writer.extension == "log":
            # Output text as text: a third smaller than base64, and no second encoded copy.
            with contextlib.suppress(UnicodeDecodeError):
                text = data.decode("utf-8")
        model: dict[str, Any] = (
            {"type": "file", "format": "text", "content": text}
            if text is not None
            else {
                "type": "file",
                "format": "base64",
                "content": base64.b64encode(data).decode("ascii"),
            }
        )
        del data, text
        try:
            self._save_new(model, writer.api_path)
        except HTTPError:
            self._folder_ready = False  # the folder may have been removed meanwhile: once more
            self._save_new(model, writer.api_path)

    def _save_new(self, model: dict[str, Any], path: str) -> None:
        """Save ``model`` at ``path`` in the folder, made if missing; never over a file."""
        self._ensure_folder()
        if self._call("file_exists", path):
            raise OSError(errno.EEXIST, f"{path} exists already")
        self._call("save", model, path)

    def _ensure_folder(self) -> None:
        if self._folder_ready:
            return
        parts = self.folder.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            if not self._call("dir_exists", path):
                self._call("save", {"type": "directory"}, path)
        self._folder_ready = True

    def close(self, timeout: float | None = None) -> bool:
        """Wait for the uploads handed over so far (at most ``timeout`` seconds); whether done.

        Writers closed later start the upload thread again.
        """
        with self._lock:
            uploader = self._uploader
            if uploader is None:
                return True
            self._uploader = None
            self._uploads.put(None)
        uploader.join(timeout)
        return not uploader.is_alive()

    # -- the contents manager --------------------------------------------------------------------

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a method of the contents manager, awaiting it on ``loop`` when asynchronous.

        Its ``HTTPError`` (the server's way of saying 404, 400, ...) passes through; any other
        failure (a storage service's own errors) becomes an ``OSError``.
        """
        try:
            result = getattr(self.contents_manager, method)(*args, **kwargs)
        except (HTTPError, OSError):
            raise
        except Exception as e:
            raise OSError(f"The contents manager's {method} failed: {e}") from e
        if not inspect.isawaitable(result):
            return result
        loop = self.loop
        if loop is None or _running_here(loop):
            if inspect.iscoroutine(result):
                result.close()
            # Waiting here for the loop that runs this very call would never end.
            raise RuntimeError(
                "Artifacts of an asynchronous contents manager are read off the event loop"
            )
        try:
            return asyncio.run_coroutine_threadsafe(_awaited(result), loop).result()
        except (HTTPError, OSError):
            raise
        except Exception as e:
            raise OSError(f"The contents manager's {method} failed: {e}") from e

    def prune(self, now: float | None = None) -> list[str]:
        """Remove artifacts past ``max_age``, then the oldest until under ``max_bytes``.

        An artifact being written or uploaded is never removed. Returns the ids removed;
        ``OSError`` when the contents manager fails.
        """
        try:
            return super().prune(now)
        except HTTPError as e:
            raise OSError(f"The contents manager refused: {e.log_message or e}") from e

    # -- reading ---------------------------------------------------------------------------------

    def resolve(self, artifact_id: str) -> str:
        """Return the contents API path of an artifact (one still staged: where it will be)."""
        validate_artifact_id(artifact_id)
        staged = self._staged.get(artifact_id)
        name = staged[1] if staged is not None else self._find(artifact_id).name
        return f"{self.folder}/{name}"

    def _find(self, artifact_id: str) -> ArtifactInfo:
        for artifact in self.entries():
            if artifact.id == artifact_id:
                return artifact
        raise NotFoundError(f"Artifact not found: {artifact_id}")

    def entries(self) -> list[ArtifactInfo]:
        """Every artifact in the folder, oldest (by last write) first (not the staged ones)."""
        try:
            listing = self._call("get", self.folder, content=True, type="directory")
        except HTTPError as e:
            if e.status_code in (400, 404):  # no folder yet, or a file in its place
                return []
            raise
        found: list[ArtifactInfo] = []
        for model in listing.get("content") or []:
            match = _FILE_PATTERN.match(str(model.get("name", "")))
            if not match or model.get("type") == "directory":
                continue
            size = model.get("size")
            if size is None:  # a manager whose listings leave sizes out
                try:
                    size = self._call("get", model["path"], content=False).get("size")
                except HTTPError:
                    continue
            found.append(
                ArtifactInfo(match[1], match[2], "", int(size or 0), _timestamp(model), match[3])
            )
        found.sort(key=lambda a: (a.mtime, a.id))
        return found

    def _remove(self, artifact: ArtifactInfo) -> None:
        # delete_file, not delete: an artifact has no checkpoints to look for.
        try:
            self._call("delete_file", f"{self.folder}/{artifact.name}")
        except HTTPError as e:
            if e.status_code != 404:
                raise OSError(f"Could not delete {artifact.name}: {e.log_message}") from e

    def size(self, artifact_id: str) -> int:
        """Current size in bytes of an artifact."""
        validate_artifact_id(artifact_id)
        staged = self._staged.get(artifact_id)
        if staged is not None:
            with contextlib.suppress(FileNotFoundError):
                return os.path.getsize(staged[0])
        return self._find(artifact_id).size

    def open(self, artifact_id: str) -> BinaryIO:
        """Open an artifact for reading (the caller closes it); its ``name`` is the file's.

        One still staged is read from its staged file; any other is fetched through the
        contents manager into an unnamed temporary file.
        """
        validate_artifact_id(artifact_id)
        staged = self._staged.get(artifact_id)
        if staged is not None:
            try:
                raw = io.FileIO(staged[0], "rb")
            except FileNotFoundError:
                pass  # uploaded meanwhile
            else:
                raw.name = staged[1]
                return io.BufferedReader(raw)
        artifact = self._find(artifact_id)
        if artifact.size > self.upload_max_bytes + READ_BLOCK:
            # Not one the store wrote (it keeps them within the bound): never loaded whole.
            raise InvalidRequestError(
                f"Artifact {artifact_id} is {format_size(artifact.size)}: past the "
                f"{format_size(self.upload_max_bytes)} read through the contents manager"
            )
        try:
            model = self._call(
                "get",
                f"{self.folder}/{artifact.name}",
                content=True,
                type="file",
                format="base64",
            )
        except HTTPError as e:
            if e.status_code == 404:  # pruned meanwhile
                raise NotFoundError(f"Artifact not found: {artifact_id}") from None
            raise
        content = model.get("content") or ""
        data = (
            base64.b64decode(content)
            if model.get("format") == "base64"
            else str(content).encode("utf-8")
        )
        del model, content
        # Unnamed (removed when closed, even by a crash), its name the artifact's: what it holds.
        file = tempfile.TemporaryFile(dir=self.staging_dir)  # noqa: SIM115 (the caller closes it)
        try:
            file.write(data)
            file.seek(0)
            file.raw.name = artifact.name  # type: ignore[attr-defined]
        except BaseException:
            file.close()
            raise
        return file


def _timestamp(model: dict[str, Any]) -> float:
    value = model.get("last_modified")
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def iter_byte_range(
    file: BinaryIO, start: int = 0, end: int | None = None, block: int = READ_BLOCK
) -> Generator[bytes, None, None]:
    """Yield bytes ``[start, end)`` of an open ``file`` in blocks of at most ``block`` bytes."""
    file.seek(start)
    remaining = None if end is None else max(0, end - start)
    while remaining is None or remaining > 0:
        data = file.read(block if remaining is None else min(block, remaining))
        if not data:
            break
        if remaining is not None:
            remaining -= len(data)
        yield data


def iter_line_range(
    file: BinaryIO, offset: int = 1, limit: int | None = None, block: int = READ_BLOCK
) -> Generator[bytes, None, None]:
    r"""Yield blocks holding lines ``offset .. offset+limit-1`` (1-based) of an open ``file``.

    Lines keep their ``\n``; ``limit`` None means to the end. Memory stays within one block
    whatever the length of a line.
    """
    to_skip = offset - 1
    to_send = limit
    while to_send is None or to_send > 0:
        data = file.read(block)
        if not data:
            break
        start = 0
        if to_skip:
            newlines = data.count(b"\n")
            if newlines < to_skip:
                to_skip -= newlines
                continue
            while to_skip:
                start = data.index(b"\n", start) + 1
                to_skip -= 1
        end = len(data)
        if to_send is not None:
            newlines = data.count(b"\n", start)
            if newlines >= to_send:
                pos = start
                for _ in range(to_send):
                    pos = data.index(b"\n", pos) + 1
                end = pos
                to_send = 0
            else:
                to_send -= newlines
        if end > start:
            yield data[start:end]

"""The artifact store: full execution output kept as files inside the server's contents root.

An artifact is ``<folder>/<id>.<tool>.<extension>`` under the contents root — ``.log`` for output
text, ``.png``/``.jpg``/``.gif``/``.webp``/``.svg`` for images — so a person can open it from the
JupyterLab file browser; callers refer to it as ``artifact://<id>``. Ids are
``<UTC yyyymmddThhmmss>-<12 hex>``: sortable by creation time, random enough to be unique across
sessions and server restarts, and created with ``O_EXCL`` so an existing file is never
overwritten. The store knows neither kernels nor HTTP.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from ..errors import InvalidRequestError, NotFoundError

log = logging.getLogger(__name__)

__all__ = [
    "ARTIFACT_ID_PATTERN",
    "MEDIA_TYPES",
    "ArtifactInfo",
    "ArtifactStore",
    "ArtifactWriter",
    "artifact_media_type",
    "is_text_artifact",
    "iter_byte_range",
    "iter_line_range",
]

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
        folder: str = "xcsh-artifacts",
        max_bytes: int = 512 * 1024 * 1024,
        max_age: float = 7 * 24 * 3600,
        prune_interval: float = math.inf,
    ) -> None:
        parts = [p for p in folder.replace(os.sep, "/").split("/") if p not in ("", ".")]
        if not parts or os.path.isabs(folder) or ".." in parts:
            raise ValueError(
                f"Artifacts folder must be a relative path inside the root: {folder!r}"
            )
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

    def save(self, tool: str, extension: str, data: bytes) -> ArtifactWriter:
        """Write ``data`` whole as a new artifact and return its (closed) writer.

        Raises ``OSError`` when it cannot be written; nothing partial is left behind.
        """
        writer = self.create(tool, extension)
        try:
            writer.write(data)
            writer.close()
        except BaseException:
            writer.abort()
            raise
        return writer

    def _release(self, artifact_id: str) -> None:
        with self._lock:
            self._writing.discard(artifact_id)
        if math.isfinite(self.prune_interval) and (
            time.monotonic() - self._last_prune >= self.prune_interval
        ):
            try:
                self.prune()
            except OSError as e:  # retention must never fail the output it follows
                log.warning("Could not prune artifacts in %s: %s", self.os_folder, e)

    def is_writing(self, artifact_id: str) -> bool:
        """Whether the artifact is still being written (and so protected from pruning)."""
        with self._lock:
            return artifact_id in self._writing

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
            with contextlib.suppress(FileNotFoundError):
                os.unlink(artifact.os_path)
            total -= artifact.size
            removed.append(artifact.id)
        return removed

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

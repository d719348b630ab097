"""The files tool's actions on the contents root, all through the server's contents manager.

Every read, save, rename and delete goes through ``ContentsManager`` (async or sync), never
``open()``: pre/post-save hooks, contents events, checkpoints and non-disk contents managers
keep working, and the server's own rules apply. Paths are the server's too: relative to the
contents root (or absolute inside it), ``..`` never climbing above it, no symlink leading out
of it (403), and hidden files handled as ``ContentsManager.allow_hidden`` says (404 for what
the server hides; 403 for creating or changing a hidden file).

A file's ``hash`` is the notebook tool's scheme (the first 16 hex digits of a sha256) over the
file's bytes (for a text file, its text as UTF-8). Changes of one file are serialised with the
notebook tool's (and the server's own saves) through the file's save lock (``SaveGuard``), so a
precondition is checked on the very state the change replaces. Saves are atomic on disk
(``SaveGuard.save_replacing``).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from jupyter_xcsh.errors import (
    ConflictError,
    InvalidDocumentError,
    InvalidRequestError,
    NotFoundError,
    RefusedError,
)
from jupyter_xcsh.notebook.edit.request import _occurrences
from jupyter_xcsh.notebook.model import DIGITS
from jupyter_xcsh.notebook.storage.saves import SaveGuard
from jupyter_xcsh.paths import escapes_root, hide_root, to_api_path
from jupyter_xcsh.policy.tags import check_notebook_text
from jupyter_xcsh.tools.files.request import FilesRequest

__all__ = ["FileLimits", "FileState", "Workspace", "file_hash"]


@dataclass(frozen=True)
class FileLimits:
    """The bounds of the files tool's answers and of the work one request may do."""

    #: Default character budget of ``read`` and ``search`` answers (the notebook tool's).
    max_chars: int = 20000
    #: Largest file ``read`` (and ``write``'s preconditions) load, in bytes.
    max_read_bytes: int = 8 * 1024 * 1024
    #: Entries ``list`` shows by default, and at most.
    list_limit: int = 200
    max_list_limit: int = 1000
    #: Matching lines ``search`` shows by default, and at most.
    search_limit: int = 100
    max_search_limit: int = 1000
    #: Files ``search`` reads by default, and at most.
    search_files: int = 1000
    max_search_files: int = 10000
    #: Folders ``search`` lists at most.
    max_search_folders: int = 2000
    #: Files larger than this (bytes) are skipped by ``search``.
    max_search_file_bytes: int = 1024 * 1024
    #: Characters of a ``409``'s ``details.content`` (a longer file: null).
    max_conflict_chars: int = 20000


def file_hash(data: bytes) -> str:
    """The first 16 hex digits of the sha256 of a file's bytes (the notebook tool's scheme)."""
    return hashlib.sha256(data).hexdigest()[:DIGITS]


def text_hash(text: str) -> str:
    """The hash of a text file: its text as UTF-8 (the bytes the contents manager keeps)."""
    return file_hash(text.encode("utf-8", "surrogatepass"))


@dataclass
class FileState:
    """A file as it is now: its model (no content), its text (None when binary) and hash."""

    model: dict[str, Any]
    text: str | None
    hash: str

    @property
    def size(self) -> int | None:
        """The file's size in bytes, when the contents manager says."""
        size = self.model.get("size")
        return size if isinstance(size, int) else None


def timestamp(value: Any) -> str | None:
    """A model's ``last_modified`` as ISO 8601 text (None when unknown)."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, str) else None


def shown(api_path: str) -> str:
    """An API path as answers show it (the root is ``/``)."""
    return api_path or "/"


def plural(count: int, word: str) -> str:
    """``1 file``, ``2 files``, ``2 entries``."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


class Workspace:
    """List, read, write, create, rename and delete files and folders of the contents root."""

    def __init__(
        self,
        contents_manager: Any,
        guard: SaveGuard | None = None,
        limits: FileLimits | None = None,
        artifacts: str = "",
    ) -> None:
        """Work through ``contents_manager``; ``guard`` is the notebook store's save guard.

        ``artifacts``: the API path of the artifacts folder ("" for none), out of this tool's
        reach whatever the contents manager says of hidden paths (``protects``).
        """
        self.contents_manager = contents_manager
        self.guard = guard or SaveGuard(contents_manager, install=False)
        self.limits = limits or FileLimits()
        self.artifacts = artifacts.strip("/")

    def protects(self, api_path: str) -> bool:
        """Whether ``api_path`` is the artifacts folder or inside it.

        The artifacts are the artifact tool's (read by id, pruned by the store): the files
        tool neither shows nor reads nor changes them, on any contents manager. The hidden-file
        policy alone kept the default ``.xcsh-artifacts`` out of reach only where the manager
        hides dot-names (s3contents has no hidden paths) and ``allow_hidden`` is off.
        """
        folder = self.artifacts
        return bool(folder) and (api_path == folder or api_path.startswith(folder + "/"))

    # -- paths and the contents manager --------------------------------------------------------

    async def resolve(self, path: str, *, creating: bool = False) -> str:
        """The API path of a caller's path, under the server's root and hidden-file rules.

        Outside the root (``..`` above it, an absolute path elsewhere, a symlink leading out):
        ``RefusedError``; so is the artifacts folder and what it holds (``protects``). Hidden
        while ``allow_hidden`` is false: ``NotFoundError`` (as the server answers), or
        ``RefusedError`` when ``creating`` (a change would create or replace it; the answer
        does not depend on whether it exists).
        """
        cm = self.contents_manager
        api_path = to_api_path(path, cm.root_dir)
        get_os_path = getattr(cm, "_get_os_path", None)
        if get_os_path is not None and api_path:
            try:
                os_path = str(get_os_path(api_path))
            except HTTPError:
                raise RefusedError(f"Path is outside the contents root: {path}") from None
            if escapes_root(os_path, cm.root_dir):
                raise RefusedError(f"Path is outside the contents root: {path}")
        if self.protects(api_path):
            raise RefusedError(
                f"{path} is in the artifacts folder ({self.artifacts}), which the files tool "
                f"does not reach: read an artifact with the artifact tool (its id, "
                f"artifact://<id>)"
            )
        if api_path and not cm.allow_hidden and await ensure_async(cm.is_hidden(api_path)):
            if creating:
                raise RefusedError(
                    f"Hidden files and folders cannot be created or changed here "
                    f"(the server's allow_hidden is false): {path}"
                )
            raise NotFoundError(f"Not found: {path}")
        return api_path

    @contextmanager
    def manager_errors(self, path: str) -> Iterator[None]:
        """Turn the contents manager's ``HTTPError`` into the domain error of its status.

        Its message names files by their absolute path (``Cannot create file or directory
        '/srv/root/x'``): the root is taken out. Other statuses (a fault) pass through.
        """
        try:
            yield
        except HTTPError as e:
            message = e.log_message % e.args if e.args and e.log_message else e.log_message
            message = hide_root(str(message or e.reason or ""), [self.contents_manager.root_dir])
            if e.status_code == 404:
                raise NotFoundError(f"Not found: {path}") from None
            errors = {400: InvalidRequestError, 403: RefusedError, 409: ConflictError}
            error = errors.get(e.status_code)
            if error is None:
                raise
            raise error(f"{message} ({path})" if path not in message else message) from None

    async def stat(self, api_path: str, path: str) -> dict[str, Any] | None:
        """The model (no content) of ``api_path``, or None when nothing is there."""
        cm = self.contents_manager
        with self.manager_errors(path):
            if not await ensure_async(cm.exists(api_path)):
                return None
        try:
            with self.manager_errors(path):
                model: dict[str, Any] = await ensure_async(cm.get(api_path, content=False))
        except NotFoundError:
            return None  # gone since, or hidden by the manager
        return model

    async def require(self, api_path: str, path: str) -> dict[str, Any]:
        """The model (no content) of ``api_path``; ``NotFoundError`` when nothing is there."""
        model = await self.stat(api_path, path)
        if model is None:
            raise NotFoundError(f"Not found: {path}")
        return model

    async def load(self, api_path: str, path: str, model: dict[str, Any]) -> FileState:
        """A file's text (None when binary) and hash; a folder or a too large file: refused."""
        if model.get("type") == "directory":
            raise InvalidRequestError(f"{path} is a folder, not a file (list it: action list)")
        size = model.get("size")
        limit = self.limits.max_read_bytes
        if isinstance(size, int) and size > limit:
            raise InvalidDocumentError(
                f"File too large for the files tool ({size} bytes, at most {limit}): {path}",
                reason="too_large",
                details={"path": api_path, "size": size, "mimetype": model.get("mimetype")},
            )
        cm = self.contents_manager
        with self.manager_errors(path):
            full = await ensure_async(cm.get(api_path, content=True, type="file"))
        content = full.get("content")
        if full.get("format") == "text" and isinstance(content, str) and "\x00" not in content:
            return FileState(full, content, text_hash(content))
        if full.get("format") == "text" and isinstance(content, str):
            data = content.encode("utf-8", "surrogatepass")  # text with NUL bytes: binary
        else:
            data = base64.b64decode(content or "")
        full = {**full, "mimetype": full.get("mimetype") or "application/octet-stream"}
        return FileState(full, None, file_hash(data))

    def conflict_details(self, api_path: str, state: FileState | None) -> dict[str, Any]:
        """The file as it is now, for a 409 body: the caller can retry without another read."""
        if state is None:
            return {
                "path": api_path,
                "exists": False,
                "hash": None,
                "size": None,
                "lastModified": None,
                "content": None,
            }
        text = state.text
        return {
            "path": api_path,
            "exists": True,
            "hash": state.hash,
            "size": state.size,
            "lastModified": timestamp(state.model.get("last_modified")),
            "content": text
            if text is not None and len(text) <= self.limits.max_conflict_chars
            else None,
        }

    def check_hash(self, api_path: str, path: str, state: FileState, expected: str | None) -> None:
        """Raise a 409 ``stale_file`` unless the file has the hash the caller expects."""
        if expected is not None and state.hash != expected:
            raise ConflictError(
                f"File changed since it was read (expected hash {expected}, found "
                f"{state.hash}): {path}",
                reason="stale_file",
                details=self.conflict_details(api_path, state),
            )

    async def ensure_folder(self, api_path: str, path: str) -> list[str]:
        """Create ``api_path`` and its missing parent folders; return those created."""
        created: list[str] = []
        parts = [p for p in api_path.split("/") if p]
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            model = await self.stat(folder, path)
            if model is None:
                with self.manager_errors(path):
                    await ensure_async(self.contents_manager.save({"type": "directory"}, folder))
                created.append(folder)
            elif model.get("type") != "directory":
                raise ConflictError(f"{folder} is a file, not a folder: {path}", reason="exists")
        return created

    # -- the actions ---------------------------------------------------------------------------

    async def list(self, request: FilesRequest) -> dict[str, Any]:
        """A folder's entries (optionally those whose name matches ``glob``), bounded."""
        path = request.path or "/"
        api_path = await self.resolve(request.path)
        model = await self.require(api_path, path)
        if model.get("type") != "directory":
            raise InvalidRequestError(f"{path} is a file, not a folder (read it: action read)")
        with self.manager_errors(path):
            listing = await ensure_async(
                self.contents_manager.get(api_path, content=True, type="directory")
            )
        entries = [
            e
            for e in listing.get("content") or []
            if isinstance(e, dict) and not self.protects(str(e.get("path", "")).strip("/"))
        ]
        if request.glob is not None:
            entries = [e for e in entries if fnmatch.fnmatchcase(str(e.get("name")), request.glob)]
        entries.sort(key=lambda e: (e.get("type") != "directory", str(e.get("name"))))
        limit = min(request.limit or self.limits.list_limit, self.limits.max_list_limit)
        kept = [_entry(e) for e in entries[:limit]]
        left_off = len(entries) - len(kept)
        matching = f" matching {request.glob!r}" if request.glob is not None else ""
        lines = [f"Folder {shown(api_path)}: {plural(len(entries), 'entry')}{matching}"]
        for entry in kept:
            if entry["type"] == "directory":
                lines.append(f"{entry['path']}/")
            else:
                size = "" if entry["size"] is None else f"  {entry['size']} bytes"
                lines.append(f"{entry['path']}{size}  {entry['lastModified'] or ''}".rstrip())
        if left_off:
            lines.append(
                f"[Showing {len(kept)} of {len(entries)} entries; {left_off} left off. "
                f"Narrow with glob or raise limit (at most {self.limits.max_list_limit})]"
            )
        details = {
            "action": "list",
            "path": api_path,
            "glob": request.glob,
            "totalEntries": len(entries),
            "leftOff": left_off,
            "truncated": left_off > 0,
            "entries": kept,
        }
        return {"text": "\n".join(lines), "details": details}

    async def read(self, request: FilesRequest) -> dict[str, Any]:
        """Lines ``start_line``..``end_line`` of a text file within the character budget."""
        path = request.path
        api_path = await self.resolve(path)
        state = await self.load(api_path, path, await self.require(api_path, path))
        if state.text is None:
            size, mimetype = state.size, state.model.get("mimetype")
            raise InvalidDocumentError(
                f"Not a text file: {path} ({size} bytes, {mimetype}); the files tool reads "
                "UTF-8 text only",
                reason="binary_file",
                details={"path": api_path, "size": size, "mimetype": mimetype, "hash": state.hash},
            )
        lines = state.text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the newline ending the last line starts no line of its own
        total = len(lines)
        start = request.start_line or 1
        if start > max(total, 1):
            raise InvalidRequestError(
                f"start_line {start} is past the end of {path} ({plural(total, 'line')})"
            )
        end = min(request.end_line or total, total)
        budget = request.max_chars or self.limits.max_chars
        parts: list[str] = []
        used, last, cut = 0, start - 1, False
        for number in range(start, end + 1):
            line = lines[number - 1] + ("\n" if number < total or state.text.endswith("\n") else "")
            if used + len(line) > budget:
                if not parts:  # one line longer than the budget: its beginning
                    parts.append(line[:budget])
                    last, cut = number, True
                break
            parts.append(line)
            used += len(line)
            last = number
        content = "".join(parts)
        truncated = last < end or cut
        span = f"lines {start}-{last} of {total}" if total else "empty"
        text = f"{api_path} ({span}, hash {state.hash})\n{content}"
        if cut:
            text += (
                f"\n[Line {last} is longer than the {budget} character budget: showing its first "
                f"{budget} characters]"
            )
        if last < end:
            text += (
                f"\n[Showing lines {start}-{last} of {total} ({budget} character budget). "
                f"Continue with start_line={last + 1}]"
            )
        details = {
            "action": "read",
            "path": api_path,
            "hash": state.hash,
            "size": state.size,
            "mimetype": state.model.get("mimetype"),
            "lastModified": timestamp(state.model.get("last_modified")),
            "totalLines": total,
            "startLine": start,
            "endLine": last,
            "truncated": truncated,
            "content": content,
        }
        return {"text": text, "details": details}

    async def write(self, request: FilesRequest) -> dict[str, Any]:
        """Create a text file, or replace one that is still what the caller read."""
        path, content = request.path, request.content
        assert content is not None  # parse_request guarantees it
        api_path = await self.resolve(path, creating=True)
        if not api_path:
            raise RefusedError("The contents root is a folder, not a file")
        async with self.guard.holding(self.guard.key(api_path)):
            model = await self.stat(api_path, path)
            state = None if model is None else await self.load(api_path, path, model)
            guarded = request.expected_hash is not None or request.old_content is not None
            if state is None and guarded:
                raise NotFoundError(
                    f"File not found: {path} (expected_hash and old_content need an existing "
                    "file; leave them out to create it)"
                )
            if state is not None and not guarded:
                raise ConflictError(
                    f"File already exists: {path}; to replace it, give expected_hash (the hash "
                    "read returns) or old_content",
                    reason="file_exists",
                    details=self.conflict_details(api_path, state),
                )
            new = content
            if state is not None:
                self.check_hash(api_path, path, state, request.expected_hash)
                if request.old_content is not None:
                    new = self._replace_once(api_path, path, state, request.old_content, content)
            if api_path.endswith(".ipynb"):  # the ask-before-run tags are the person's
                check_notebook_text(None if state is None else state.text, new, api_path)
            created_folders = await self.ensure_folder(posixpath.dirname(api_path), path)
            saved = await self.guard.save_replacing(
                {"type": "file", "format": "text", "content": new}, api_path
            )
        new_hash = text_hash(new)
        verb = "Created" if state is None else "Replaced"
        lines = new.count("\n") + (0 if new.endswith("\n") or not new else 1)
        size = f"{plural(len(new), 'character')}, {plural(lines, 'line')}"
        text = f"{verb} {api_path} ({size}; hash {new_hash})"
        details = {
            "action": "write",
            "path": api_path,
            "created": state is None,
            "hash": new_hash,
            "previousHash": None if state is None else state.hash,
            "size": len(new.encode("utf-8", "surrogatepass")),
            "lastModified": timestamp(saved.get("last_modified")),
            "createdFolders": created_folders,
        }
        return {"text": text, "details": details}

    def _replace_once(
        self, api_path: str, path: str, state: FileState, snippet: str, content: str
    ) -> str:
        """The file's text with the one occurrence of ``snippet`` replaced by ``content``.

        Absent: 409 ``stale_file`` (the file no longer holds what the caller read); more than
        once: 400 (the caller must quote more of the file) — as the notebook tool's edits.
        """
        if state.text is None:
            raise InvalidDocumentError(f"Not a text file: {path}; old_content cannot match it")
        count = _occurrences(state.text, snippet)
        if count == 0:
            raise ConflictError(
                f"old_content not found in {path}",
                reason="stale_file",
                details=self.conflict_details(api_path, state),
            )
        if count > 1:
            raise InvalidRequestError(f"old_content occurs {count} times in {path}")
        return state.text.replace(snippet, content, 1)

    async def mkdir(self, request: FilesRequest) -> dict[str, Any]:
        """Create a folder and its missing parents (an existing folder is left as it is)."""
        path = request.path
        api_path = await self.resolve(path, creating=True)
        if not api_path:
            raise InvalidRequestError("The contents root exists already")
        created = await self.ensure_folder(api_path, path)
        text = (
            f"Created folder {api_path}"
            if created
            else f"Folder {api_path} already exists; nothing changed"
        )
        details = {
            "action": "mkdir",
            "path": api_path,
            "created": bool(created),
            "createdFolders": created,
        }
        return {"text": text, "details": details}

    async def rename(self, request: FilesRequest) -> dict[str, Any]:
        """Rename or move a file or folder; never over an existing one."""
        path, new_path = request.path, request.new_path
        assert new_path is not None  # parse_request guarantees it
        api_path = await self.resolve(path)
        target = await self.resolve(new_path, creating=True)
        if not api_path or not target:
            raise RefusedError("The contents root cannot be renamed or replaced")
        if target == api_path:
            raise InvalidRequestError(f"new_path names the same file: {new_path}")
        if target.startswith(api_path + "/"):
            raise InvalidRequestError(f"Cannot move {path} into itself: {new_path}")
        async with self.guard.holding(self.guard.key(api_path)):
            model = await self.require(api_path, path)
            if request.expected_hash is not None:
                if model.get("type") == "directory":
                    raise InvalidRequestError(f"expected_hash is for files; {path} is a folder")
                state = await self.load(api_path, path, model)
                self.check_hash(api_path, path, state, request.expected_hash)
            if await self.stat(target, new_path) is not None:
                raise ConflictError(f"Already exists: {new_path}", reason="exists")
            created = await self.ensure_folder(posixpath.dirname(target), new_path)
            with self.manager_errors(path):
                await ensure_async(self.contents_manager.rename(api_path, target))
        kind = "folder" if model.get("type") == "directory" else "file"
        details = {
            "action": "rename",
            "path": api_path,
            "newPath": target,
            "type": kind,
            "createdFolders": created,
        }
        return {"text": f"Renamed {kind} {api_path} to {target}", "details": details}

    async def delete(self, request: FilesRequest) -> dict[str, Any]:
        """Delete a file that is still what the caller read, or an empty folder."""
        path = request.path
        api_path = await self.resolve(path)
        if not api_path:
            raise RefusedError("The contents root cannot be deleted")
        async with self.guard.holding(self.guard.key(api_path)):
            model = await self.require(api_path, path)
            if model.get("type") == "directory":
                if request.expected_hash is not None:
                    raise InvalidRequestError(
                        f"expected_hash is for files; {path} is a folder (a folder is deleted "
                        "only when empty)"
                    )
                with self.manager_errors(path):
                    listing = await ensure_async(
                        self.contents_manager.get(api_path, content=True, type="directory")
                    )
                names = sorted(str(e.get("name")) for e in listing.get("content") or [])
                if names:
                    raise ConflictError(
                        f"Folder is not empty: {path} ({plural(len(names), 'entry')}); delete "
                        "its files first",
                        reason="folder_not_empty",
                        details={"path": api_path, "entries": len(names), "names": names[:20]},
                    )
                kind, previous = "folder", None
            else:
                if request.expected_hash is None:
                    raise InvalidRequestError(
                        "expected_hash is required to delete a file (the hash read returns): "
                        f"{path}"
                    )
                state = await self.load(api_path, path, model)
                self.check_hash(api_path, path, state, request.expected_hash)
                kind, previous = "file", state.hash
            with self.manager_errors(path):
                await ensure_async(self.contents_manager.delete(api_path))
        details = {"action": "delete", "path": api_path, "type": kind, "previousHash": previous}
        return {"text": f"Deleted {kind} {api_path}", "details": details}


def _entry(model: dict[str, Any]) -> dict[str, Any]:
    """One ``list`` entry from a contents model."""
    size = model.get("size")
    kind = model.get("type")
    return {
        "name": str(model.get("name")),
        "path": str(model.get("path")),
        "type": kind if kind in ("directory", "file", "notebook") else "file",
        "size": size if isinstance(size, int) and kind != "directory" else None,
        "lastModified": timestamp(model.get("last_modified")),
    }

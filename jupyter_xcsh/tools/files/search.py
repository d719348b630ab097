"""The files tool's ``search``: which lines of the text files under a folder match a pattern.

Files are found and read through the contents manager (``Workspace``), folder by folder in name
order, skipping what the server hides, what leads out of the root, binary files and files
larger than ``FileLimits.max_search_file_bytes``. The work is bounded: at most ``max_files``
files read, ``FileLimits.max_search_folders`` folders listed, and the search stops once
``limit`` matching lines were found. Lines are matched as the notebook tool's ``find`` matches
them (``search/grep.py``): literal patterns in the server, regex patterns in a child process
stopped at a deadline (``search/regex_workers.py``), so a catastrophically backtracking
pattern cannot stall the server.
"""

from __future__ import annotations

import asyncio
import fnmatch
import posixpath
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_xcsh.errors import (
    InvalidDocumentError,
    InvalidRequestError,
    NotFoundError,
    RefusedError,
)
from jupyter_xcsh.search.find import check_regex, clip_line
from jupyter_xcsh.search.grep import Hit, search_texts
from jupyter_xcsh.search.regex_workers import RegexWorkers, SearchTimeout, WorkerFailed
from jupyter_xcsh.tools.files.request import FilesRequest
from jupyter_xcsh.tools.files.workspace import Workspace, plural, shown

__all__ = ["FileSearch"]

#: Characters of file text sent to one search (one regex child's request).
BATCH_CHARS = 1_000_000


@dataclass
class _Scan:
    """What a search found and skipped so far."""

    limit: int
    matches: list[dict[str, Any]] = field(default_factory=list)
    matched_files: int = 0
    scanned: int = 0
    binary: int = 0
    too_large: int = 0
    stopped: str | None = None
    batch: list[tuple[str, str]] = field(default_factory=list)
    batch_chars: int = 0

    @property
    def full(self) -> bool:
        return len(self.matches) >= self.limit


class FileSearch:
    """Answer ``search`` requests over the files of a ``Workspace``."""

    def __init__(self, workspace: Workspace, regex: RegexWorkers | None = None) -> None:
        """Search through ``workspace``; regex searches run in ``regex``'s child processes."""
        self.workspace = workspace
        self.regex = regex or RegexWorkers()

    async def search(self, request: FilesRequest) -> dict[str, Any]:
        """Return the ``{"text", "details"}`` of a search request."""
        pattern = request.pattern
        assert pattern is not None  # parse_request guarantees it
        if request.regex:
            check_regex(pattern)
        ws, limits = self.workspace, self.workspace.limits
        path = request.path or "/"
        api_path = await ws.resolve(request.path)
        model = await ws.require(api_path, path)
        scan = _Scan(min(request.limit or limits.search_limit, limits.max_search_limit))
        max_files = min(request.max_files or limits.search_files, limits.max_search_files)
        if model.get("type") != "directory":
            await self._consider(scan, model, api_path, request, max_files, single=True)
        else:
            await self._walk(scan, api_path, request, max_files)
        await self._flush(scan, request)
        return self._answer(scan, api_path, request)

    async def _walk(self, scan: _Scan, root: str, request: FilesRequest, max_files: int) -> None:
        ws, limits = self.workspace, self.workspace.limits
        folders, listed = deque([root]), 0
        while folders and scan.stopped is None:
            if listed >= limits.max_search_folders:
                scan.stopped = f"{limits.max_search_folders} folders listed"
                break
            folder = folders.popleft()
            listed += 1
            try:
                with ws.manager_errors(folder):
                    listing = await ensure_async(
                        ws.contents_manager.get(folder, content=True, type="directory")
                    )
            except (NotFoundError, RefusedError, InvalidRequestError):
                continue  # gone since it was listed, or not readable: skipped
            entries = sorted(
                (e for e in listing.get("content") or [] if isinstance(e, dict)),
                key=lambda e: str(e.get("name")),
            )
            for entry in entries:
                if entry.get("type") == "directory":
                    if not ws.protects(str(entry.get("path", "")).strip("/")):
                        folders.append(str(entry.get("path")))
                    continue
                relative = posixpath.relpath(str(entry.get("path")), root or ".")
                await self._consider(scan, entry, relative, request, max_files)
                if scan.stopped is not None:
                    return

    async def _consider(
        self,
        scan: _Scan,
        entry: dict[str, Any],
        relative: str,
        request: FilesRequest,
        max_files: int,
        *,
        single: bool = False,
    ) -> None:
        """Read one file into the current batch (or count why it is skipped)."""
        ws = self.workspace
        glob = request.glob
        if glob is not None and not single:
            name = relative if "/" in glob else str(entry.get("name"))
            if not fnmatch.fnmatchcase(name, glob):
                return
        size = entry.get("size")
        if isinstance(size, int) and size > ws.limits.max_search_file_bytes:
            scan.too_large += 1
            return
        if scan.scanned >= max_files:
            scan.stopped = f"{max_files} files read (max_files)"
            return
        api_path = str(entry.get("path"))
        try:
            await ws.resolve(api_path)  # a symlink out of the root is not followed
            state = await ws.load(api_path, api_path, entry)
        except (NotFoundError, RefusedError, InvalidRequestError):
            return
        except InvalidDocumentError:
            scan.too_large += 1
            return
        if state.text is None:
            scan.binary += 1
            return
        scan.scanned += 1
        scan.batch.append((api_path, state.text))
        scan.batch_chars += len(state.text)
        if scan.batch_chars >= BATCH_CHARS:
            await self._flush(scan, request)
            if scan.full:
                scan.stopped = f"{scan.limit} matching lines found (limit)"

    async def _flush(self, scan: _Scan, request: FilesRequest) -> None:
        """Search the batch's files and keep their matching lines (up to the limit)."""
        batch, scan.batch, scan.batch_chars = scan.batch, [], 0
        if not batch or scan.full:
            return
        texts = [text for _, text in batch]
        pattern = request.pattern
        assert pattern is not None
        room = scan.limit - len(scan.matches)
        if request.regex:
            try:
                hits = await self.regex.search(texts, pattern, room)
            except SearchTimeout:
                raise InvalidRequestError(
                    f"Regex search stopped after {self.regex.timeout:g} seconds: the pattern "
                    "backtracks too much (nested repetition such as (a+)+ can take exponential "
                    "time); simplify it"
                ) from None
            except WorkerFailed as e:
                raise InvalidRequestError(f"Regex search failed: {e}") from None
        else:
            hits = await asyncio.to_thread(search_texts, texts, pattern, False, room)
        self._keep(scan, batch, hits)

    @staticmethod
    def _keep(scan: _Scan, batch: list[tuple[str, str]], hits: list[Hit]) -> None:
        for position, _count, located in hits:
            if scan.full:
                return
            path, text = batch[position]
            lines = text.split("\n")
            scan.matched_files += 1
            for number, start, _end in located:
                if scan.full:
                    return
                line = lines[number - 1].rstrip("\r")
                scan.matches.append({"path": path, "line": number, "text": clip_line(line, start)})

    def _answer(self, scan: _Scan, api_path: str, request: FilesRequest) -> dict[str, Any]:
        if scan.full and scan.stopped is None:
            scan.stopped = f"{scan.limit} matching lines found (limit)"
        budget = request.max_chars or self.workspace.limits.max_chars
        kind = "regex" if request.regex else "text"
        where = shown(api_path)
        if scan.matches:
            heading = (
                f"Found {kind} {request.pattern!r} on {plural(len(scan.matches), 'line')} of "
                f"{plural(scan.matched_files, 'file')} under {where} "
                f"({plural(scan.scanned, 'file')} searched)"
            )
        else:
            heading = (
                f"No match for {kind} {request.pattern!r} under {where} "
                f"({plural(scan.scanned, 'file')} searched)"
            )
        lines, used, shown_count = [heading], len(heading), 0
        for match in scan.matches:
            line = f"{match['path']}:{match['line']}: {match['text']}"
            if used + len(line) + 1 > budget and shown_count:
                break
            lines.append(line)
            used += len(line) + 1
            shown_count += 1
        skipped = []
        if scan.binary:
            skipped.append(f"{plural(scan.binary, 'binary file')}")
        if scan.too_large:
            skipped.append(f"{plural(scan.too_large, 'file')} too large")
        if skipped:
            lines.append(f"[Skipped {', '.join(skipped)}]")
        if shown_count < len(scan.matches):
            lines.append(
                f"[Showing {shown_count} of {len(scan.matches)} matching lines "
                f"({budget} character budget); narrow the search with path or glob]"
            )
        if scan.stopped is not None:
            lines.append(
                f"[Search stopped after {scan.stopped}; more files may match: narrow it with "
                "path or glob]"
            )
        details = {
            "action": "search",
            "path": api_path,
            "pattern": request.pattern,
            "regex": bool(request.regex),
            "glob": request.glob,
            "filesSearched": scan.scanned,
            "matchedFiles": scan.matched_files,
            "skippedBinary": scan.binary,
            "skippedTooLarge": scan.too_large,
            "truncated": scan.stopped is not None or shown_count < len(scan.matches),
            "stoppedAfter": scan.stopped,
            "matches": scan.matches[:shown_count],
        }
        return {"text": "\n".join(lines), "details": details}

    async def close(self) -> None:
        """Stop the regex search processes (when this search owns them)."""
        await self.regex.close()

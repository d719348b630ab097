"""``GET /api/xcsh/artifacts/<id>``: an artifact (output text or an image), whole or in part."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_xcsh.artifacts.store import (
    artifact_media_type,
    is_text_artifact,
    iter_byte_range,
    iter_line_range,
)
from jupyter_xcsh.handlers.base import XcshAPIHandler, tool_authorized
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.artifact.tool import ArtifactTool

TEXT = "text/plain; charset=utf-8"

#: Added to the API's policy for an SVG: opened from the server's origin, it may style itself
#: but never run a script (a unique origin, as jupyter_server's files handler does).
SVG_POLICY = "style-src 'unsafe-inline'; sandbox"

_RANGE = re.compile(r"\Abytes=(\d*)-(\d*)\Z")

#: Stands for any number past what a file can hold (Python refuses to convert very long digit
#: strings to int, and no artifact is this large anyway).
BEYOND_ANY_FILE = 2**63


def _number(digits: str) -> int:
    """The value of a string of ASCII digits, capped at ``BEYOND_ANY_FILE``."""
    return int(digits) if len(digits.lstrip("0")) < 19 else BEYOND_ANY_FILE


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """Return ``[start, end)`` of a single ``bytes=`` range, or None to serve the whole file.

    Raises ``web.HTTPError(416)`` for a range that lies beyond the file. Multiple or malformed
    ranges are ignored, as RFC 9110 allows.
    """
    match = _RANGE.match(header.replace(" ", ""))
    if not match or match[1] == match[2] == "":
        return None
    if match[1] == "":
        suffix = _number(match[2])
        if suffix == 0:
            raise web.HTTPError(416, f"Range not satisfiable: {header}")
        return max(0, size - suffix), size
    start = _number(match[1])
    end = size if match[2] == "" else min(size, _number(match[2]) + 1)
    if start >= size or start >= end:
        raise web.HTTPError(416, f"Range not satisfiable: {header}")
    return start, end


class ArtifactHandler(XcshAPIHandler):
    r"""Serve an artifact: output text, or an image an execution displayed.

    ``GET /api/xcsh/artifacts/<id>``: 200 with the whole file — text as ``text/plain;
    charset=utf-8``, an image as its own type (``image/png``, ``image/jpeg``, ``image/gif``,
    ``image/webp``, ``image/svg+xml`` with a sandboxing ``Content-Security-Policy``).
    ``?offset=<n>&limit=<m>`` (text only): lines ``n .. n+m-1`` (1-based, each with its ``\n``;
    ``limit`` omitted means to the end). ``Range: bytes=a-b``: 206 with those bytes and
    ``Content-Range`` (a byte range may split a multi-byte character). 400 for an id not of the
    store's form, a bad query or lines of an image, 404 for an unknown id, 416 for a range
    beyond the end, 403 when the user may not read contents.
    """

    auth_resource = ArtifactTool.permission.resource

    @web.authenticated
    @tool_authorized(ArtifactTool)
    async def get(self, artifact_id: str) -> None:
        """Write the artifact (or the lines or bytes asked for) as plain text."""
        offset = self._positive_argument("offset")
        limit = self._positive_argument("limit")
        byte_range = self.request.headers.get("Range")
        paged = offset is not None or limit is not None
        if paged and byte_range is not None:
            raise web.HTTPError(400, "Use either ?offset=&limit= or a Range header, not both")
        with self.domain_errors():
            file = await self.services.artifacts.open(artifact_id, self.caller)
        with file:
            content_type = artifact_media_type(file.name)
            if paged and not is_text_artifact(file.name):
                raise web.HTTPError(400, f"Artifact {artifact_id} is an image: it has no lines")
            if content_type == "image/svg+xml":
                policy = f"{self.content_security_policy}; {SVG_POLICY}"
                self.set_header("Content-Security-Policy", policy)
            if paged:
                blocks = iter_line_range(file, offset or 1, limit)
            else:
                size = os.fstat(file.fileno()).st_size
                span = parse_range(byte_range, size) if byte_range else None
                start, end = span or (0, size)
                blocks = iter_byte_range(file, start, end)
                self.set_header("Accept-Ranges", "bytes")
                self.set_header("Content-Length", str(end - start))
                if span is not None:
                    self.set_status(206)
                    self.set_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            self.set_header("Content-Type", content_type)
            await self._send(blocks, content_type)

    async def _send(self, blocks: Iterator[bytes], content_type: str) -> None:
        # One block in memory at a time, whatever the artifact's size.
        for block in blocks:
            self.write(block)
            try:
                await self.flush()
            except StreamClosedError:
                return  # the client went away
        await self.finish(set_content_type=content_type)

    def _positive_argument(self, name: str) -> int | None:
        raw = self.get_query_argument(name, None)
        if raw is None:
            return None
        if not (raw.isascii() and raw.isdigit()) or _number(raw) < 1:
            raise web.HTTPError(400, "%s", f"{name} must be a positive integer, got {raw!r}")
        return _number(raw)


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """The artifact routes, each handler receiving ``services`` through ``initialize``."""
    return [(r"/api/xcsh/artifacts/(.+)", ArtifactHandler, {"services": services})]

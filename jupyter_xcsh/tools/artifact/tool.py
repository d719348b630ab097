"""The artifact tool's one call path: read back an artifact's full text, a page at a time."""

from __future__ import annotations

import asyncio
import os
from typing import Any, BinaryIO, ClassVar

from jupyter_xcsh.artifacts.store import (
    ArtifactStore,
    artifact_media_type,
    is_text_artifact,
    iter_line_range,
)
from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.fields import unknown_fields
from jupyter_xcsh.outputs.imageinfo import image_format, image_size, svg_size
from jupyter_xcsh.outputs.sizes import format_size
from jupyter_xcsh.outputs.view import terminal_text
from jupyter_xcsh.policy.gate import AgentAction
from jupyter_xcsh.tools.base import Permission

__all__ = ["ArtifactTool"]

#: Most bytes one ``call`` returns; a longer page stops at a line boundary with a notice.
MAX_PAGE_BYTES = 256 * 1024
#: Largest image ``read_image`` returns whole (base64 in a JSON answer grows by a third).
MAX_IMAGE_BYTES = 8 * 1024 * 1024


def _positive(body: dict[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidRequestError(f"{name} must be a positive integer, got {value!r}")
    return value


class ArtifactTool:
    """Open artifacts for a caller allowed to read contents."""

    name: ClassVar[str] = "artifact"
    route: ClassVar[str] = "/api/xcsh/artifacts/{artifact_id}"
    #: Artifacts are files in the contents root.
    permission: ClassVar[Permission] = Permission("read", "contents")

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store

    async def open(self, artifact_id: str, caller: Caller) -> BinaryIO:
        """Open an artifact for reading (the caller closes it); 400/403/404 as domain errors."""
        await caller.require("read", self.permission.resource)
        # Artifacts belong to no path: only a rule on the root folder covers them.
        await caller.permit(AgentAction("artifact", "read", "", f"read artifact {artifact_id}"))
        # Off the event loop: the folder is listed, and read through the contents manager where
        # the root is not a local directory.
        return await asyncio.to_thread(self.store.open, artifact_id)

    async def read_image(
        self, artifact_id: str, caller: Caller, max_bytes: int = MAX_IMAGE_BYTES
    ) -> tuple[str, bytes] | None:
        """An image artifact whole, ``(media type, bytes)``; None for text or past ``max_bytes``."""
        with await self.open(artifact_id.removeprefix("artifact://"), caller) as file:
            if is_text_artifact(file.name) or os.fstat(file.fileno()).st_size > max_bytes:
                return None
            return artifact_media_type(file.name), file.read()

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Return lines ``offset .. offset+limit-1`` (1-based) of an artifact: ``{text, details}``.

        The page is bounded by ``MAX_PAGE_BYTES``: a longer one ends at a line boundary (or
        mid-line for a single huge line) and ``details.nextOffset`` says where to continue.
        """
        unknown = sorted(set(body) - {"id", "offset", "limit"})
        if unknown:
            fields = ("id", "offset", "limit")
            raise InvalidRequestError(unknown_fields(unknown, fields, prefix="Unknown field(s)"))
        artifact_id = body.get("id")
        if not isinstance(artifact_id, str):
            raise InvalidRequestError("id must be a string")
        artifact_id = artifact_id.removeprefix("artifact://")
        offset = _positive(body, "offset", 1)
        limit = _positive(body, "limit", None)
        assert offset is not None
        with await self.open(artifact_id, caller) as file:
            if not is_text_artifact(file.name):
                return _describe_image(artifact_id, file)
            data = bytearray()
            for block in iter_line_range(file, offset, limit):
                data += block
                if len(data) > MAX_PAGE_BYTES:
                    break
        cut = len(data) > MAX_PAGE_BYTES
        if cut:
            end = data.rfind(b"\n", 0, MAX_PAGE_BYTES) + 1 or MAX_PAGE_BYTES
            del data[end:]
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        # As the tools show output: plain text (the artifact keeps the raw bytes).
        text = terminal_text(data.decode("utf-8", errors="replace"))
        details: dict[str, Any] = {"artifactId": artifact_id, "offset": offset, "lines": lines}
        if cut:
            next_offset = offset + data.count(b"\n")
            details["nextOffset"] = next_offset
            text += f"\n[Page cut at {MAX_PAGE_BYTES} bytes. Continue with offset={next_offset}]"
        return {"text": text, "details": details}


#: Bytes of an image file read to find its pixel size (a JPEG's frame header may come late).
IMAGE_HEADER_BYTES = 256 * 1024


def _describe_image(artifact_id: str, file: BinaryIO) -> dict[str, Any]:
    """An image artifact has no lines: say what it is (MCP shows it: ``mcp/tools.py``)."""
    mime_type = artifact_media_type(file.name)
    fmt = image_format(mime_type)
    size = os.fstat(file.fileno()).st_size
    head = file.read(IMAGE_HEADER_BYTES)
    pixels = (image_size(head) if fmt.raster else svg_size(head)) if fmt else None
    name = fmt.name if fmt else mime_type
    what = f"{pixels[0]}x{pixels[1]} {name}" if pixels else name
    text = f"artifact://{artifact_id} is an image ({what}, {format_size(size)}), not text"
    details = {
        "artifactId": artifact_id,
        "mimeType": mime_type,
        "width": pixels[0] if pixels else None,
        "height": pixels[1] if pixels else None,
        "bytes": size,
    }
    return {"text": text, "details": details}

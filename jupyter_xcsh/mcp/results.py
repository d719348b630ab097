"""A tool's REST body as an MCP ``CallToolResult``, and domain errors as error results.

This is the one place the MCP transport turns a tool's outcome into what a model sees:
``content`` is the tool's text (plus images and links to artifacts), ``structuredContent`` the
REST body unchanged, ``isError`` the result's own flag. A domain error (bad arguments, a missing
notebook, a refusal) becomes an error *result* carrying the REST message and status, as REST
answers it with a 4xx: the model reads it and corrects itself; it is not a protocol fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import XcshError, status_for

__all__ = ["call_result", "error_result", "text_result"]

#: Versions that know ``structuredContent`` and ``resource_link`` content (from 2025-06-18).
_STRUCTURED = ("2025-06-18", "2025-11-25")


def call_result(body: dict[str, Any], version: str) -> dict[str, Any]:
    """The ``tools/call`` result for a tool's REST ``body``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": str(body.get("text", ""))}]
    for image in body.get("images", []):
        if isinstance(image, dict) and image.get("data") and not image.get("omitted"):
            content.append(
                {"type": "image", "data": image["data"], "mimeType": image.get("mimeType")}
            )
    structured = version in _STRUCTURED
    if structured:
        content.extend(_artifact_links(body))
    result: dict[str, Any] = {"content": content, "isError": bool(body.get("isError", False))}
    if structured:
        result["structuredContent"] = body
    return result


def error_result(error: XcshError, version: str) -> dict[str, Any]:
    """The error result of a call the tool refused: the REST message, body and status."""
    body = {**error.body(), "status": status_for(error)}
    return text_result(error.message, version, structured=body)


def text_result(
    text: str, version: str, *, structured: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An error result made of one text (an unknown tool, arguments that are not an object)."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if version in _STRUCTURED:
        result["structuredContent"] = structured if structured is not None else {"message": text}
    return result


def _artifact_links(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A ``resource_link`` per artifact the body names (full output, per cell, images)."""
    seen: set[str] = set()
    text = "; read it with the artifact tool"
    candidates: list[tuple[Any, str, str]] = [
        (body.get("artifactId"), "text/plain", "Full output of the call" + text)
    ]
    for cell in body.get("cells", []):
        if isinstance(cell, dict):
            title = cell.get("title") or f"cell {cell.get('index', 0) + 1}"
            candidates.append(
                (cell.get("artifactId"), "text/plain", f"Full output of {title}{text}")
            )
    for k, image in enumerate(body.get("images", []), 1):
        if isinstance(image, dict):
            mime = str(image.get("mimeType") or "application/octet-stream")
            candidates.append((image.get("artifactId"), mime, f"Image {k}, full size"))
    for artifact_id, mime, description in candidates:
        if isinstance(artifact_id, str) and artifact_id not in seen:
            seen.add(artifact_id)
            yield {
                "type": "resource_link",
                "uri": f"artifact://{artifact_id}",
                "name": artifact_id,
                "mimeType": mime,
                "description": description,
            }

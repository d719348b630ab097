"""The notebook tool's ``read`` view: a bounded, agent-friendly text rendering of cells (pure).

Images, HTML and other rich outputs are described (type and size), never inlined, and the whole
view stops at a cell boundary once its character budget is spent, so a huge notebook cannot
flood the caller. A read with ``images`` collects the image outputs of the cells it shows
(``ReadImage``) and leaves a placeholder (``IMAGE_MARK``) where each is summarised: the tool
budgets them as the python tool's images and puts each image's line there.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.notebook.edit.cells import NotebookRequest, locate_cell
from jupyter_xcsh.notebook.model import CellDocument, notebook_revision, source_hash
from jupyter_xcsh.notebook.stale import stale_cells
from jupyter_xcsh.outputs.imageinfo import IMAGE_FORMATS, image_size
from jupyter_xcsh.outputs.images import pick_image
from jupyter_xcsh.outputs.sink import sanitize
from jupyter_xcsh.outputs.sizes import format_size

_TEXT_MIMES = ("text/plain", "text/markdown", "text/latex")
_IMAGE_MIMES = frozenset(f.mime_type for f in IMAGE_FORMATS)

#: Around the number of an image in a read's text: private-use characters, which no cell's
#: text is expected to hold (a placeholder a clipped summary cut in two is dropped).
IMAGE_MARK = ("\ue000", "\ue001")


@dataclass(frozen=True)
class ReadImage:
    """An image output of a cell a read shows: the cell, the MIME type, the bundle's value."""

    cell_index: int
    mime_type: str
    value: Any


@dataclass(frozen=True)
class ReadLimits:
    """Character budgets of the read view (from ``XcshSettings``)."""

    max_chars: int = 20000
    max_source_chars: int = 4000
    max_output_chars: int = 1500


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def clip_middle(text: str, limit: int) -> str:
    """Keep the head and tail of ``text`` within ``limit`` characters, saying what was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 20)
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    return f"{head}\n… [{len(text) - len(head) - len(tail)} characters omitted] …\n{tail}"


def _png_size(data: str) -> str:
    """Describe a base64 PNG by byte size and, when the header is readable, pixel size."""
    try:
        head = base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=False)
    except (binascii.Error, ValueError):
        head = b""
    b64 = data.replace("\n", "")
    size = format_size(len(b64) * 3 // 4 - (len(b64) - len(b64.rstrip("="))))
    pixels = image_size(head)
    if pixels is not None:
        return f"{size}, {pixels[0]}x{pixels[1]}"
    return size


def _describe_bundle(bundle: dict[str, Any], images: ImageSink | None = None) -> list[str]:
    """Render a MIME bundle: plain text shown, rich types described and never inlined.

    With ``images``, the bundle's image (one figure, whatever formats it comes in) goes there
    and a placeholder stands in its place.
    """
    lines: list[str] = []
    shown = next((m for m in _TEXT_MIMES if m in bundle), None)
    picked = pick_image(bundle) if images is not None else None
    if images is not None and picked is not None:
        lines.append(images(*picked))
    for mime, value in bundle.items():
        if mime == shown or (picked is not None and mime in _IMAGE_MIMES):
            continue
        if mime == "image/png" and isinstance(value, str):
            lines.append(f"[{mime} {_png_size(value)} not shown]")
        else:
            size = len(_text(value)) if isinstance(value, (str, list)) else len(str(value))
            lines.append(f"[{mime} {format_size(size)} not shown]")
    if shown is not None:
        lines.insert(0, _text(bundle[shown]).rstrip("\n"))
    return lines


#: Takes an image output (MIME type, value) and returns the placeholder standing for it.
ImageSink = Callable[[str, Any], str]


def describe_output(output: Any, images: ImageSink | None = None) -> str:
    """Describe one nbformat output as text for an agent (``images``: see ``_describe_bundle``)."""
    if not isinstance(output, dict):
        return "[unreadable output]"
    kind = output.get("output_type")
    if kind == "stream":
        return f"[{output.get('name', 'stream')}] " + _text(output.get("text")).rstrip("\n")
    if kind == "error":
        return f"[error] {output.get('ename', 'Error')}: {output.get('evalue', '')}"
    if kind in ("execute_result", "display_data"):
        data = output.get("data")
        body = _describe_bundle(data, images) if isinstance(data, dict) else []
        return f"[{kind}] " + "\n".join(body) if body else f"[{kind}] (empty)"
    return f"[{kind}]"


def render_cell(
    index: int,
    cell: Any,
    limits: ReadLimits,
    stale: str | None = None,
    images: list[ReadImage] | None = None,
) -> str:
    """Render one cell: a header line, its source, and a summary of its outputs.

    ``stale``: why the cell's outputs are stale (said in the header), if they are.
    ``images``: where the cell's image outputs go (a placeholder each in the summary).
    """
    if not isinstance(cell, dict):
        return f"--- cell {index} · unreadable ---"
    cell_type = cell.get("cell_type", "unknown")
    header = f"--- cell {index} · {cell_type}"
    if isinstance(cell.get("id"), str):
        header += f" · id {cell['id']}"
    if cell_type == "code":
        count = cell.get("execution_count")
        header += f" · [{count if count is not None else ' '}]"
    if stale is not None:
        header += f" · stale: {stale}"
    parts = [header + " ---", clip_middle(_text(cell.get("source")), limits.max_source_chars)]
    outputs = cell.get("outputs")
    if isinstance(outputs, list) and outputs:
        sink = None
        if images is not None:
            found = images

            def sink(mime_type: str, value: Any) -> str:
                found.append(ReadImage(index, mime_type, value))
                return f"{IMAGE_MARK[0]}{len(found) - 1}{IMAGE_MARK[1]}"

        summary = "\n".join(describe_output(o, sink) for o in outputs)
        parts.append(f">>> outputs ({len(outputs)}):")
        parts.append(clip_middle(sanitize(summary), limits.max_output_chars))
    return "\n".join(parts)


def read_view(
    document: CellDocument,
    request: NotebookRequest,
    limits: ReadLimits,
    code_of: Callable[[int], str | None] | None = None,
) -> dict[str, Any]:
    """Return the ``{"text", "details"}`` result of a read request.

    ``details`` carries the notebook's ``revision``, each shown cell's ``sourceHash`` and, as
    ``sourceHash``, the first shown cell's (the cell a read by index or id addresses), and the
    stale code cells (``staleCells``; see ``stale.py``, ``code_of`` the kernel's log). With
    ``request.images``, also ``images``: the image outputs of the cells shown (``ReadImage``),
    each numbered by its placeholder in the text.
    """
    keys = document.cell_keys()
    total = len(keys)
    path = request.notebook_path
    start = 0
    if (
        request.cell_id is not None
        or request.execution_count is not None
        or (request.cell_index or 0) > 0
    ):
        start = locate_cell(document, request)
    end = total if request.end_index is None else min(request.end_index, total)
    if end < start:
        raise InvalidRequestError(f"end_index {end} is before the first cell read ({start})")
    budget = request.max_chars or limits.max_chars
    stale = stale_cells(document.cells, code_of)
    major, minor = document.nbformat
    blocks: list[str] = []
    cells: list[dict[str, Any]] = []
    used = 0
    stop = end
    images: list[ReadImage] | None = [] if request.images else None
    for index in range(start, end):
        cell = document.cells[index]
        seen = len(images) if images is not None else 0
        block = render_cell(index, cell, limits, stale.get(index), images)
        if blocks and used + len(block) + 1 > budget:
            stop = index
            if images is not None:
                del images[seen:]  # the cell is not shown: neither are its images
            break
        blocks.append(block)
        used += len(block) + 1
        cells.append(_cell_entry(index, cell, stale.get(index)))
    shown = f"cells {start}-{stop - 1}" if stop > start else "no cells"
    heading = f"Notebook {path} · nbformat {major}.{minor} · {total} cells · showing {shown}"
    truncated = stop < end
    text = "\n".join([heading, *blocks])
    if truncated:
        text += (
            f"\n[Showing cells {start}-{stop - 1} of {total} ({budget} character budget). "
            f"Continue with cell_index={stop}]"
        )
    details = {
        "action": "read",
        "totalCells": total,
        "startIndex": start,
        "endIndex": stop,
        "truncated": truncated,
        "nbformat": f"{major}.{minor}",
        "cells": cells,
        "sourceHash": cells[0]["sourceHash"] if cells else None,
        "revision": notebook_revision(keys),
        "staleCells": list(stale),
    }
    view: dict[str, Any] = {"text": text, "details": details}
    if images is not None:
        view["images"] = images
    return view


def _cell_entry(index: int, cell: Any, stale: str | None = None) -> dict[str, Any]:
    cell = cell if isinstance(cell, dict) else {}
    entry: dict[str, Any] = {
        "index": index,
        "cellId": cell.get("id") if isinstance(cell.get("id"), str) else None,
        "cellType": cell.get("cell_type", "unknown"),
        "sourceHash": source_hash(cell.get("source")),
    }
    if cell.get("cell_type") == "code":
        count = cell.get("execution_count")
        entry["executionCount"] = count if isinstance(count, int) else None
        if stale is not None:
            entry["stale"] = True
            entry["staleReason"] = stale
    return entry

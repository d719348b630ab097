"""Images an execution displayed: each kept whole as an artifact, a few inlined for a model.

A model takes in images of bounded size, and a result holding ten full-size figures would
exceed what it can read at once; yet nothing should be lost. So every image is saved as an
artifact as it arrives (``capture``), and when the call ends ``budget_images`` decides which
are inlined in the result: at most ``max_count``, each at most ``max_edge`` pixels on its long
side, ``max_pixels`` in area and ``max_bytes`` in size, all together at most
``max_total_bytes``. An image past a size limit is downscaled when Pillow is importable (the
optional ``images`` extra), else left out; the result's text names every image, inlined or
left out with its ``artifact://`` link. Notebook outputs are never touched here.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import io
import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.outputs.imageinfo import (
    IMAGE_FORMATS,
    ImageFormat,
    image_format,
    image_size,
    svg_size,
)
from jupyter_xcsh.outputs.sizes import format_size

__all__ = [
    "CapturedImage",
    "ImageCapture",
    "ImageLimits",
    "ImageResult",
    "as_base64",
    "budget_images",
    "pick_image",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageLimits:
    """What a result may inline (docs/developers/contract.md §7.5): file bytes, not base64."""

    max_edge: int = 1568
    max_pixels: int = 1_150_000
    max_bytes: int = 1024 * 1024
    max_count: int = 4
    max_total_bytes: int = 4 * 1024 * 1024
    #: Larger images are never decoded for downscaling (memory: ~4 bytes a pixel).
    max_decode_pixels: int = 50_000_000

    def fits(self, width: int, height: int, size: int) -> bool:
        """Whether an image of this size may be inlined as it is."""
        return (
            max(width, height) <= self.max_edge
            and width * height <= self.max_pixels
            and size <= self.max_bytes
        )

    def scale(self, width: int, height: int) -> float:
        """The factor (at most 1) that brings an image within the pixel limits."""
        return min(
            1.0,
            self.max_edge / max(width, height),
            math.sqrt(self.max_pixels / (width * height)),
        )


def pick_image(bundle: dict[str, Any]) -> tuple[str, Any] | None:
    """The image of a display bundle: its first MIME type in ``IMAGE_FORMATS`` order, or None.

    A bundle holding the same figure as PNG and SVG is one image, not two.
    """
    for fmt in IMAGE_FORMATS:
        if fmt.mime_type in bundle:
            return fmt.mime_type, bundle[fmt.mime_type]
    return None


@dataclass(frozen=True)
class CapturedImage:
    """One image a cell displayed, as kept: its artifact and what its header says."""

    cell_index: int
    mime_type: str
    size: int
    width: int | None
    height: int | None
    artifact_id: str | None
    artifact_path: str | None
    #: The file, kept in memory only when it could not be saved as an artifact.
    data: bytes | None = None

    def describe(self) -> dict[str, Any]:
        """The image's fields as streamed and reported to the lab (no data)."""
        return {
            "mimeType": self.mime_type,
            "width": self.width,
            "height": self.height,
            "bytes": self.size,
            "artifactId": self.artifact_id,
            "artifactPath": self.artifact_path,
        }


def as_base64(mime_type: str, value: Any) -> str:
    """A bundle's image value as base64 (an SVG's text is encoded; base64 is left as it is)."""
    text = "".join(value) if isinstance(value, list) else str(value)
    fmt = image_format(mime_type)
    if fmt is not None and not fmt.raster:
        return base64.b64encode(text.encode("utf-8", "replace")).decode("ascii")
    return "".join(text.split())


def _decode(fmt: ImageFormat, value: Any) -> bytes | None:
    text = "".join(value) if isinstance(value, list) else value
    if not isinstance(text, str):
        return None
    if not fmt.raster:
        return text.encode("utf-8", "replace")
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None


class ImageCapture:
    """Save displayed images as artifacts of one tool (``python``, ``run``) as they arrive."""

    def __init__(self, store: ArtifactStore | None, tool: str = "python") -> None:
        self.store = store
        self.tool = tool

    def capture(self, cell_index: int, mime_type: str, value: Any) -> CapturedImage | None:
        """Keep one image (base64, or text for SVG); None when it cannot be decoded at all."""
        fmt = image_format(mime_type)
        if fmt is None:
            return None
        data = _decode(fmt, value)
        if data is None:
            return None
        size = image_size(data) if fmt.raster else svg_size(data)
        artifact_id = artifact_path = None
        kept: bytes | None = data
        if self.store is not None:
            try:
                writer = self.store.save(self.tool, fmt.extension, data)
            except OSError as e:
                log.warning("Could not save an image artifact, keeping it in memory: %s", e)
            else:
                artifact_id, artifact_path, kept = writer.id, writer.api_path, None
        return CapturedImage(
            cell_index=cell_index,
            mime_type=fmt.mime_type,
            size=len(data),
            width=size[0] if size else None,
            height=size[1] if size else None,
            artifact_id=artifact_id,
            artifact_path=artifact_path,
            data=kept,
        )


@dataclass(frozen=True)
class ImageResult:
    """One image as a result reports it: inlined (``data``) or left out with the reason."""

    number: int
    image: CapturedImage
    mime_type: str
    width: int | None
    height: int | None
    size: int
    data: str | None = None
    #: Why it is not inlined: ``budget``, or ``svg`` (not pixels a model reads); None if inlined.
    omitted: str | None = None
    #: Inlined downscaled or re-encoded, not as displayed (the artifact holds the original).
    reduced: bool = False

    @property
    def cell_index(self) -> int:
        """The cell that displayed it."""
        return self.image.cell_index

    def to_json(self) -> dict[str, Any]:
        """The entry of ``images[]``: base64 ``data`` only when inlined."""
        body: dict[str, Any] = {
            "mimeType": self.mime_type,
            "width": self.width,
            "height": self.height,
            "bytes": self.size,
            "artifactId": self.image.artifact_id,
            "omitted": self.omitted is not None,
        }
        if self.data is not None:
            body["data"] = self.data
        if self.reduced:
            body["original"] = {
                "mimeType": self.image.mime_type,
                "width": self.image.width,
                "height": self.image.height,
                "bytes": self.image.size,
            }
        return body

    def marker(self) -> str:
        """The line of the result's text naming this image."""
        artifact = self.image.artifact_id
        link = f": artifact://{artifact}" if artifact else ""
        if self.omitted is not None:
            return f"[image {self.number} omitted ({self.omitted}){link}]"
        fmt = image_format(self.mime_type)
        name = fmt.name if fmt else self.mime_type
        text = f"[image {self.number}: {self.width}x{self.height} {name}, {format_size(self.size)}"
        if self.reduced:
            original = self.image
            if (original.width, original.height) != (self.width, self.height):
                text += f", downscaled from {original.width}x{original.height}"
            else:
                original_fmt = image_format(original.mime_type)
                original_name = original_fmt.name if original_fmt else original.mime_type
                text += f", re-encoded from {original_name} {format_size(original.size)}"
            if artifact:
                text += f"; original: artifact://{artifact}"
        return text + "]"


async def budget_images(
    images: Sequence[CapturedImage],
    store: ArtifactStore | None,
    limits: ImageLimits | None = None,
) -> list[ImageResult]:
    """Decide, in display order, which images a result inlines (downscaling in a thread)."""
    if not images:
        return []
    return await asyncio.to_thread(_budget, list(images), store, limits or ImageLimits())


def _budget(
    images: list[CapturedImage], store: ArtifactStore | None, limits: ImageLimits
) -> list[ImageResult]:
    results: list[ImageResult] = []
    inlined = total = 0
    for number, image in enumerate(images, 1):
        result = None
        if image.mime_type == "image/svg+xml":
            omitted = "svg"
        elif inlined >= limits.max_count:
            omitted = "budget"
        else:
            omitted = "budget"
            result = _inline(number, image, store, limits, room=limits.max_total_bytes - total)
        if result is None:
            result = ImageResult(
                number,
                image,
                image.mime_type,
                image.width,
                image.height,
                image.size,
                omitted=omitted,
            )
        else:
            inlined += 1
            total += result.size
        results.append(result)
    return results


def _inline(
    number: int,
    image: CapturedImage,
    store: ArtifactStore | None,
    limits: ImageLimits,
    room: int,
) -> ImageResult | None:
    """The image inlined as it is, or downscaled; None when it cannot be within the budget."""
    width, height = image.width, image.height
    fits = width is not None and height is not None and limits.fits(width, height, image.size)
    if fits and image.size > room:
        return None
    if not fits and (width is None or height is None or not _pillow_available()):
        return None  # a size we cannot read or change is not inlined
    data = _read(image, store)
    if data is None:
        return None
    if fits:
        encoded = base64.b64encode(data).decode("ascii")
        return ImageResult(number, image, image.mime_type, width, height, image.size, encoded)
    assert width is not None and height is not None
    if width * height > limits.max_decode_pixels:
        return None
    small = _downscale(data, limits, min(room, limits.max_bytes))
    if small is None:
        return None
    payload, mime_type, new_width, new_height = small
    encoded = base64.b64encode(payload).decode("ascii")
    return ImageResult(
        number, image, mime_type, new_width, new_height, len(payload), encoded, reduced=True
    )


def _read(image: CapturedImage, store: ArtifactStore | None) -> bytes | None:
    if image.data is not None:
        return image.data
    if store is None or image.artifact_id is None:
        return None
    try:
        with store.open(image.artifact_id) as file:
            return file.read()
    except Exception as e:  # pruned meanwhile, or unreadable: the image is only linked
        log.warning("Could not read image artifact %s: %s", image.artifact_id, e)
        return None


def _pillow_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


#: Encoding attempts before a downscaled image that stays too large is given up.
MAX_ATTEMPTS = 6


def _downscale(
    data: bytes, limits: ImageLimits, max_bytes: int
) -> tuple[bytes, str, int, int] | None:
    """Resize an image within ``limits`` and ``max_bytes``; (data, mime, w, h) or None.

    PNG, GIF and WebP become PNG, JPEG stays JPEG; a PNG still too large becomes JPEG (on
    white, for transparency), then shrinks by a quarter per attempt.
    """
    from PIL import Image

    try:
        with warnings.catch_warnings():
            # Sizes were checked against max_decode_pixels already.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                opened.seek(0)  # the first frame of an animation
                is_jpeg = opened.format == "JPEG"
                scale = limits.scale(*opened.size)
                target = _scaled(opened.size, scale)
                with contextlib.suppress(Exception):
                    opened.draft("RGB", target)  # JPEG: decode at a reduced size, much faster
                source = opened.convert("RGBA" if _has_alpha(opened) else "RGB")
    except (OSError, ValueError, Image.DecompressionBombError, EOFError) as e:
        log.info("Could not downscale an image: %s", e)
        return None
    jpeg = is_jpeg
    for _ in range(MAX_ATTEMPTS):
        small = source.resize(target, Image.Resampling.LANCZOS)
        out = io.BytesIO()
        if jpeg:
            if small.mode != "RGB":
                background = Image.new("RGB", small.size, "white")
                background.paste(small, mask=small.getchannel("A"))
                small = background
            small.save(out, "JPEG", quality=85, optimize=True)
        else:
            small.save(out, "PNG", optimize=True)
        payload = out.getvalue()
        if len(payload) <= max_bytes:
            return payload, "image/jpeg" if jpeg else "image/png", small.width, small.height
        if jpeg:
            target = _scaled(target, 0.75)
        jpeg = True
    return None


def _scaled(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return max(1, math.floor(size[0] * scale)), max(1, math.floor(size[1] * scale))


def _has_alpha(image: Any) -> bool:
    return bool(image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info)

"""Image formats a display bundle may hold, and pixel sizes read from their headers (pure).

The sizes come from the first bytes of the file as each format lays them out (PNG's IHDR,
JPEG's start-of-frame, GIF's screen descriptor, WebP's VP8/VP8L/VP8X chunk), so budgeting an
image for a model needs no imaging library; only downscaling does.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

__all__ = ["IMAGE_FORMATS", "ImageFormat", "image_format", "image_size", "svg_size"]


@dataclass(frozen=True)
class ImageFormat:
    """One image MIME type: its name in texts, its file extension, whether it is pixels."""

    mime_type: str
    name: str
    extension: str
    raster: bool = True


#: The image types of a display bundle, most preferred first (the first one present is used).
IMAGE_FORMATS: tuple[ImageFormat, ...] = (
    ImageFormat("image/png", "PNG", "png"),
    ImageFormat("image/jpeg", "JPEG", "jpg"),
    ImageFormat("image/gif", "GIF", "gif"),
    ImageFormat("image/webp", "WEBP", "webp"),
    ImageFormat("image/svg+xml", "SVG", "svg", raster=False),
)

_BY_MIME = {f.mime_type: f for f in IMAGE_FORMATS}

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: JPEG start-of-frame markers (every SOFn but DHT C4, JPG C8 and DAC CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: JPEG markers that stand alone, without a length (TEM, RSTn, SOI).
_JPEG_BARE = frozenset([0x01, *range(0xD0, 0xD9)])


def image_format(mime_type: str) -> ImageFormat | None:
    """The format of an image MIME type, None for anything else."""
    return _BY_MIME.get(mime_type)


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height in pixels of a PNG, JPEG, GIF or WebP file; None if unreadable."""
    if data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR" and len(data) >= 24:
        return _positive(*struct.unpack(">II", data[16:24]))
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return _positive(*struct.unpack("<HH", data[6:10]))
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return _positive(width, height)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _JPEG_BARE:
            i += 2
            continue
        if marker in _JPEG_SOF:
            if i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return _positive(width, height)
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None
        i += 2 + length
    return None


_SVG_TAG = re.compile(rb"<svg\b[^>]*>", re.IGNORECASE)
_LENGTH = r"""\s{name}\s*=\s*["']\s*([0-9]+(?:\.[0-9]+)?)\s*(px|pt)?\s*["']"""
_SVG_WIDTH = re.compile(_LENGTH.format(name="width").encode(), re.IGNORECASE)
_SVG_HEIGHT = re.compile(_LENGTH.format(name="height").encode(), re.IGNORECASE)


def svg_size(data: bytes) -> tuple[int, int] | None:
    """The size an SVG declares on its root element in px (or pt), rounded; else None."""
    tag = _SVG_TAG.search(data[:4096])
    if tag is None:
        return None
    sizes = []
    for pattern in (_SVG_WIDTH, _SVG_HEIGHT):
        match = pattern.search(tag[0])
        if match is None:
            return None
        value = float(match[1]) * (4 / 3 if match[2] and match[2].lower() == b"pt" else 1)
        sizes.append(round(value))
    return _positive(sizes[0], sizes[1])

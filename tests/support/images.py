"""Images for the tests, built with zlib alone (here, and as code sent to a kernel)."""

from __future__ import annotations

import base64
import inspect
import os
import struct
import textwrap
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png(width: int, height: int, seed: int = 0, level: int = 6, noise: bool = False) -> bytes:
    """An RGB PNG of a diagonal gradient (or random pixels), built with zlib alone."""
    if noise:
        raw = b"".join(b"\0" + os.urandom(width * 3) for _ in range(height))
    else:
        base = bytes((i // 3 + seed) % 256 for i in range(width * 3 + 768))
        rows = (base[(y % 256) * 3 : (y % 256) * 3 + width * 3] for y in range(height))
        raw = b"".join(b"\0" + row for row in rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(raw, level)
    return PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def show(data: bytes, mime: str = "image/png") -> None:
    """Display an image as a raw bundle (in a kernel)."""
    from IPython.display import display

    value = data.decode() if mime == "image/svg+xml" else base64.b64encode(data).decode()
    display({mime: value, "text/plain": "<image>"}, raw=True)


#: Python source defining ``png`` and ``show`` above in a kernel, which needs no imaging
#: library for them.
KERNEL_HELPERS = (
    "import base64, hashlib, os, struct, zlib\n"
    f"PNG_SIGNATURE = {PNG_SIGNATURE!r}\n"
    + textwrap.dedent(inspect.getsource(png))
    + textwrap.dedent(inspect.getsource(show))
)


#: A 3x2 GIF header (enough for the size reader) and a 1x1 image.
GIF_3x2 = b"GIF89a\x03\x00\x02\x00\x80\x00\x00" + b"\x00" * 6 + b";"

#: The start of a baseline JPEG of 640x480: SOI, an APP0 segment, then SOF0.
JPEG_640x480 = (
    b"\xff\xd8"
    + b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + b"\xff\xc0\x00\x11\x08"
    + struct.pack(">HH", 480, 640)
    + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
)

#: WebP headers of the three kinds: lossy (VP8), lossless (VP8L), extended (VP8X).
WEBP_VP8_300x200 = (
    b"RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00"
    + b"\x00\x00\x00\x9d\x01\x2a"
    + struct.pack("<HH", 300, 200)
)
WEBP_VP8L_300x200 = b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f" + (
    (300 - 1) | ((200 - 1) << 14)
).to_bytes(4, "little")
WEBP_VP8X_300x200 = (
    b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00"
    + (300 - 1).to_bytes(3, "little")
    + (200 - 1).to_bytes(3, "little")
)

SVG_200x100 = (
    '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="150pt" '
    'height="75pt" viewBox="0 0 150 75"><rect width="10" height="10"/></svg>\n'
)

"""Give memory freed after a large call back to the system (glibc's ``malloc_trim``).

A call with megabytes of output allocates and frees many buffers of about a message's size
(decoded kernel messages, their text, its UTF-8 form). glibc keeps freed memory in its heaps for
later allocations, so the server's resident size stays at its peak long after the call: on a
JupyterHub pod with a memory limit, that is memory no other process gets. ``malloc_trim(0)``
returns the free pages to the system. Elsewhere (musl, macOS, Windows) it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform
from collections.abc import Callable

__all__ = ["TRIM_AFTER_BYTES", "release_freed_memory"]

log = logging.getLogger(__name__)

#: Output of one call past which the server trims its heap once the call is done.
TRIM_AFTER_BYTES = 4 * 1024 * 1024


def _load_malloc_trim() -> Callable[[int], int] | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _load_malloc_trim()


def release_freed_memory() -> bool:
    """Return the heap's free pages to the system; whether it could (glibc only)."""
    if _malloc_trim is None:
        return False
    try:
        _malloc_trim(0)
    except Exception:  # never fail the call it follows
        log.debug("xcsh: malloc_trim failed", exc_info=True)
        return False
    return True

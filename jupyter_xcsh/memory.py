"""Give memory freed after a large call back to the system (glibc's ``malloc_trim``).

A call with megabytes of output allocates and frees many buffers of about a message's size
(decoded kernel messages, their text, its UTF-8 form). glibc keeps freed memory in its heaps for
later allocations, so the server's resident size stays at its peak long after the call: on a
JupyterHub pod with a memory limit, that is memory no other process gets. ``malloc_trim(0)``
returns the free pages to the system. Elsewhere (musl, macOS, Windows) it is a no-op.

glibc also gives threads heaps of their own ("arenas", up to 8 per core), and the server's
worker threads (saves, parses, reads of large notebooks) each leave free memory in theirs,
which a later allocation on another thread does not reuse: after edits of a 21 MB notebook the
server kept ~66 MB where the document itself is ~50 MB. ``limit_heap_arenas`` caps their number
(``mallopt(M_ARENA_MAX)``, ``XcshSettings.heap_arenas``): with 2, ~48 MB
(``bench/notebook_edit.py``).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import platform
from collections.abc import Callable
from typing import Any

__all__ = [
    "TRIM_AFTER_BYTES",
    "TRIM_DELAY",
    "TrimSoon",
    "freeze_startup_heap",
    "libc_function",
    "limit_heap_arenas",
    "release_freed_memory",
]

log = logging.getLogger(__name__)

#: Output of one call past which the server trims its heap once the call is done.
TRIM_AFTER_BYTES = 4 * 1024 * 1024
#: Seconds ``TrimSoon`` waits: the call that asked has answered, and the trims asked meanwhile
#: are one.
TRIM_DELAY = 0.1


def libc_function(name: str, *argtypes: Any, glibc: bool = False) -> Callable[..., int] | None:
    """The C library's function ``name`` (returning an int), on Linux; None elsewhere.

    ``glibc``: only where the C library is glibc (its own functions, not musl's).
    """
    if platform.system() != "Linux":
        return None
    if glibc and platform.libc_ver()[0] != "glibc":
        return None
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    return function


_malloc_trim = libc_function("malloc_trim", ctypes.c_size_t, glibc=True)
_mallopt = libc_function("mallopt", ctypes.c_int, ctypes.c_int, glibc=True)
#: ``mallopt``'s parameter for the most arenas the process may have.
_M_ARENA_MAX = -8


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


def freeze_startup_heap() -> int:
    """Collect, then keep every object alive now out of later collections; how many are kept.

    The objects a server holds from its start (modules, classes, the applications, their
    configuration: about 200,000 with JupyterLab) live as long as the process, yet each full
    collection walked them all. ``gc.freeze`` moves them to the collector's permanent
    generation: freed by reference counting as before, never walked again. The collection
    first: garbage alive at the freeze would never be reclaimed.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def limit_heap_arenas(count: int) -> int | None:
    """Let the process's allocations use at most ``count`` glibc arenas; the limit set, or None.

    Nothing is set when ``count`` is 0, where the C library is not glibc, or when the operator
    chose through the ``MALLOC_ARENA_MAX`` environment variable (which glibc read at start).
    Arenas threads already have stay; new threads share those up to the limit.
    """
    if count <= 0 or _mallopt is None or "MALLOC_ARENA_MAX" in os.environ:
        return None
    try:
        if _mallopt(_M_ARENA_MAX, count) != 1:
            return None
    except Exception:  # never fail the server's start
        log.debug("xcsh: mallopt failed", exc_info=True)
        return None
    return count


class TrimSoon:
    """Trims the heap on a worker thread shortly after it is asked to, once for many asks.

    ``malloc_trim`` walks the heap holding its lock: run at once after a large save, it ran
    while the server answered the call and made the loop's allocations wait (~0.5 ms of an
    edit of a 21 MB notebook). Asked again before it runs, it runs once.
    """

    def __init__(self, delay: float = TRIM_DELAY) -> None:
        self.delay = delay
        self._pending = False

    def ask(self) -> None:
        """Trim ``delay`` seconds from now (on the running loop), unless a trim is due already."""
        if self._pending:
            return
        loop = asyncio.get_running_loop()
        self._pending = True
        loop.call_later(self.delay, self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending = False
        loop.run_in_executor(None, release_freed_memory)

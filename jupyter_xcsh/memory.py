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

Freeing itself holds the GIL: a container's last reference gone, everything it holds is freed
in one C call, whichever thread lets it go. ``release_in_slices`` takes a large value apart a
slice at a time on a worker thread, handing the GIL over between slices (``hand_over``), so the
event loop's thread waits for none of it.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "TRIM_AFTER_BYTES",
    "TRIM_DELAY",
    "TrimSoon",
    "freeze_startup_heap",
    "hand_over",
    "libc_function",
    "limit_heap_arenas",
    "release_freed_memory",
    "release_in_slices",
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


def hand_over() -> None:
    """Let a thread waiting for the GIL take it now: for a worker thread, between two slices.

    A thread that needs the GIL gets it once the holder drops it, which a busy holder does only
    every switch interval (5 ms), and later still on a loaded machine, where the waiting thread
    is not run at once: the event loop's thread waited 50-90 ms at times while a worker thread
    saved, signed and kept a cell with 50 MB of outputs, a MiB at a time
    (``tests/api/notebook/test_notebook_edit_loop.py``). ``time.sleep(0)`` drops it at once.
    """
    time.sleep(0)


#: Items freed at once when ``release_in_slices`` empties a list (~0.2 ms of strings).
RELEASE_SLICE = 4096


def release_in_slices(box: list[Any]) -> None:
    """Free the values ``box`` holds (taken out of it), a slice at a time; for a worker thread.

    A cell with 50 MB of outputs parsed from lines is half a million strings in one list: its
    last reference dropped on the event loop held the loop 60-130 ms (on a loaded 2-core
    machine) in one deallocation, and dropped on another thread it held the GIL as long. Here
    lists are emptied from their end ``RELEASE_SLICE`` items at a time and dicts cleared, their
    containers taken apart in turn. A container someone else also holds (an edited cell's
    outputs, shared with the cell that replaces it) is left whole: only its reference goes.
    ``box`` must hold the only references to its values (the caller keeps none).
    """
    pending = [box.pop() for _ in range(len(box))]
    while pending:
        item = pending.pop()
        # ``item`` and this call's argument: any more is a holder elsewhere.
        if sys.getrefcount(item) > 2:
            continue
        if isinstance(item, list):
            while item:
                chunk = item[-RELEASE_SLICE:]
                del item[-RELEASE_SLICE:]
                pending.extend(_owned_containers(chunk))
                del chunk
                hand_over()
        elif isinstance(item, dict):
            pending.extend(_owned_containers(list(item.values())))
            item.clear()
        del item


def _owned_containers(values: list[Any]) -> list[Any]:
    """The lists and dicts among ``values`` that nothing but ``values`` holds."""
    # Each: its place in ``values``, the loop's name and the call's argument.
    return [v for v in values if isinstance(v, (list, dict)) and sys.getrefcount(v) == 3]


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

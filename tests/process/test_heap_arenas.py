"""The server's glibc heaps: how many arenas its threads may use (``memory.limit_heap_arenas``).

Each check runs in a Python process of its own (the limit is process-wide), whose threads
allocate at the same time; glibc's ``malloc_info`` then lists the heaps the process has.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from jupyter_xcsh.memory import limit_heap_arenas

#: Starts threads that allocate together, then prints how many heaps glibc made.
PROBE = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile, threading
    from jupyter_xcsh.memory import limit_heap_arenas
    print("limit", limit_heap_arenas(int(sys.argv[1])))
    start = threading.Barrier(8)
    def allocate():
        start.wait()
        kept = [bytearray(64 * 1024) for _ in range(200)]
        start.wait()
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    path = os.path.join(tempfile.mkdtemp(), "info.xml")
    stream = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print("heaps", open(path).read().count("<heap nr="))
    """
)


def _heaps(count: int, env: dict[str, str] | None = None) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(count)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout.split("\n")
    return out[0].removeprefix("limit "), int(out[1].removeprefix("heaps "))


def _env_without_arena_max() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}


@pytest.mark.process
def test_threads_share_at_most_the_limit_of_heaps():
    env = _env_without_arena_max()
    limit, limited = _heaps(2, env)
    assert limit == "2"
    assert limited <= 2
    limit, unlimited = _heaps(0, env)  # 0: glibc's own default (8 per core)
    assert limit == "None"
    assert unlimited > limited


@pytest.mark.process
def test_an_operators_malloc_arena_max_is_left_alone():
    limit, heaps = _heaps(1, {**_env_without_arena_max(), "MALLOC_ARENA_MAX": "3"})
    assert limit == "None"
    assert heaps <= 3


def test_zero_sets_nothing():
    assert limit_heap_arenas(0) is None


async def test_trims_asked_together_run_once_after_the_answer(monkeypatch):
    """``TrimSoon``: the heap is trimmed after the delay (the call has answered by then), once
    for every ask made before it ran; an ask after that trims again."""
    import asyncio

    from jupyter_xcsh import memory

    trims: list[int] = []
    monkeypatch.setattr(memory, "_malloc_trim", trims.append)
    trim = memory.TrimSoon(delay=0.05)
    for _ in range(5):
        trim.ask()
    assert trims == []  # not while the call that asked is answered
    for _ in range(200):
        if trims:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert trims == [0]
    trim.ask()
    for _ in range(200):
        if len(trims) == 2:
            break
        await asyncio.sleep(0.01)
    assert trims == [0, 0]

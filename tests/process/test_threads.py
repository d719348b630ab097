"""The test process ends even when a server left AnyIO worker threads behind
(``tests.support.threads``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

#: A process whose event loop closes while the task that started an AnyIO worker thread is
#: still pending: that worker then never stops on its own (what jupyter-collaboration 4.x's
#: stores left in the test servers' loops).
SCRIPT = """
import asyncio, sys, time
import anyio.to_thread

sys.path.insert(0, {root!r})
from tests.support.threads import stop_anyio_workers

async def background():
    await anyio.to_thread.run_sync(time.sleep, 0)  # the worker's root task: this one
    await asyncio.Event().wait()  # never ends

loop = asyncio.new_event_loop()
task = loop.create_task(background())
loop.call_later(0.5, loop.stop)
loop.run_forever()  # no run_until_complete task: the worker's root task is background()
loop.close()
if sys.argv[1] == "stop":
    stop_anyio_workers()
print("done", flush=True)
"""


def _exits(how: str, within: float) -> bool:
    root = str(Path(__file__).resolve().parents[2])
    code = SCRIPT.format(root=root)
    try:
        subprocess.run([sys.executable, "-c", code, how], check=True, timeout=within)
    except subprocess.TimeoutExpired:
        return False
    return True


@pytest.mark.slow
def test_a_process_left_with_an_anyio_worker_ends_once_the_workers_are_stopped():
    assert not _exits("leave", 8)  # the hang this guards against, as it is without the stop
    assert _exits("stop", 30)

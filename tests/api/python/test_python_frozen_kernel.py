"""A kernel that does not answer at all (stopped by SIGSTOP) still ends the call on time (issue 20).

A stopped process reads nothing, answers nothing and ignores SIGINT until it is continued: only
the deadline ends the call, and nothing done after it (closing the connection, the restart or
the shutdown) may be waited for. The answer comes within the deadline + 1 s
(docs/developers/contract.md §5.6).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from tests.support.python_tool import run, tool

pytestmark = pytest.mark.timeout(120)

#: The call's deadline, in seconds.
TIMEOUT = 3
FREEZE_ITSELF = "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)"


async def _timed(jp_fetch, body):
    start = time.monotonic()
    status, result = await tool(jp_fetch)({**body, "timeout": TIMEOUT})
    return status, result, time.monotonic() - start


@pytest.mark.slow
async def test_a_kernel_frozen_between_calls_ends_the_call_within_its_deadline(jp_fetch):
    pid = int((await run(jp_fetch, "import os\nprint(os.getpid())"))["text"].strip())
    os.kill(pid, signal.SIGSTOP)
    try:
        status, result, took = await _timed(jp_fetch, {"cells": [{"code": "1 + 1"}]})
    finally:
        # Continued if the background restart has not ended it yet.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert status == 200, result
    assert result["text"].endswith(f"[Command timed out after {TIMEOUT} seconds]")
    assert result["session"]["stateLost"] is True
    # Closing the frozen kernel's connection blocked the server's loop 0.3-0.5 s (4.2-4.6 s).
    assert took < TIMEOUT + 1, took
    # The session's kernel was restarted in the background: the next call works.
    assert (await run(jp_fetch, "print(40 + 2)"))["text"].strip() == "42"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["session", "per-call"])
async def test_a_kernel_that_freezes_in_its_cell_ends_the_call_within_its_deadline(jp_fetch, mode):
    if mode == "session":
        await run(jp_fetch, "pass")  # the kernel's start does not count here
    body = {"cells": [{"code": FREEZE_ITSELF}], "mode": mode}
    status, result, took = await _timed(jp_fetch, body)
    assert status == 200, result
    assert result["isError"] is True and result["cells"][0]["exitCode"] is None
    # A per-call kernel is killed before the answer, which waits for its process to be gone
    # (up to ~1 s more on a loaded machine); a session's kernel restarts in the background.
    assert took < TIMEOUT + (2 if mode == "per-call" else 1), took

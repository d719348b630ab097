"""Kernel death and recovery: a killed kernel is restarted, a call re-run once, never twice."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.support.gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from tests.support.python_tool import eventually, run, sessions

pytestmark = pytest.mark.timeout(300)

KILL_ONCE = """
import os, pathlib, signal
marker = pathlib.Path('killed-once')
print('before')
if not marker.exists():
    marker.write_text('x')
    os.kill(os.getpid(), signal.SIGKILL)
print('survived')
"""

KILL_ALWAYS = "import os, signal\nprint('dying')\nos.kill(os.getpid(), signal.SIGKILL)"


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config):
    config = use_kernels(request, jp_server_config)
    config.XcshSettings.heartbeat_interval = 0.5
    return config


@pytest.mark.slow
async def test_a_kernel_killed_mid_call_is_restarted_and_the_call_rerun_once(jp_fetch):
    await run(jp_fetch, "state = 1")

    result = await run(jp_fetch, KILL_ONCE, timeout=120)

    assert result["isError"] is False
    assert result["text"] == "before\nsurvived"
    assert result["session"]["stateLost"] is True
    assert result["session"]["stateLostReason"].startswith("the kernel died during the call (")
    assert (result["session"]["restartCount"], result["session"]["generation"]) == (1, 2)
    after = await run(jp_fetch, "'state' in globals()")
    assert after["text"] == "False"
    assert after["session"]["stateLost"] is False


@pytest.mark.slow
async def test_a_kernel_killed_again_after_its_restart_fails_with_the_exact_error(jp_fetch):
    await run(jp_fetch, "1")

    result = await run(jp_fetch, KILL_ALWAYS, timeout=120)

    assert result["isError"] is True
    assert result["text"].endswith("Python kernel restarted too many times in this session")
    # The session is usable again afterwards (the restart counter starts over).
    after = await run(jp_fetch, "print('back')", timeout=120)
    assert after["text"] == "back"
    assert after["isError"] is False


@pytest.mark.slow
async def test_a_kernel_that_died_while_idle_is_restarted_before_the_next_call(jp_fetch):
    pid = int((await run(jp_fetch, "import os\nstate = 1\nprint(os.getpid())"))["text"])

    os.kill(pid, signal.SIGKILL)
    # The heartbeat (every 0.5 s here) or the server's auto-restarter notices within seconds.
    await eventually(lambda: _noticed(jp_fetch), timeout=30)
    result = await run(jp_fetch, "import os\nprint('state' in globals(), os.getpid())", timeout=120)

    seen_state, new_pid = result["text"].split()
    assert seen_state == "False"
    assert int(new_pid) != pid
    assert result["session"]["stateLost"] is True
    assert result["session"]["restartCount"] == 1


@pytest.mark.slow
async def test_counters_after_two_deaths_say_two_restarts_and_a_third_kernel(jp_fetch):
    for deaths in (1, 2):
        pid = int((await run(jp_fetch, "import os\nprint(os.getpid())", timeout=120))["text"])
        os.kill(pid, signal.SIGKILL)
        await eventually(lambda: _noticed(jp_fetch), timeout=30)
        result = await run(jp_fetch, "1", timeout=120)
        session = result["session"]
        assert (session["stateLost"], session["restartCount"], session["generation"]) == (
            True,
            deaths,
            deaths + 1,
        )
    listed = await sessions(jp_fetch)
    assert [(s["restartCount"], s["generation"]) for s in listed] == [(2, 3)]


async def _noticed(jp_fetch):
    return [s["dead"] for s in await sessions(jp_fetch)] == [True]


@pytest.mark.slow
async def test_per_call_kernels_are_shut_down_even_when_the_call_kills_them(jp_fetch):
    result = await run(jp_fetch, KILL_ALWAYS, mode="per-call", timeout=120)

    assert result["isError"] is True
    await eventually(lambda: _no_kernels(jp_fetch), timeout=30)


async def _no_kernels(jp_fetch):
    return json.loads((await jp_fetch("api", "kernels")).body) == []

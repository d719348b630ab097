"""Kernels the python tool no longer owns: shut down through the kernels API, culled, forgotten.

A session's kernel can disappear behind the tool's back — the lab's "Shut Down All Kernels",
``DELETE /api/kernels/<id>``, the server's idle culler, a gateway that dropped it. The next call
on that session starts a fresh kernel and says the state is gone (``stateLost`` and a reason);
nothing that tidies sessions up (eviction, heartbeat, sweep, ``DELETE``) ever fails a caller.
"""

from __future__ import annotations

import logging

import pytest
from tornado.httpclient import AsyncHTTPClient

from jupyter_xcsh.execution.python.failures import KERNEL_GONE
from jupyter_xcsh.execution.python.pool import DELETED, EVICTED
from tests.support.gateway import config_on_both_kernels, kernel_gateway, xcsh_settings  # noqa: F401
from tests.support.python_tool import (
    eventually,
    kernel_ids,
    run,
    sessions,
    write_python_kernel_spec,
)

pytestmark = pytest.mark.timeout(300)


async def shut_down_through_the_kernels_api(jp_fetch, kernel_id):
    response = await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    assert response.code == 204


@pytest.mark.slow
async def test_a_kernel_shut_down_through_the_kernels_api_is_replaced_and_the_loss_said(jp_fetch):
    first = await run(jp_fetch, "x = 1")
    kernel_id = first["session"]["kernelId"]

    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)
    result = await run(jp_fetch, "print('x' in globals())", timeout=120)

    assert (result["isError"], result["text"]) == (False, "False")
    session = result["session"]
    assert session["kernelId"] not in (None, kernel_id)
    assert session["stateLost"] is True
    assert session["stateLostReason"] == KERNEL_GONE.format(kernel_id)
    assert (session["restartCount"], session["generation"]) == (1, 2)
    after = await run(jp_fetch, "print('x' in globals())")
    assert (after["session"]["stateLost"], "stateLostReason" in after["session"]) == (False, False)


#: A kernel whose second start dies at once (a port taken meanwhile, a node gone), the others
#: plain ipykernel: the starts are counted in the file its second argument names.
DIES_ON_SECOND_START = (
    "import pathlib, runpy, sys\n"
    "count = pathlib.Path(sys.argv[2])\n"
    "starts = int(count.read_text() or 0) + 1 if count.exists() else 1\n"
    "count.write_text(str(starts))\n"
    "if starts == 2:\n"
    "    sys.exit(1)\n"
    "sys.argv = ['ipykernel_launcher', '-f', sys.argv[1]]\n"
    "runpy.run_module('ipykernel_launcher', run_name='__main__')"
)


@pytest.fixture
def dies_on_second_start(jp_kernel_dir, tmp_path):
    """A local kernel spec whose second kernel start fails: its name, and its count of starts."""
    starts = tmp_path / "starts"
    name = write_python_kernel_spec(
        jp_kernel_dir,
        "dies-on-second-start",
        "Python 3 (its second start dies)",
        DIES_ON_SECOND_START,
        str(starts),
    )
    return name, starts


@pytest.mark.slow
@pytest.mark.parametrize("jp_server_config", ["local"], indirect=True)  # the spec is local
async def test_a_replacement_that_dies_at_start_keeps_the_first_loss_in_the_reason(
    jp_fetch, dies_on_second_start
):
    kernel_name, starts = dies_on_second_start
    kernel_id = (await run(jp_fetch, "x = 1", kernel_name=kernel_name))["session"]["kernelId"]

    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)
    result = await run(jp_fetch, "print('x' in globals())", kernel_name=kernel_name, timeout=120)

    assert int(starts.read_text()) == 3  # the replacement died at its start, then came back
    assert (result["isError"], result["text"]) == (False, "False")
    session = result["session"]
    assert session["stateLost"] is True
    # Both losses: the kernel the state was in first, then the replacement's death.
    gone = KERNEL_GONE.format(kernel_id)
    reason = session["stateLostReason"]
    assert reason.startswith(f"{gone}; ") and "died" in reason.removeprefix(gone), reason


@pytest.mark.parametrize("xcsh_settings", [{"heartbeat_interval": 0.2}])
async def test_the_heartbeat_notices_a_kernel_shut_down_elsewhere(jp_fetch):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]

    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)

    # The heartbeat (every 0.2 s) finds the kernel gone and lists the session as dead.
    await eventually(lambda: _listed_dead(jp_fetch), timeout=30)


async def _listed_dead(jp_fetch):
    return [s["dead"] for s in await sessions(jp_fetch)] == [True]


@pytest.mark.slow
async def test_deleting_a_session_whose_kernel_is_gone_succeeds(jp_fetch):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]
    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)

    response = await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")

    assert response.code == 204
    assert await sessions(jp_fetch) == []
    result = await run(jp_fetch, "1", timeout=120)
    assert (result["session"]["stateLost"], result["session"]["stateLostReason"]) == (
        True,
        DELETED,
    )


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 1}])
async def test_evicting_a_session_whose_kernel_is_gone_never_fails_another_caller(jp_fetch):
    kernel_id = (await run(jp_fetch, "x = 1", session="a"))["session"]["kernelId"]
    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)

    other = await run(jp_fetch, "print('b runs')", session="b", timeout=120)

    assert (other["isError"], other["text"]) == (False, "b runs")
    assert [s["name"] for s in await sessions(jp_fetch)] == ["b"]
    again = await run(jp_fetch, "print('x' in globals())", session="a", timeout=120)
    assert again["text"] == "False"
    assert again["session"]["stateLost"] is True


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 1}])
async def test_eviction_says_the_state_is_lost_and_keeps_the_counters(jp_fetch):
    first = await run(jp_fetch, "x = 1", session="a")
    await run(jp_fetch, "1", session="b")  # evicts a

    again = await run(jp_fetch, "print('x' in globals())", session="a")

    assert again["text"] == "False"
    session = again["session"]
    assert session["kernelId"] != first["session"]["kernelId"]
    assert (session["stateLost"], session["stateLostReason"]) == (True, EVICTED.format(1))
    assert (session["restartCount"], session["generation"]) == (1, 2)


@pytest.mark.slow
@pytest.mark.parametrize(
    "xcsh_settings", [{"idle_timeout": 3.0, "cleanup_interval": 0.3, "heartbeat_interval": 0.2}]
)
async def test_the_sweep_disposes_of_a_session_whose_kernel_is_gone(jp_fetch, caplog):
    kernel_id = (await run(jp_fetch, "x = 1"))["session"]["kernelId"]
    await shut_down_through_the_kernels_api(jp_fetch, kernel_id)

    # Found dead by the heartbeat (or idle for 3 s), swept every 0.3 s: gone well within 30 s.
    await eventually(lambda: _no_sessions(jp_fetch), timeout=30)
    result = await run(jp_fetch, "print('x' in globals())", timeout=120)

    assert (result["text"], result["session"]["stateLost"]) == ("False", True)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR and "xcsh" in r.message]
    assert failures == []


async def _no_sessions(jp_fetch):
    return await sessions(jp_fetch) == []


@pytest.mark.slow
async def test_a_kernel_culled_by_the_server_is_replaced_and_the_loss_said(jp_fetch, jp_serverapp):
    kernel_id = (await run(jp_fetch, "x = 1"))["session"]["kernelId"]
    km = jp_serverapp.kernel_manager
    # Turned on only now, so the culler cannot take the kernel while the first call starts it:
    # idle for 1 s, checked every second. The tool's own connection counts as one on a gateway.
    km.cull_idle_timeout, km.cull_interval, km.cull_connected = 1, 1, True
    km._initialized_culler = False
    km.initialize_culler()
    try:
        await eventually(lambda: _gone(jp_fetch, kernel_id), timeout=60)
    finally:
        km._culler_callback.stop()  # the next kernel must live

    result = await run(jp_fetch, "print('x' in globals())", timeout=120)

    assert (result["isError"], result["text"]) == (False, "False")
    assert result["session"]["stateLost"] is True
    assert_lost_first(result["session"]["stateLostReason"], kernel_id)


def assert_lost_first(reason, kernel_id):
    """The state was lost with ``kernel_id``; a replacement that died at its start may follow.

    On a loaded machine a new kernel sometimes dies at start (a port taken between its choice and
    its bind): the call then re-runs on it restarted, and the reason says both.
    """
    gone = KERNEL_GONE.format(kernel_id)
    assert reason == gone or reason.startswith(f"{gone}; the kernel died during the call"), reason


async def _gone(jp_fetch, kernel_id):
    return kernel_id not in await kernel_ids(jp_fetch)


@pytest.mark.parametrize("jp_server_config", ["gateway"], indirect=True)
class TestGatewayForgotTheKernel:
    """The gateway drops a kernel (its own culler, a restart of the gateway, an operator)."""

    @pytest.fixture
    def xcsh_settings(self):
        return {"heartbeat_interval": 0.2}

    @pytest.fixture
    def gateway(self, request):
        return request.getfixturevalue("kernel_gateway")

    async def delete_on_the_gateway(self, gateway, kernel_id):
        response = await AsyncHTTPClient().fetch(
            f"{gateway}/api/kernels/{kernel_id}", method="DELETE", request_timeout=60
        )
        assert response.code == 204

    async def test_the_next_call_starts_a_fresh_kernel_and_says_why(self, jp_fetch, gateway):
        kernel_id = (await run(jp_fetch, "x = 1"))["session"]["kernelId"]

        await self.delete_on_the_gateway(gateway, kernel_id)
        result = await run(jp_fetch, "print('x' in globals())", timeout=120)

        assert (result["isError"], result["text"]) == (False, "False")
        assert result["session"]["kernelId"] != kernel_id
        assert result["session"]["stateLost"] is True
        assert_lost_first(result["session"]["stateLostReason"], kernel_id)

    async def test_the_heartbeat_lists_the_session_as_dead(self, jp_fetch, gateway):
        kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]

        await self.delete_on_the_gateway(gateway, kernel_id)

        await eventually(lambda: _listed_dead(jp_fetch), timeout=30)
        response = await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")
        assert response.code == 204

"""The server's own kernel websockets, counted and closed as the server does with the extension on.

The extension must not change how Jupyter Server counts a kernel's connections or closes them,
nor delay either, including on a python tool session's kernel, whose activity figures the
tool's connection keeps (``session.take_over_watch``): a websocket of the lab's opens only once the
server's "nudge" has seen that kernel leave the ``starting`` state, and reads nothing — not
even its client's close — before it is open. jupyter_server's own
``tests/services/sessions/test_api.py::test_restart_kernel`` checks the same with a 1 s window
(``scripts/server-tests.sh`` runs it with the extension loaded, issue 29).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from jupyter_client.session import Session

from tests.support.python_tool import REQUEST_TIMEOUT, eventually, run

pytestmark = pytest.mark.timeout(300)

#: jupyter_server's own test gives a closed websocket this long to stop counting.
CLOSE_WINDOW = 1.0


async def kernel_model(jp_fetch: Any, kernel_id: str) -> dict[str, Any]:
    response = await jp_fetch("api", "kernels", kernel_id, request_timeout=REQUEST_TIMEOUT)
    return json.loads(response.body)  # type: ignore[no-any-return]


async def connections_after_close(jp_fetch: Any, kernel_id: str, ws: Any, window: float) -> int:
    """Close ``ws``; the kernel's connection count once it is 0 or ``window`` seconds passed."""
    ws.close()
    end = time.monotonic() + window
    while True:
        count: int = (await kernel_model(jp_fetch, kernel_id))["connections"]
        if count == 0 or time.monotonic() > end:
            return count
        await asyncio.sleep(0.05)


async def open_websocket(jp_ws_fetch: Any, kernel_id: str) -> Any:
    """A kernel websocket the server has finished opening: it answered a kernel_info_request.

    The server reads a websocket's messages only once its ``open`` (the nudge) is done, so the
    reply proves it; from then on a close is handled as soon as it arrives.
    """
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    request = Session().msg("kernel_info_request")
    request["channel"] = "shell"
    await ws.write_message(json.dumps(request, default=str))
    while True:
        message = json.loads(await asyncio.wait_for(ws.read_message(), REQUEST_TIMEOUT))
        answers = message["parent_header"].get("msg_id") == request["header"]["msg_id"]
        if answers and message["msg_type"] == "kernel_info_reply":
            return ws


async def restart(jp_fetch: Any, kernel_id: str) -> None:
    await jp_fetch(
        "api",
        "kernels",
        kernel_id,
        "restart",
        method="POST",
        allow_nonstandard_methods=True,
        request_timeout=REQUEST_TIMEOUT,
    )


async def session_kernel(jp_fetch: Any, jp_serverapp: Any) -> str:
    """A python tool session's kernel, its activity watched by the tool's connection."""
    kernel_id: str = (await run(jp_fetch, "pass"))["session"]["kernelId"]
    assert jp_serverapp.kernel_manager.get_kernel(kernel_id)._activity_stream is None
    return kernel_id


async def test_a_closed_websocket_stops_counting_at_once_after_a_restart(jp_fetch, jp_ws_fetch):
    response = await jp_fetch("api", "kernels", method="POST", body="{}")
    kernel_id = json.loads(response.body)["id"]
    ws = await open_websocket(jp_ws_fetch, kernel_id)
    assert (await kernel_model(jp_fetch, kernel_id))["connections"] == 1

    await restart(jp_fetch, kernel_id)

    assert await connections_after_close(jp_fetch, kernel_id, ws, CLOSE_WINDOW) == 0


@pytest.mark.slow
@pytest.mark.fast_path  # with the activity watch taken over by the tool
async def test_a_session_kernels_websocket_is_counted_and_closed_as_the_servers_own(
    jp_fetch, jp_ws_fetch, jp_serverapp
):
    kernel_id = await session_kernel(jp_fetch, jp_serverapp)
    ws = await open_websocket(jp_ws_fetch, kernel_id)
    assert (await kernel_model(jp_fetch, kernel_id))["connections"] == 1

    await restart(jp_fetch, kernel_id)

    assert await connections_after_close(jp_fetch, kernel_id, ws, CLOSE_WINDOW) == 0

    async def idle() -> bool:
        return (await kernel_model(jp_fetch, kernel_id))["execution_state"] == "idle"

    await eventually(idle)  # the restarted kernel is reported idle, not left "starting"


@pytest.mark.slow
@pytest.mark.fast_path  # with the activity watch taken over by the tool
async def test_a_websocket_opening_across_a_restart_of_a_session_kernel_closes_once_it_answers(
    jp_fetch, jp_ws_fetch, jp_serverapp
):
    # The websocket's open waits for the kernel (its nudge) and the restart comes before it is
    # done: its close is read only once the restarted kernel answered and the server saw it leave
    # "starting" — seconds at most on a loaded machine, never the server's 60 s kernel_info
    # timeout that an execution state stuck at "starting" would cost.
    kernel_id = await session_kernel(jp_fetch, jp_serverapp)
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    await restart(jp_fetch, kernel_id)

    assert await connections_after_close(jp_fetch, kernel_id, ws, 15.0) == 0

"""A session kernel's activity, as the server reports it, while the tool's connection reads it.

The connection takes the server's activity watch of the kernel over (one decode per message
instead of two): ``GET /api/kernels`` must still show the kernel busy while a call runs, idle
after it, and its last activity. Where the takeover is off (``XcshSettings.fast_paths``) or
fell back (jupyter_server 2.4's manager has no ``track_message_type``), the server's own
watcher keeps the same figures.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest

from .python_tool import REQUEST_TIMEOUT, eventually, run

pytestmark = pytest.mark.timeout(300)


def takes_over(serverapp) -> bool:
    """Whether this server's extension takes the activity watch over (the fast path is on)."""
    return serverapp.web_app.settings["xcsh"].fast_paths.uses("activity_watch")  # type: ignore[no-any-return]


async def kernel_model(jp_fetch, kernel_id: str) -> dict:
    response = await jp_fetch("api", "kernels", kernel_id, request_timeout=REQUEST_TIMEOUT)
    return json.loads(response.body)  # type: ignore[no-any-return]


async def test_the_server_watch_is_taken_over_and_its_figures_kept(
    jp_fetch, jp_serverapp, jp_root_dir
):
    kernel_id = (await run(jp_fetch, "pass"))["session"]["kernelId"]
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    # The server's own watcher is closed, or watches as it always does.
    assert (kernel._activity_stream is None) is takes_over(jp_serverapp)
    before = datetime.fromisoformat((await kernel_model(jp_fetch, kernel_id))["last_activity"])

    gate = jp_root_dir / "go"
    code = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)"
    call = asyncio.ensure_future(run(jp_fetch, code))
    try:

        async def busy() -> bool:
            return (await kernel_model(jp_fetch, kernel_id))["execution_state"] == "busy"

        await eventually(busy)
    finally:
        gate.touch()
    await call

    model = await kernel_model(jp_fetch, kernel_id)
    assert model["execution_state"] == "idle"
    assert datetime.fromisoformat(model["last_activity"]) > before


@pytest.mark.fast_path
async def test_the_server_watches_the_kernel_again_once_the_connection_closes(
    jp_fetch, jp_serverapp
):
    if not takes_over(jp_serverapp):
        pytest.skip("the activity_watch fast path fell back: the server always watches")
    kernel_id = (await run(jp_fetch, "pass"))["session"]["kernelId"]
    pool = jp_serverapp.web_app.settings["xcsh"].execution.pool
    (session,) = pool.find("default")

    session.release_connection()

    assert jp_serverapp.kernel_manager.get_kernel(kernel_id)._activity_stream is not None
    assert (await run(jp_fetch, "1 + 1"))["text"] == "2"  # a new connection takes over again
    assert jp_serverapp.kernel_manager.get_kernel(kernel_id)._activity_stream is None

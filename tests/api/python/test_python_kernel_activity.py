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
from datetime import UTC, datetime
from typing import Any

import pytest
from traitlets import HasTraits, Instance, Unicode, validate

from jupyter_xcsh.execution.python.session import probe_trait_store, store_trait
from tests.support.python_tool import REQUEST_TIMEOUT, eventually, run

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


@pytest.mark.slow
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


@pytest.mark.slow
async def test_an_observer_of_the_kernels_figures_sees_every_change(jp_fetch, jp_serverapp):
    """The figures are stored without traitlets' machinery only while nothing observes them
    (``store_trait``): another extension observing a kernel's state still sees it change."""
    kernel_id = (await run(jp_fetch, "pass"))["session"]["kernelId"]
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    states: list[str] = []
    times: list[datetime] = []

    # Where this server does not take the kernel's figures over (fast paths off), they come
    # from jupyter_server's own IOPub stream, which may bring a call's statuses after the
    # call has answered: wait for them rather than read them early.
    async def idle() -> bool:
        return bool(kernel.execution_state == "idle")

    async def seen_the_call() -> bool:
        return "busy" in states and states[-1] == "idle"

    await eventually(idle)
    kernel.observe(lambda change: states.append(change["new"]), names="execution_state")
    jp_serverapp.kernel_manager.observe(
        lambda change: times.append(change["new"]), names="last_kernel_activity"
    )
    try:
        await run(jp_fetch, "pass")
        await eventually(seen_the_call, timeout=10)
    finally:
        kernel.unobserve_all("execution_state")
        jp_serverapp.kernel_manager.unobserve_all("last_kernel_activity")

    assert states[:1] == ["busy"] and states[-1:] == ["idle"]
    assert times and times == sorted(times)
    assert kernel.last_activity >= times[-1] or not takes_over(jp_serverapp)


def test_a_trait_is_stored_plainly_only_while_nothing_sees_it():
    class Figures(HasTraits):
        when = Instance(datetime, allow_none=True)
        state = Unicode(None, allow_none=True)

        @validate("state")
        def _upper(self, proposal: Any) -> str:
            return str(proposal["value"]).upper()

    figures, seen = Figures(), []
    now = datetime.now(UTC)

    store_trait(figures, "when", now)  # nothing observes it: stored as traitlets would
    assert figures.when is now and figures._trait_values["when"] is now
    figures.observe(seen.append, names="when")
    store_trait(figures, "when", datetime.now(UTC))
    store_trait(figures, "state", "busy")  # a validator: through traitlets

    assert [change["old"] for change in seen] == [now]
    assert figures.state == "BUSY"
    assert probe_trait_store() is None

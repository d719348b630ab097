"""A kernel the server is starting is never listed without its activity figures.

jupyter_server lists a kernel it starts one event-loop iteration before it sets its
``last_activity``; in between, ``GET /api/kernels``, ``/api/status`` and ``/api/sessions`` answer
500. ``XcshSettings.stamp_starting_kernels`` creates each kernel with the figures the server
gives it once started (``execution/kernel/stamp.py``). A watcher on the server's own event loop
reads every listed kernel's model at every iteration while real kernels start, so it sees the
window whenever it is there: with the setting off it does (the server's own behaviour, left
as it is), with it on it never does.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_xcsh.execution.kernel.stamp import stamp, stamp_kernels_when_created

pytestmark = pytest.mark.timeout(300)

INTERVENTIONS = "jupyter_xcsh process-wide interventions on:"


@pytest.fixture
def stamp_setting() -> bool:
    """The test's ``XcshSettings.stamp_starting_kernels``."""
    return True


@pytest.fixture
def jp_server_config(jp_server_config, stamp_setting):
    config = Config(jp_server_config)
    config.XcshSettings.stamp_starting_kernels = stamp_setting
    return config


class ModelWatch:
    """Every model of every listed kernel, read at each event-loop iteration, and what failed."""

    def __init__(self, kernel_manager: Any) -> None:
        self.km = kernel_manager
        self.models: list[dict[str, Any]] = []
        self.failures: list[str] = []

    def look(self) -> None:
        """Read every listed kernel's model, as ``GET /api/kernels`` does."""
        for kernel_id in self.km.list_kernel_ids():
            try:
                self.models.append(self.km.kernel_model(kernel_id))
            except Exception as e:
                self.failures.append(f"{type(e).__name__}: {e}")

    @asynccontextmanager
    async def running(self) -> Any:
        """Look at each iteration of the loop (``sleep(0)``: once per iteration) meanwhile."""
        done = asyncio.Event()

        async def watch() -> None:
            while not done.is_set():
                self.look()
                await asyncio.sleep(0)

        task = asyncio.ensure_future(watch())
        try:
            yield self
        finally:
            done.set()
            await task


async def start_kernels(jp_fetch: Any, count: int) -> list[str]:
    """Start ``count`` kernels one after the other through ``POST /api/kernels``."""
    ids = []
    for _ in range(count):
        response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({}))
        ids.append(json.loads(response.body)["id"])
    return ids


async def test_a_starting_kernel_is_listed_with_its_activity_figures(jp_fetch, jp_serverapp):
    watch = ModelWatch(jp_serverapp.kernel_manager)

    async with watch.running():
        kernel_ids = await start_kernels(jp_fetch, 3)
        listed = json.loads((await jp_fetch("api", "kernels")).body)

    assert watch.failures == []
    seen = {model["id"] for model in watch.models}
    assert set(kernel_ids) <= seen
    for model in watch.models:
        datetime.fromisoformat(model["last_activity"].replace("Z", "+00:00"))
        assert model["execution_state"] in ("starting", "idle", "busy")
    assert {model["id"] for model in listed} == set(kernel_ids)


@pytest.mark.parametrize("stamp_setting", [False])
async def test_turned_off_the_server_lists_a_starting_kernel_without_them(jp_fetch, jp_serverapp):
    watch = ModelWatch(jp_serverapp.kernel_manager)

    async with watch.running():
        await start_kernels(jp_fetch, 3)

    # jupyter_server's own window, once per kernel started (its model has no last_activity).
    assert len(watch.failures) >= 3, watch.failures
    assert all("last_activity" in failure for failure in watch.failures), watch.failures


async def test_the_server_says_kernels_are_stamped(caplog, jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_xcsh"]
    caplog.clear()
    app._fast_paths(app.services.settings)

    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(INTERVENTIONS)]
    assert "kernels stamped when created" in line


@pytest.mark.parametrize("stamp_setting", [False])
async def test_turned_off_nothing_is_wrapped_or_said(caplog, jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_xcsh"]
    caplog.clear()
    app._fast_paths(app.services.settings)

    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(INTERVENTIONS)]
    assert "kernels stamped" not in line
    factory = jp_serverapp.kernel_manager.kernel_manager_factory
    assert factory.__name__ == "create_kernel_manager"  # jupyter_client's own
    assert factory.__module__ == "jupyter_client.multikernelmanager"


def test_a_kernel_the_server_has_stamped_keeps_its_figures():
    class Kernel:
        last_activity = datetime(2020, 1, 1)
        execution_state = "idle"

    kernel = Kernel()
    stamp(kernel)

    assert kernel.last_activity == datetime(2020, 1, 1)
    assert kernel.execution_state == "idle"


def test_a_gateway_kernel_manager_is_left_alone():
    from jupyter_server.gateway.managers import GatewayMappingKernelManager

    km = GatewayMappingKernelManager()
    factory = km.kernel_manager_factory

    assert "gateway" in (stamp_kernels_when_created(km) or "")
    assert km.kernel_manager_factory is factory

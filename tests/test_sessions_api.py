"""The sessions API and the session pool: listing, shutdown, interrupt, queue, eviction, cleanup."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from .gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from .python_tool import REQUEST_TIMEOUT, eventually, kernel_ids, run, sessions, tool

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def xcsh_settings():
    """XcshSettings for the test server; tests override it with ``parametrize``."""
    return {}


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config, xcsh_settings):
    config = use_kernels(request, jp_server_config)
    for name, value in xcsh_settings.items():
        config.XcshSettings[name] = value
    return config


async def busy(jp_fetch, name="default"):
    return any(s["busy"] for s in await sessions(jp_fetch) if s["name"] == name)


async def test_sessions_are_listed_with_their_kernel_and_state(jp_fetch, jp_root_dir):
    (jp_root_dir / "sub").mkdir()
    first = await run(jp_fetch, "1")
    await run(jp_fetch, "2", session="other", cwd="sub")

    listed = await sessions(jp_fetch)

    assert [(s["name"], s["cwd"]) for s in listed] == [("other", "sub"), ("default", "")]
    default = listed[1]
    assert default["kernelId"] == first["session"]["kernelId"]
    assert (default["busy"], default["queueLength"], default["restartCount"]) == (False, 0, 0)
    assert default["kernelId"] in await kernel_ids(jp_fetch)


async def test_deleting_a_session_shuts_its_kernel_down(jp_fetch):
    kernel_id = (await run(jp_fetch, "x = 1"))["session"]["kernelId"]

    response = await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")

    assert response.code == 204
    assert await sessions(jp_fetch) == []
    assert kernel_id not in await kernel_ids(jp_fetch)
    assert (await run(jp_fetch, "'x' in globals()"))["text"] == "False"


async def test_unknown_sessions_are_404(jp_fetch):
    for method, parts in (("DELETE", ()), ("POST", ("interrupt",))):
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch(
                "api",
                "xcsh",
                "sessions",
                "nope",
                *parts,
                method=method,
                body=b"" if method == "POST" else None,
                allow_nonstandard_methods=True,
            )
        assert e.value.code == 404


async def test_interrupt_cancels_the_running_call_and_the_session_survives(jp_fetch):
    await run(jp_fetch, "kept = 1")
    call = asyncio.create_task(run(jp_fetch, "import time\ntime.sleep(60)", timeout=120))
    await eventually(lambda: busy(jp_fetch))

    response = await jp_fetch(
        "api", "xcsh", "sessions", "default", "interrupt", method="POST", body=b""
    )
    result = await asyncio.wait_for(call, 30)

    assert json.loads(response.body) == {"interrupted": True}
    assert result["cancelled"] is True
    assert result["timedOut"] is False
    assert result["isError"] is True
    assert "KeyboardInterrupt" in result["text"]
    assert (await run(jp_fetch, "print(kept)"))["text"] == "1"


async def test_calls_on_one_session_run_one_at_a_time_in_order(jp_fetch):
    await run(jp_fetch, "order = []\nimport time")
    first = asyncio.create_task(run(jp_fetch, "time.sleep(1.5)\norder.append('first')"))
    await eventually(lambda: busy(jp_fetch))
    second = asyncio.create_task(run(jp_fetch, "order.append('second')\nprint(order)"))
    # The second call waits in the queue while the first sleeps.
    await eventually(lambda: _queue_length_is(jp_fetch, 1), timeout=10, interval=0.05)

    await first
    assert (await second)["text"] == "['first', 'second']"


async def _queue_length_is(jp_fetch, n):
    return any(s["queueLength"] == n for s in await sessions(jp_fetch))


@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 2}])
async def test_the_least_recently_used_session_is_evicted_past_the_cap(jp_fetch):
    a = (await run(jp_fetch, "1", session="a"))["session"]["kernelId"]
    b = (await run(jp_fetch, "1", session="b"))["session"]["kernelId"]
    await run(jp_fetch, "1", session="a")  # a is now more recent than b

    c = (await run(jp_fetch, "1", session="c"))["session"]["kernelId"]

    assert sorted(s["name"] for s in await sessions(jp_fetch)) == ["a", "c"]
    assert {a, c} <= await kernel_ids(jp_fetch)
    assert b not in await kernel_ids(jp_fetch)


@pytest.mark.parametrize("xcsh_settings", [{"idle_timeout": 1.0, "cleanup_interval": 0.5}])
async def test_idle_sessions_are_disposed_by_the_cleanup(jp_fetch):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]

    # Idle for 1 s, found by a sweep every 0.5 s, then shut down: gone well within 15 s.
    await eventually(lambda: _gone(jp_fetch, kernel_id), timeout=15)


async def _gone(jp_fetch, kernel_id):
    return await sessions(jp_fetch) == [] and kernel_id not in await kernel_ids(jp_fetch)


@pytest.mark.parametrize("xcsh_settings", [{"kernel_mode": "per-call"}])
async def test_configured_mode_is_the_default(jp_fetch):
    await run(jp_fetch, "x = 1")

    assert (await run(jp_fetch, "'x' in globals()"))["text"] == "False"
    assert (await run(jp_fetch, "y = 1", "'y' in globals()", mode="session"))["text"].endswith(
        "True"
    )


class TestAuthorization:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.fakes.DenyWritesAuthorizer"
        return config

    async def test_execution_needs_execute_on_kernels_but_listing_is_a_read(self, jp_fetch):
        status, _ = await tool(jp_fetch)({"cells": [{"code": "1"}]})

        assert status == 403
        assert await sessions(jp_fetch) == []
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch(
                "api",
                "xcsh",
                "sessions",
                "x",
                "interrupt",
                method="POST",
                body=b"",
                request_timeout=REQUEST_TIMEOUT,
            )
        assert e.value.code == 403

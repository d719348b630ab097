"""Injected faults: a gateway answering 5xx to a kernel start, a server out of file descriptors."""

from __future__ import annotations

import asyncio
import time

import pytest
from traitlets.config import Config

from jupyter_xcsh.events.activity import PYTHON_SCHEMA
from tests.support.gateway import FailingProxy, kernel_gateway, use_kernels  # noqa: F401
from tests.support.python_tool import eventually, run, sessions, tool

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def failures():
    """How many kernel creations the proxy in front of the gateway fails with 503."""
    return 1


@pytest.fixture
def proxy(request, failures):
    proxy = FailingProxy(request.getfixturevalue("kernel_gateway"), failures=failures)
    proxy.start()
    yield proxy
    proxy.stop()


class TestGatewayServerErrors:
    @pytest.fixture
    def jp_server_config(self, request, jp_server_config, proxy):
        return use_kernels(request, jp_server_config, "gateway", url=proxy.url)

    @pytest.mark.slow
    async def test_a_kernel_start_failing_with_503_is_retried_once(self, jp_fetch, proxy):
        result = await run(jp_fetch, "print('started')", timeout=120)

        assert proxy.failed == 1
        assert result["isError"] is False
        assert result["text"] == "started"

    @pytest.mark.parametrize("failures", [2])
    async def test_a_second_503_is_an_error_result(self, jp_fetch, proxy):
        result = await run(jp_fetch, "print('started')", timeout=120)

        assert proxy.failed == 2
        assert result["isError"] is True
        assert "503" in result["text"]
        assert result["cells"][0]["status"] == "pending"


class TestFileDescriptorExhaustion:
    @pytest.fixture
    def fail_start(self):
        return 1

    @pytest.fixture
    def jp_server_config(self, jp_server_config, fail_start):
        config = Config(jp_server_config)
        config.ServerApp.kernel_manager_class = "tests.support.fakes.EmfileKernelManager"
        config.EmfileKernelManager.fail_start = fail_start
        return config

    async def test_a_kernel_start_failing_with_emfile_is_retried(self, jp_fetch):
        result = await run(jp_fetch, "print('started')", timeout=120)

        assert result["text"] == "started"

    @pytest.mark.slow
    @pytest.mark.parametrize("fail_start", [2])
    async def test_emfile_releases_cached_clients_and_marks_sessions_for_restart(self, jp_fetch):
        await run(jp_fetch, "x = 1", session="a", timeout=120)

        await run(jp_fetch, "1", session="b", timeout=120)  # its start hits EMFILE once
        after = await run(jp_fetch, "'x' in globals()", session="a", timeout=120)

        assert after["text"] == "False"
        assert after["session"]["stateLost"] is True


class TestSlowKernelStart:
    """A kernel start is bounded by the call's deadline; the late kernel is not lost."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.kernel_manager_class = "tests.support.fakes.SlowStartKernelManager"
        config.SlowStartKernelManager.start_delay = 4.0
        return config

    @pytest.mark.slow
    async def test_a_slow_start_times_out_and_the_next_call_gets_its_kernel(
        self, jp_fetch, jp_serverapp
    ):
        started = time.monotonic()
        result = await run(jp_fetch, "print('ran')", timeout=1.5)

        assert time.monotonic() - started < 3.5  # not the 4 s the start takes
        assert result["timedOut"] is True
        assert result["isError"] is True
        # Whole seconds, rounded half up: the start had all of its 1.5 s.
        assert result["text"].startswith("[Command timed out after 2 seconds]")
        assert result["cells"][0]["status"] == "pending"
        # The next call waits for the start already under way instead of starting another.
        after = await run(jp_fetch, "print('ran')", timeout=60)
        assert after["text"] == "ran"
        km = jp_serverapp.kernel_manager
        assert km.started == km.list_kernel_ids() == [after["session"]["kernelId"]]

    @pytest.mark.slow
    async def test_a_late_kernel_of_a_per_call_session_is_shut_down(self, jp_fetch, jp_serverapp):
        result = await run(jp_fetch, "print('ran')", timeout=1, mode="per-call")

        assert result["timedOut"] is True
        km = jp_serverapp.kernel_manager
        await eventually(lambda: _started_and_gone(km), timeout=60)

    @pytest.mark.slow
    async def test_deleting_a_session_while_its_kernel_starts_leaves_no_kernel(
        self, jp_fetch, jp_serverapp
    ):
        call = asyncio.create_task(run(jp_fetch, "print('ran')", session="s", timeout=60))
        await eventually(lambda: _listed(jp_fetch, "s"), interval=0.05)

        response = await jp_fetch("api", "xcsh", "sessions", "s", method="DELETE")
        result = await asyncio.wait_for(call, 60)

        assert response.code == 204
        assert result["cancelled"] is True
        assert result["isError"] is True
        assert result["text"] == "(no output)\n\nSession was shut down"
        assert result["cells"][0]["status"] == "pending"
        assert await sessions(jp_fetch) == []
        # The kernel that was starting is shut down once it is up, not left running untracked.
        await eventually(lambda: _started_and_gone(jp_serverapp.kernel_manager), timeout=60)

    @pytest.mark.slow
    async def test_stopping_the_server_while_a_kernel_starts_leaves_no_kernel(
        self, jp_fetch, jp_serverapp
    ):
        call = asyncio.create_task(run(jp_fetch, "print('ran')", timeout=60))
        await eventually(lambda: _listed(jp_fetch, "default"), interval=0.05)

        await jp_serverapp.extension_manager.stop_all_extensions()
        result = await asyncio.wait_for(call, 60)

        assert result["cancelled"] is True
        assert result["text"] == "(no output)\n\nSession was shut down"
        await eventually(lambda: _started_and_gone(jp_serverapp.kernel_manager), timeout=60)


async def _listed(jp_fetch, name):
    return any(s["name"] == name and s["busy"] for s in await sessions(jp_fetch))


async def _started_and_gone(km):
    return len(getattr(km, "started", [])) == 1 and km.list_kernel_ids() == []


class TestKernelSpecGoneBeforeTheStart:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.kernel_manager_class = (
            "tests.support.fakes.MissingSpecOnStartKernelManager"
        )
        return config

    async def test_a_failed_first_start_reports_the_end_and_keeps_no_session(
        self, jp_fetch, jp_serverapp
    ):
        seen = []

        async def listener(logger, schema_id, data):
            seen.append(dict(data))

        jp_serverapp.event_logger.add_listener(schema_id=PYTHON_SCHEMA, listener=listener)

        status, body = await tool(jp_fetch)({"cells": [{"code": "1"}]})

        assert (status, body["message"]) == (400, "No such kernel: python3")
        assert await sessions(jp_fetch) == []
        await eventually(lambda: _has_event(seen, "finished"), timeout=5, interval=0.01)
        finished = next(e for e in seen if e["event"] == "finished")
        assert finished["result"]["isError"] is True
        assert finished["result"]["text"] == "No such kernel: python3"
        assert [e["event"] for e in seen] == ["started", "finished"]


async def _has_event(seen, name):
    return any(e["event"] == name for e in seen)


class TestSessionCap:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.kernel_manager_class = "tests.support.fakes.SlowShutdownKernelManager"
        config.SlowShutdownKernelManager.shutdown_delay = 2.0
        config.XcshSettings.max_sessions = 1
        return config

    @pytest.mark.slow
    async def test_kernels_still_shutting_down_count_against_the_cap(self, jp_fetch, jp_serverapp):
        km = jp_serverapp.kernel_manager
        a = (await run(jp_fetch, "1", session="a", timeout=60))["session"]["kernelId"]
        delete = asyncio.ensure_future(jp_fetch("api", "xcsh", "sessions", "a", method="DELETE"))
        await eventually(lambda: _event(km, "shutdown-begin", a), interval=0.01)

        b = (await run(jp_fetch, "1", session="b", timeout=60))["session"]["kernelId"]
        await delete

        # b's kernel started only once a's was gone: never two kernels past a cap of one.
        assert _at(km, "start", b) >= _at(km, "shutdown-end", a)


async def _event(km, what, kernel_id):
    return any(e[:2] == (what, kernel_id) for e in getattr(km, "events", []))


def _at(km, what, kernel_id):
    return next(t for w, k, t in km.events if (w, k) == (what, kernel_id))

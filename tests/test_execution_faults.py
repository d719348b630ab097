"""Injected faults: a gateway answering 5xx to a kernel start, a server out of file descriptors."""

from __future__ import annotations

import pytest
from traitlets.config import Config

from .gateway import FailingProxy, kernel_gateway, use_kernels  # noqa: F401
from .python_tool import run

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
        config.ServerApp.kernel_manager_class = "tests.fakes.EmfileKernelManager"
        config.EmfileKernelManager.fail_start = fail_start
        return config

    async def test_a_kernel_start_failing_with_emfile_is_retried(self, jp_fetch):
        result = await run(jp_fetch, "print('started')", timeout=120)

        assert result["text"] == "started"

    @pytest.mark.parametrize("fail_start", [2])
    async def test_emfile_releases_cached_clients_and_marks_sessions_for_restart(self, jp_fetch):
        await run(jp_fetch, "x = 1", session="a", timeout=120)

        await run(jp_fetch, "1", session="b", timeout=120)  # its start hits EMFILE once
        after = await run(jp_fetch, "'x' in globals()", session="a", timeout=120)

        assert after["text"] == "False"
        assert after["session"]["stateLost"] is True

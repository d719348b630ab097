"""Runs in place with kernels on a gateway as well as local ones (issue 23).

The kernel a run starts works in the notebook's folder, and a run waiting for a kernel a
person keeps busy answers by its deadline, wherever the kernel runs. With
``XCSH_ENTERPRISE_GATEWAY`` set, the gateway is Enterprise Gateway (``tests/support/gateway.py``).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.support.gateway import (  # noqa: F401
    KERNELS,
    SlowWebsocketProxy,
    hidden_root_kernel_fixture,
    kernel_gateway,
    use_kernels,
)
from tests.support.inplace import OtherClient, run_ok, shared_with_a_person, write_notebook
from tests.support.openapi_check import spec

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def gateway_ws_url():
    """Where the test server opens the gateway's kernel websockets (None: at the gateway)."""
    return None


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config, gateway_ws_url):
    return use_kernels(request, jp_server_config, ws_url=gateway_ws_url)


async def test_the_kernel_a_run_starts_works_in_the_notebooks_folder(jp_fetch, jp_root_dir):
    # A gateway starts kernels in its own folder (Kernel Gateway ignores the server's
    # KERNEL_WORKING_DIR): the run moves the kernel it started where the lab's would be.
    write_notebook(jp_root_dir / "sub" / "wd.ipynb", "import os\nprint(os.getcwd())")
    result = await run_ok(jp_fetch, notebook_path="sub/wd.ipynb", cell_index=0)
    assert result["kernel"]["started"] is True, result["kernel"]
    assert result["text"] == os.path.realpath(jp_root_dir / "sub"), result
    assert "notices" not in result


@pytest.mark.parametrize("jp_server_config", ["gateway"], indirect=True)
async def test_a_kernel_that_cannot_see_the_folder_says_where_it_works(
    jp_fetch, jp_root_dir, hidden_root_kernel
):
    path = jp_root_dir / "far.ipynb"
    write_notebook(path, "print('ran')")
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = {"name": hidden_root_kernel, "display_name": "far"}
    path.write_text(json.dumps(notebook))
    result = await run_ok(jp_fetch, notebook_path="far.ipynb", cell_index=0)
    [notice] = result["notices"]
    assert notice.startswith("The notebook's kernel cannot see this server's files"), notice
    assert f"[{notice}]" in result["text"] and result["text"].startswith("ran")


@pytest.mark.slow
async def test_a_run_waiting_for_a_busy_kernel_answers_by_its_deadline(
    jp_fetch, jp_root_dir, jp_serverapp
):
    other = await shared_with_a_person(
        jp_fetch, jp_serverapp, jp_root_dir / "busy.ipynb", "print('agent')"
    )
    try:
        await other.execute("import time; time.sleep(60)")  # the person's cell runs
        start = time.monotonic()
        result = await run_ok(jp_fetch, notebook_path="busy.ipynb", cell_index=0, timeout=2)
        took = time.monotonic() - start
    finally:
        await jp_serverapp.kernel_manager.interrupt_kernel(other.kernel_id)
        other.close()
    assert result["timedOut"] is True, result
    # Within the deadline + 1 s.
    assert took < 3.0, took


@pytest.fixture
def slow_websockets(request):
    """A proxy in front of the gateway's kernel websockets, made slow by the test."""
    proxy = SlowWebsocketProxy(request.getfixturevalue("kernel_gateway"))
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.mark.parametrize("jp_server_config", ["gateway"], indirect=True)
class TestASlowGatewayWebsocket:
    """A gateway slow to accept or to close a kernel's websocket (remote, or loaded).

    jupyter_server's gateway client opens and closes its websocket with blocking calls; on the
    event loop they held the whole server, and the deadline with it.
    """

    @pytest.fixture
    def gateway_ws_url(self, slow_websockets):
        return slow_websockets.url.replace("http://", "ws://")

    @pytest.mark.parametrize("slow", ["accept", "close"])
    async def test_a_run_beside_a_busy_kernel_still_answers_by_its_deadline(
        self, jp_fetch, jp_root_dir, jp_serverapp, slow_websockets, slow
    ):
        # The person's kernel, started and kept busy as from the lab: the tool has no
        # connection to it yet, and the one it opens waits for the kernel (it answers only
        # between executions) until the deadline, then closes.
        write_notebook(jp_root_dir / "slow.ipynb", "print('agent')")
        body = {"path": "slow.ipynb", "type": "notebook", "name": "slow.ipynb"}
        body["kernel"] = {"name": "python3"}
        response = await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))
        kernel_id = json.loads(response.body)["kernel"]["id"]
        other = OtherClient(jp_serverapp, kernel_id)
        try:
            await other.ready()
            await other.execute("import time; time.sleep(60)")
            spec()  # the answer's check reads the wire format once, not within the timing
            if slow == "accept":  # accepted after the deadline
                slow_websockets.accept_delay = 4.0
            else:  # its close never answered (the client gives up after 3 s)
                slow_websockets.hold_after = 0.5
            start = time.monotonic()
            result = await run_ok(jp_fetch, notebook_path="slow.ipynb", cell_index=0, timeout=2)
            took = time.monotonic() - start
        finally:
            slow_websockets.accept_delay, slow_websockets.hold_after = 0.0, None
            await jp_serverapp.kernel_manager.interrupt_kernel(kernel_id)
            other.close()
        assert result["timedOut"] is True, result
        assert result["text"] == "[Kernel busy: nothing was run within 2 seconds]", result
        # Within the deadline + 1 s (before: the 4 s accept, or the 3 s close, on top of it).
        assert took < 3.0, took

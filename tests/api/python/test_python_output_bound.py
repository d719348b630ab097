"""The tool's own kernels bound their output messages at the source; other kernels are untouched.

A session kernel's stdout/stderr flush at ``STREAM_BOUND_CHARS`` as well as on ipykernel's
interval, so the server never has to hold one huge stream message; a kernel the tool did not
start (a person's kernel) keeps ipykernel's defaults.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
import zmq

from jupyter_xcsh import memory
from jupyter_xcsh.execution.kernel.connection import IOPUB_HIGH_WATER_MARK
from jupyter_xcsh.execution.python.prelude import STREAM_BOUND_CHARS
from tests.support.inplace import run_ok, wait_until, write_notebook
from tests.support.python_tool import REQUEST_TIMEOUT, run

pytestmark = pytest.mark.timeout(300)

SIZE = 3 * 1024 * 1024  # characters printed: three bounds' worth

#: Records the length of every stream message the kernel's stdout sends (its session builds
#: each message: a stand-in session sees them all, on whichever thread flushes), prints
#: ``SIZE`` characters in one write, and saves the lengths and the class of ``sys.stdout`` to
#: ``sizes.json``.
RECORD_MESSAGES = f"""
import json, sys
sizes = []
session = sys.stdout.session
class Recording:
    def __getattr__(self, name):
        return getattr(session, name)
    def msg(self, msg_type, content=None, *args, **kwargs):
        sizes.append(len(content["text"]))
        return session.msg(msg_type, content, *args, **kwargs)
sys.stdout.session = Recording()
try:
    sys.stdout.write("x" * {SIZE})
    sys.stdout.flush()
finally:
    sys.stdout.session = session
with open("sizes.json", "w") as f:
    json.dump({{"sizes": sizes, "stream": type(sys.stdout).__name__}}, f)
"""


@pytest.mark.slow
@pytest.mark.fast_path  # kernel_stream_bound (XcshSettings.bound_kernel_streams)
async def test_a_huge_print_leaves_a_session_kernel_in_messages_of_at_most_the_bound(
    jp_fetch, jp_root_dir
):
    result = await run(jp_fetch, RECORD_MESSAGES)

    assert result["isError"] is False, result
    assert result["totalBytes"] == SIZE  # nothing lost on the way
    recorded = json.loads((jp_root_dir / "sizes.json").read_text())
    sizes = recorded["sizes"]
    assert sum(sizes) == SIZE
    assert len(sizes) >= SIZE // STREAM_BOUND_CHARS
    assert max(sizes) <= STREAM_BOUND_CHARS


@pytest.mark.fast_path  # kernel_stream_bound (XcshSettings.bound_kernel_streams)
async def test_many_small_writes_are_sent_once_they_reach_the_bound(jp_fetch, jp_root_dir):
    # A tight loop of 1 KiB lines: ipykernel alone sends what 0.2 s buffered, here all of it.
    code = RECORD_MESSAGES.replace(
        f'sys.stdout.write("x" * {SIZE})',
        f'for _ in range({SIZE // 1024}):\n        sys.stdout.write("y" * 1023 + "\\n")',
    )
    result = await run(jp_fetch, code)

    assert result["totalBytes"] == SIZE, result
    sizes = json.loads((jp_root_dir / "sizes.json").read_text())["sizes"]
    assert sum(sizes) == SIZE
    assert len(sizes) >= SIZE // STREAM_BOUND_CHARS
    assert max(sizes) <= STREAM_BOUND_CHARS


async def test_a_kernel_the_tool_did_not_start_keeps_ipykernel_defaults(
    jp_fetch, jp_serverapp, jp_root_dir
):
    await run(jp_fetch, "pass")  # a session kernel runs the prelude in the same server
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kernel_id = json.loads(response.body)["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=REQUEST_TIMEOUT)
        reply = await client.execute_interactive(
            f"import os; os.chdir({str(jp_root_dir)!r})\n" + RECORD_MESSAGES,
            timeout=REQUEST_TIMEOUT,
            output_hook=lambda msg: None,
        )
    finally:
        client.stop_channels()
    assert reply["content"]["status"] == "ok", reply["content"]
    recorded = json.loads((jp_root_dir / "sizes.json").read_text())
    assert recorded["stream"] == "OutStream"
    assert recorded["sizes"] == [SIZE]  # one message, as ipykernel sends it


async def test_a_run_in_place_leaves_the_persons_kernel_as_ipykernel_made_it(
    jp_fetch, jp_serverapp, jp_root_dir
):
    write_notebook(jp_root_dir / "person.ipynb", RECORD_MESSAGES)

    result = await run_ok(jp_fetch, notebook_path="person.ipynb", all=True)

    recorded = json.loads((jp_root_dir / "sizes.json").read_text())
    assert recorded["stream"] == "OutStream"
    assert recorded["sizes"] == [SIZE]  # one message, as ipykernel sends it
    kernel = jp_serverapp.kernel_manager.get_kernel(result["kernel"]["id"])
    assert kernel._activity_stream is not None  # the server watches it as any kernel


@pytest.mark.fast_path  # kernel_stream_bound (XcshSettings.bound_kernel_streams)
async def test_the_server_reads_a_session_kernel_with_a_small_iopub_queue(jp_fetch, jp_serverapp):
    await run(jp_fetch, "pass")
    pool = jp_serverapp.web_app.settings["xcsh"].execution.pool
    (session,) = pool.find("default")
    socket = session.connection.client.iopub_channel.socket

    assert socket.getsockopt(zmq.RCVHWM) == IOPUB_HIGH_WATER_MARK


@pytest.mark.slow
async def test_the_server_gives_freed_memory_back_after_a_large_call_only(jp_fetch, monkeypatch):
    """The heap is trimmed after a call with more than ``TRIM_AFTER_BYTES`` of output, once,
    on a worker thread (``TrimSoon``): never on the event loop's thread, where walking the
    heap under its lock held up every other request."""
    trims: list[tuple[int, bool]] = []
    on_loop_thread = threading.get_ident()
    monkeypatch.setattr(
        memory,
        "_malloc_trim",
        lambda pad: trims.append((pad, threading.get_ident() == on_loop_thread)),
    )

    await run(jp_fetch, "print('small')")
    await asyncio.sleep(memory.TRIM_DELAY * 3)
    assert trims == []
    size = memory.TRIM_AFTER_BYTES + 1024 * 1024
    result = await run(jp_fetch, f"import sys\n_ = sys.stdout.write('z' * {size})")
    assert result["totalBytes"] == size
    await wait_until(lambda: trims != [], timeout=10)
    await asyncio.sleep(memory.TRIM_DELAY * 3)
    assert trims == [(0, False)]


async def test_a_session_connection_runs_no_heartbeat_thread(jp_fetch, jp_serverapp):
    """The tool learns a kernel's death from the kernel manager: its connections start no
    jupyter_client heartbeat channel (a thread each, pinging every second, which closing the
    connection joined on the event loop)."""
    import threading

    await run(jp_fetch, "pass")
    pool = jp_serverapp.web_app.settings["xcsh"].execution.pool
    (session,) = pool.find("default")
    assert getattr(session.connection.client, "_hb_channel", None) is None
    assert [t for t in threading.enumerate() if type(t).__name__ == "HBChannel"] == []

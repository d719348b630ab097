"""Kernel messages already queued are read without pyzmq's futures (issue 14)."""

from __future__ import annotations

import asyncio
import time

import pytest
import zmq.asyncio

from jupyter_xcsh.execution.kernel import connection
from tests.support.python_tool import run

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
@pytest.mark.fast_path  # socket_views
async def test_queued_messages_are_taken_without_awaiting_the_socket(
    jp_fetch, jp_root_dir, monkeypatch
):
    awaited = decoded = 0
    receive, decode = zmq.asyncio.Socket.recv_multipart, connection.decode_message

    def counting_receive(self, *args, **kwargs):
        nonlocal awaited
        awaited += 1
        return receive(self, *args, **kwargs)

    def counting_decode(*args, **kwargs):
        nonlocal decoded
        decoded += 1
        return decode(*args, **kwargs)

    monkeypatch.setattr(zmq.asyncio.Socket, "recv_multipart", counting_receive)
    monkeypatch.setattr(connection, "decode_message", counting_decode)
    await run(jp_fetch, "from IPython.display import display")  # the session kernel is up
    awaited = decoded = 0
    code = (
        "import pathlib, time\npathlib.Path('started').touch()\ntime.sleep(0.5)\n"
        "for i in range(200):\n    display(i)"
    )
    call = asyncio.ensure_future(run(jp_fetch, code))
    deadline = time.monotonic() + 60
    while not (jp_root_dir / "started").exists():  # the kernel runs the cell, then sleeps
        assert time.monotonic() < deadline, "the cell did not start"
        await asyncio.sleep(0.01)
    # The server (this event loop) stops reading while the kernel displays: its messages wait
    # in the server's IOPub queue (8 messages for a session kernel) and in the kernel's.
    time.sleep(1.5)
    result = await call
    cell = result["cells"][0]
    assert cell["exitCode"] == 0, result
    # Every display arrived, in order (the text shows the first and last lines; the artifact all).
    assert (jp_root_dir / result["artifactPath"]).read_text().split() == [
        str(i) for i in range(200)
    ]
    assert decoded > 200
    assert awaited < decoded / 2, (awaited, decoded)

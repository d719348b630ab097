"""Kernel messages already queued are read without pyzmq's futures (issue 14)."""

from __future__ import annotations

import asyncio
import time

import pytest
import zmq.asyncio

from jupyter_xcsh.execution.kernel import connection
from tests.conftest import fast_paths_off
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


async def test_a_message_waited_for_is_read_through_the_view_unless_fast_paths_are_off(
    jp_fetch, monkeypatch
):
    """Waiting, the pump awaits the socket's readiness alone and reads through its view.

    pyzmq's ``recv_multipart`` reads through ``zmq.Socket``'s Python layer, converting flags
    through enums on every frame; with the fast paths off it is what the pump awaits.
    """
    awaited = 0
    receive = zmq.asyncio.Socket.recv_multipart

    def counting_receive(self, *args, **kwargs):
        nonlocal awaited
        awaited += 1
        return receive(self, *args, **kwargs)

    await run(jp_fetch, "pass")  # the session kernel is up, its pumps waiting
    monkeypatch.setattr(zmq.asyncio.Socket, "recv_multipart", counting_receive)
    for _ in range(3):
        # The kernel answers after the pumps found nothing queued: each message is waited for.
        result = await run(jp_fetch, "import time\ntime.sleep(0.05)\nprint('done')")
        assert result["text"] == "done"
    if fast_paths_off():
        assert awaited > 0
    else:
        assert awaited == 0

"""The python tool as an NDJSON stream: progress lines arrive live; a disconnect interrupts."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import jsonschema
import pytest
from tornado.httputil import url_concat

from tests.support.gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from tests.support.openapi_check import spec
from tests.support.python_tool import REQUEST_TIMEOUT, eventually, sessions

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config):
    return use_kernels(request, jp_server_config)


def check_event(event):
    schema = {**spec()["components"]["schemas"]["PythonStreamEvent"]}
    schema["components"] = spec()["components"]
    jsonschema.validate(event, schema, cls=jsonschema.Draft202012Validator)


async def stream(jp_fetch, body):
    """POST with ``Accept: application/x-ndjson``; return ``[(arrival, event)]``."""
    lines: list[tuple[float, dict]] = []
    pending = bytearray()

    def receive(data: bytes) -> None:
        pending.extend(data)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            event = json.loads(line)
            check_event(event)
            lines.append((time.monotonic(), event))

    response = await jp_fetch(
        "api",
        "xcsh",
        "python",
        method="POST",
        body=json.dumps(body),
        headers={"Accept": "application/x-ndjson"},
        streaming_callback=receive,
        request_timeout=REQUEST_TIMEOUT,
    )
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert not pending
    return lines


@pytest.mark.slow
async def test_progress_lines_arrive_before_the_final_result(jp_fetch):
    code = "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')"
    lines = await stream(jp_fetch, {"cells": [{"code": code, "title": "slow"}]})

    events = [event for _, event in lines]
    assert events[0]["type"] == "start"
    assert events[0]["cells"] == [{"index": 0, "title": "slow", "code": code}]
    assert {"type": "cell", "index": 0, "status": "running"} in events
    assert events[-2] == {"type": "cell", "index": 0, "status": "complete"}
    assert events[-1]["type"] == "result"
    assert events[-1]["result"]["text"] == "first\nsecond"
    first_at = next(t for t, e in lines if e["type"] == "chunk" and "first" in e["text"])
    # The kernel sleeps 1.5 s between the prints: the first chunk must not wait for the end.
    assert lines[-1][0] - first_at > 1.0
    streamed = "".join(e["text"] for e in events if e["type"] == "chunk")
    assert streamed == "first\nsecond\n"


async def test_displays_and_status_events_are_streamed(jp_fetch):
    code = (
        "from IPython.display import display\n"
        "status('step', n=1)\n"
        "display({'application/json': {'a': 1}, 'text/plain': 'a'}, raw=True)"
    )
    events = [e for _, e in await stream(jp_fetch, {"cells": [{"code": code}]})]

    assert {"type": "status", "index": 0, "event": {"op": "step", "n": 1}} in events
    assert {"type": "display", "index": 0, "kind": "json", "data": {"a": 1}} in events
    assert events[-1]["result"]["statusEvents"] == [{"op": "step", "n": 1}]


async def test_errors_before_the_run_are_plain_http_errors(jp_fetch):
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as e:
        await stream(jp_fetch, {"cells": [], "cwd": "missing"})
    assert e.value.code == 400


@pytest.mark.slow
async def test_a_client_that_disconnects_interrupts_its_call(
    jp_fetch, jp_http_port, jp_base_url, jp_auth_header, jp_root_dir
):
    await asyncio.wait_for(_warm(jp_fetch), REQUEST_TIMEOUT)
    code = (
        "import time, pathlib\nprint('running', flush=True)\ntime.sleep(30)\n"
        "pathlib.Path('finished').write_text('x')"
    )
    body = json.dumps({"cells": [{"code": code}], "timeout": 120}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    path = url_concat(f"{jp_base_url.rstrip('/')}/api/xcsh/python", {})
    headers = "".join(f"{k}: {v}\r\n" for k, v in jp_auth_header.items())
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}"
        f"Accept: application/x-ndjson\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    received = b""
    while b'"running' not in received:
        received += await asyncio.wait_for(reader.read(4096), 60)

    writer.close()
    await writer.wait_closed()

    # Interrupted, the call ends and frees the session long before the cell's 30 s sleep.
    started = time.monotonic()
    await eventually(lambda: _idle(jp_fetch), timeout=20)
    assert time.monotonic() - started < 20
    assert not (jp_root_dir / "finished").exists()


async def _warm(jp_fetch):
    await jp_fetch(
        "api",
        "xcsh",
        "python",
        method="POST",
        body=json.dumps({"cells": [{"code": "1"}]}),
        request_timeout=REQUEST_TIMEOUT,
    )


async def _idle(jp_fetch):
    return not any(s["busy"] for s in await sessions(jp_fetch))


# Local kernels only: a gateway drops IOPub output past its own rate limit (1 MB/s), so it
# cannot outrun a client deterministically; the stream writer is the same for both.
@pytest.mark.slow
@pytest.mark.parametrize("jp_server_config", ["local"], indirect=True)
async def test_a_client_reading_slowly_gets_skipped_output_not_an_unbounded_buffer(
    jp_fetch, jp_http_port, jp_base_url, jp_auth_header
):
    await asyncio.wait_for(_warm(jp_fetch), REQUEST_TIMEOUT)
    lines, size = 50, 1000 * 1000  # ~50 MB, printed while the client reads nothing
    code = (
        f"import sys\nfor _ in range({lines}):\n"
        f"    _ = sys.stdout.write('x' * {size - 1} + '\\n')\n"
        "    sys.stdout.flush()  # one message each: the stream outruns the client"
    )
    body = json.dumps({"cells": [{"code": code}], "timeout": 240}).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that cannot keep up
    sock.connect(("127.0.0.1", jp_http_port))
    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock, limit=2**26)
    headers = "".join(f"{k}: {v}\r\n" for k, v in jp_auth_header.items())
    # HTTP/1.0: no chunked encoding, the server closes the connection at the end.
    writer.write(
        f"POST {jp_base_url.rstrip('/')}/api/xcsh/python HTTP/1.0\r\nHost: 127.0.0.1\r\n"
        f"{headers}Accept: application/x-ndjson\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    await eventually(lambda: _busy(jp_fetch), timeout=60, interval=0.05)
    # The whole call runs while the client reads nothing at all.
    await eventually(lambda: _idle(jp_fetch), timeout=240, interval=0.2)

    raw = await asyncio.wait_for(reader.read(), 120)
    writer.close()
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    events = [json.loads(line) for line in payload.splitlines()]
    for event in events:
        check_event(event)
    result = events[-1]["result"]
    total = lines * size
    assert result["totalBytes"] == total
    chunks = [e for e in events if e["type"] == "chunk"]
    skipped = sum(e.get("skipped", 0) for e in chunks)
    assert skipped > 0
    # Every byte is either streamed or counted as skipped; what the client missed is the head.
    assert sum(len(e["text"]) for e in chunks) + skipped == total
    assert all(len(e["text"]) <= 51200 for e in chunks if "skipped" in e)
    assert len(payload) < 16 * 1024 * 1024  # not the 50 MiB the kernel printed
    assert events[-2] == {"type": "cell", "index": 0, "status": "complete"}


async def _busy(jp_fetch):
    return any(s["busy"] for s in await sessions(jp_fetch))

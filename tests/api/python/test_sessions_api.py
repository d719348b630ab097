"""The sessions API and the session pool: listing, shutdown, interrupt, queue, eviction, cleanup."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from tests.support.gateway import config_on_both_kernels, kernel_gateway, xcsh_settings  # noqa: F401
from tests.support.python_tool import (
    REQUEST_TIMEOUT,
    StreamedCall,
    eventually,
    kernel_ids,
    run,
    sessions,
    tool,
)

pytestmark = pytest.mark.timeout(300)


SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(60)"


async def busy(jp_fetch, name="default"):
    return any(s["busy"] for s in await sessions(jp_fetch) if s["name"] == name)


@pytest.mark.slow
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


@pytest.mark.slow
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
    call = StreamedCall(jp_fetch, {"cells": [{"code": SLEEPER}], "timeout": 120})
    await eventually(call.printed("started"))  # the cell runs in the kernel

    response = await jp_fetch(
        "api", "xcsh", "sessions", "default", "interrupt", method="POST", body=b""
    )
    result = await call.result(30)

    assert json.loads(response.body) == {"interrupted": True}
    assert result["cancelled"] is True
    assert result["timedOut"] is False
    assert result["isError"] is True
    assert "KeyboardInterrupt" in result["text"]
    assert (await run(jp_fetch, "print(kept)"))["text"] == "1"


#: A cell that runs until the test creates the file ``go`` in the root (no timing window).
GATED = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\n"


@pytest.mark.slow
async def test_calls_on_one_session_run_one_at_a_time_in_order(jp_fetch, jp_root_dir):
    await run(jp_fetch, "order = []")
    first = asyncio.create_task(run(jp_fetch, GATED + "order.append('first')"))
    await eventually(lambda: busy(jp_fetch))
    second = asyncio.create_task(run(jp_fetch, "order.append('second')\nprint(order)"))
    # The second call waits in the queue while the first runs.
    await eventually(lambda: _queue_length_is(jp_fetch, 1), interval=0.05)

    (jp_root_dir / "go").write_text("")
    await first
    assert (await second)["text"] == "['first', 'second']"


async def _queue_length_is(jp_fetch, n):
    return any(s["queueLength"] == n for s in await sessions(jp_fetch))


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 2}])
async def test_the_least_recently_used_session_is_evicted_past_the_cap(jp_fetch):
    a = (await run(jp_fetch, "1", session="a"))["session"]["kernelId"]
    b = (await run(jp_fetch, "1", session="b"))["session"]["kernelId"]
    await run(jp_fetch, "1", session="a")  # a is now more recent than b

    c = (await run(jp_fetch, "1", session="c"))["session"]["kernelId"]

    assert sorted(s["name"] for s in await sessions(jp_fetch)) == ["a", "c"]
    assert {a, c} <= await kernel_ids(jp_fetch)
    assert b not in await kernel_ids(jp_fetch)


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"idle_timeout": 1.0, "cleanup_interval": 0.5}])
async def test_idle_sessions_are_disposed_by_the_cleanup(jp_fetch):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]

    # Idle for 1 s, found by a sweep every 0.5 s, then shut down: gone well within 15 s.
    await eventually(lambda: _gone(jp_fetch, kernel_id), timeout=15)


async def _gone(jp_fetch, kernel_id):
    return await sessions(jp_fetch) == [] and kernel_id not in await kernel_ids(jp_fetch)


@pytest.mark.slow
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
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
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


async def _no_kernels(jp_fetch):
    return await kernel_ids(jp_fetch) == set()


async def test_deleting_a_busy_session_cancels_its_call_and_keeps_its_output(jp_fetch):
    call = StreamedCall(jp_fetch, {"cells": [{"code": SLEEPER}], "timeout": 120})
    await eventually(call.printed("started"), timeout=120)

    response = await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")
    result = await call.result(30)

    assert response.code == 204
    assert result["cancelled"] is True
    assert result["isError"] is True
    cell = result["cells"][0]
    assert (cell["status"], cell["exitCode"], cell["output"]) == ("error", None, "started\n")
    assert result["text"] == "started\n\nSession was shut down"
    await eventually(lambda: _no_kernels(jp_fetch), timeout=60)


async def test_stopping_the_server_mid_call_ends_the_call_cleanly(jp_fetch, jp_serverapp):
    call = StreamedCall(jp_fetch, {"cells": [{"code": SLEEPER}], "timeout": 120})
    await eventually(call.printed("started"), timeout=120)

    await jp_serverapp.extension_manager.stop_all_extensions()
    result = await call.result(30)

    assert result["cancelled"] is True
    assert result["cells"][0]["status"] == "error"
    assert result["cells"][0]["output"] == "started\n"
    assert result["text"] == "started\n\nSession was shut down"


@pytest.mark.slow
async def test_a_json_client_that_disconnects_interrupts_its_call(jp_fetch, jp_root_dir):
    await run(jp_fetch, "import time, pathlib")
    code = "time.sleep(30)\npathlib.Path('finished').write_text('x')"
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch(
            "api",
            "xcsh",
            "python",
            method="POST",
            body=json.dumps({"cells": [{"code": code}], "timeout": 120}),
            request_timeout=3,
        )
    assert e.value.code == 599  # the client gave up and closed the connection

    # Interrupted, the call ends and frees the session long before the cell's 30 s sleep.
    await eventually(lambda: _all_idle(jp_fetch), timeout=15)
    result = await run(jp_fetch, "print('next')", timeout=10)
    assert result["text"] == "next"
    assert not (jp_root_dir / "finished").exists()


async def _all_idle(jp_fetch):
    listed = await sessions(jp_fetch)
    return bool(listed) and not any(s["busy"] for s in listed)


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 2}])
async def test_eviction_never_picks_a_busy_session(jp_fetch, jp_root_dir):
    await run(jp_fetch, "1", session="a")
    await run(jp_fetch, "1", session="b")
    # a is busy, and used less recently than b: the cap must evict b all the same.
    slow = asyncio.create_task(run(jp_fetch, GATED + "print('a done')", session="a"))
    await eventually(lambda: busy(jp_fetch, "a"), interval=0.02)
    b = (await run(jp_fetch, "1", session="b"))["session"]["kernelId"]

    await run(jp_fetch, "1", session="c")
    (jp_root_dir / "go").write_text("")
    a = await asyncio.wait_for(slow, 60)

    assert (a["text"], a["isError"]) == ("a done", False)
    assert sorted(s["name"] for s in await sessions(jp_fetch)) == ["a", "c"]
    assert b not in await kernel_ids(jp_fetch)


class TestNoToken:
    async def test_calls_without_a_token_are_refused_and_run_nothing(
        self, jp_fetch, jp_http_port, jp_base_url, jp_root_dir
    ):
        from tornado.httpclient import AsyncHTTPClient

        client = AsyncHTTPClient()
        base = f"http://127.0.0.1:{jp_http_port}{jp_base_url.rstrip('/')}/api/xcsh"
        code = "import pathlib\npathlib.Path('ran').write_text('x')"
        requests = [
            ("POST", "/python", json.dumps({"cells": [{"code": code}]})),
            ("GET", "/sessions", None),
            ("DELETE", "/sessions/default", None),
            ("POST", "/sessions/default/interrupt", ""),
        ]
        for method, path, body in requests:
            response = await client.fetch(
                base + path,
                method=method,
                body=body,
                raise_error=False,
                request_timeout=REQUEST_TIMEOUT,
            )
            assert response.code in (401, 403), (method, path, response.code)
        assert not (jp_root_dir / "ran").exists()
        assert await sessions(jp_fetch) == []
        assert await kernel_ids(jp_fetch) == set()


@pytest.mark.slow
async def test_a_cwd_addresses_one_of_two_sessions_with_the_same_name(jp_fetch, jp_root_dir):
    (jp_root_dir / "sub").mkdir()
    in_root = (await run(jp_fetch, "import time"))["session"]["kernelId"]
    in_sub = (await run(jp_fetch, "import time", cwd="sub"))["session"]["kernelId"]
    root_call = StreamedCall(jp_fetch, {"cells": [{"code": GATED + "print('root')"}]})
    sub_call = StreamedCall(jp_fetch, {"cells": [{"code": "time.sleep(60)"}], "cwd": "sub"})
    await eventually(lambda: _busy_cwds(jp_fetch, {"", "sub"}))

    response = await jp_fetch(
        "api",
        "xcsh",
        "sessions",
        "default",
        "interrupt",
        method="POST",
        body=b"",
        params={"cwd": "sub"},
    )

    assert json.loads(response.body) == {"interrupted": True}
    assert (await sub_call.result(30))["cancelled"] is True
    assert await _busy_cwds(jp_fetch, {""})  # the other session runs on
    (jp_root_dir / "go").write_text("")
    assert (await root_call.result(60))["text"] == "root"
    response = await jp_fetch(
        "api", "xcsh", "sessions", "default", method="DELETE", params={"cwd": "/sub/"}
    )
    assert response.code == 204
    assert [s["cwd"] for s in await sessions(jp_fetch)] == [""]
    assert in_root in await kernel_ids(jp_fetch)
    assert in_sub not in await kernel_ids(jp_fetch)
    for method in ("DELETE", "POST"):
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch(
                "api",
                "xcsh",
                "sessions",
                "default",
                *(("interrupt",) if method == "POST" else ()),
                method=method,
                body=b"" if method == "POST" else None,
                params={"cwd": "sub"},
            )
        assert e.value.code == 404
        message = json.loads(e.value.response.body)["message"]
        assert message == "No python session named default with cwd 'sub'"


async def _busy_cwds(jp_fetch, cwds):
    return {s["cwd"] for s in await sessions(jp_fetch) if s["busy"]} == cwds

"""The python tool's kernels are server sessions named for the lab, for as long as they live.

JupyterLab's Running panel names a kernel after its server sessions; the tool's kernels had
none ("No sessions connected"). Each session's kernel is recorded as ``Agent: <session>`` of
type ``xcsh``; the record goes with the kernel whatever disposes of it. The records are read
from the session manager's database as well as through ``GET /api/sessions``, which would
also drop a record whose kernel is gone, and so would hide a record left behind.
"""

from __future__ import annotations

import json

import pytest

from tests.support.gateway import config_on_both_kernels, kernel_gateway, xcsh_settings  # noqa: F401
from tests.support.python_tool import eventually, kernel_ids, run

pytestmark = pytest.mark.timeout(300)


def recorded(jp_serverapp):
    """The session manager's records of the tool's kernels: ``{name: kernel id}``."""
    cursor = jp_serverapp.session_manager.cursor
    rows = cursor.execute("SELECT name, kernel_id FROM session WHERE type='xcsh'").fetchall()
    return dict(rows)


async def server_sessions(jp_fetch):
    """``GET /api/sessions``: ``{name: (type, path, kernel id)}``."""
    listed = json.loads((await jp_fetch("api", "sessions")).body)
    return {s["name"]: (s["type"], s["path"], s["kernel"]["id"]) for s in listed}


@pytest.mark.slow
async def test_each_sessions_kernel_is_a_server_session_named_for_its_session(
    jp_fetch, jp_root_dir, jp_serverapp
):
    (jp_root_dir / "sub").mkdir()
    a = (await run(jp_fetch, "1", session="a"))["session"]["kernelId"]
    b = (await run(jp_fetch, "1", session="b", cwd="sub"))["session"]["kernelId"]

    await eventually(lambda: _listed(jp_serverapp, {"Agent: a": a, "Agent: b": b}))
    assert await server_sessions(jp_fetch) == {
        "Agent: a": ("xcsh", "", a),
        "Agent: b": ("xcsh", "sub", b),
    }


async def test_deleting_a_session_removes_its_record(jp_fetch, jp_serverapp):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]
    await eventually(lambda: _listed(jp_serverapp, {"Agent: default": kernel_id}))

    await jp_fetch("api", "xcsh", "sessions", "default", method="DELETE")

    assert recorded(jp_serverapp) == {}
    assert await server_sessions(jp_fetch) == {}


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"max_sessions": 1}])
async def test_an_evicted_sessions_record_goes_with_its_kernel(jp_fetch, jp_serverapp):
    await run(jp_fetch, "1", session="a")
    b = (await run(jp_fetch, "1", session="b"))["session"]["kernelId"]

    await eventually(lambda: _listed(jp_serverapp, {"Agent: b": b}))
    assert await server_sessions(jp_fetch) == {"Agent: b": ("xcsh", "", b)}


@pytest.mark.slow
@pytest.mark.parametrize("xcsh_settings", [{"idle_timeout": 1.0, "cleanup_interval": 0.5}])
async def test_an_idle_sessions_record_goes_with_its_kernel(jp_fetch, jp_serverapp):
    kernel_id = (await run(jp_fetch, "1"))["session"]["kernelId"]

    # Idle for 1 s, found by a sweep every 0.5 s, then shut down: gone well within 15 s.
    await eventually(lambda: _gone(jp_fetch, kernel_id), timeout=15)
    assert recorded(jp_serverapp) == {}


async def _gone(jp_fetch, kernel_id):
    return kernel_id not in await kernel_ids(jp_fetch)


@pytest.mark.slow
async def test_a_kernel_shut_down_from_the_lab_is_replaced_under_the_same_name(
    jp_fetch, jp_serverapp
):
    first = (await run(jp_fetch, "x = 1"))["session"]["kernelId"]
    await eventually(lambda: _listed(jp_serverapp, {"Agent: default": first}))
    (listed,) = json.loads((await jp_fetch("api", "sessions")).body)

    # The Running panel's shut down: the server session goes, and its kernel with it.
    await jp_fetch("api", "sessions", listed["id"], method="DELETE")
    result = await run(jp_fetch, "print('x' in globals())")

    second = result["session"]["kernelId"]
    assert (result["text"], result["session"]["stateLost"]) == ("False", True)
    await eventually(lambda: _listed(jp_serverapp, {"Agent: default": second}))


@pytest.mark.slow
async def test_a_per_call_kernel_is_listed_while_it_runs_only(jp_fetch, jp_serverapp):
    await run(jp_fetch, "1", mode="per-call")

    await eventually(lambda: _listed(jp_serverapp, {}))
    assert await server_sessions(jp_fetch) == {}


async def test_stopping_the_server_removes_every_record(jp_fetch, jp_serverapp):
    kernel_id = (await run(jp_fetch, "1", session="a"))["session"]["kernelId"]
    await eventually(lambda: _listed(jp_serverapp, {"Agent: a": kernel_id}))

    await jp_serverapp.extension_manager.stop_all_extensions()

    assert recorded(jp_serverapp) == {}


async def _listed(jp_serverapp, expected):
    return recorded(jp_serverapp) == expected

"""The kernel tool on real kernels: variables, inspect, status, interrupt, restart, change."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from tests.support.inplace import run_ok, shared_with_a_person, wait_until, write_notebook
from tests.support.mcp_client import TRANSPORTS, request, tool_via_mcp
from tests.support.openapi_check import assert_response_matches
from tests.support.python_tool import REQUEST_TIMEOUT, eventually, run, sessions

pytestmark = pytest.mark.timeout(300)

KERNEL = "/api/xcsh/kernel"


def kernel_tool(jp_fetch: Any, transport: str = "rest") -> Any:
    """``call(body) -> (status, json)`` for the kernel tool, checked against rest-api.yml."""
    if transport == "mcp":
        via_mcp = tool_via_mcp(jp_fetch, "kernel")

        async def call_mcp(body: dict[str, Any]) -> tuple[int, Any]:
            status, result = await via_mcp(body)
            assert_response_matches(KERNEL, "post", status, result)
            return status, result

        return call_mcp

    async def call(body: dict[str, Any]) -> tuple[int, Any]:
        try:
            response = await jp_fetch(
                "api",
                "xcsh",
                "kernel",
                method="POST",
                body=json.dumps(body),
                request_timeout=REQUEST_TIMEOUT,
            )
        except HTTPClientError as e:
            assert e.response is not None
            result = json.loads(e.response.body)
            assert_response_matches(KERNEL, "post", e.code, result)
            return e.code, result
        result = json.loads(response.body)
        assert_response_matches(KERNEL, "post", 200, result)
        return 200, result

    return call


async def ok(jp_fetch: Any, transport: str = "rest", **body: Any) -> Any:
    status, result = await kernel_tool(jp_fetch, transport)(body)
    assert status == 200, result
    return result


DATA = (
    "import numpy as np, pandas as pd\n"
    "a = np.arange(12, dtype='int64').reshape(3, 4)\n"
    "df = pd.DataFrame({'x': [1, 2, 3], 'name': ['p', 'q', 'r']})\n"
    "n = 5\n"
    "def f(x, y=2):\n"
    "    'Add.'\n"
    "    return x + y\n"
    "_private = 1"
)


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_variables_of_a_python_session_describe_numpy_and_pandas(jp_fetch, transport):
    await run(jp_fetch, DATA, session="vars")
    count = "print(get_ipython().execution_count)"
    before = int((await run(jp_fetch, count, session="vars"))["text"])

    result = await ok(jp_fetch, transport, action="variables", session="vars")

    found = {v["name"]: v for v in result["details"]["variables"]}
    assert list(found) == ["a", "df", "n", "f"]  # no module, no private or hidden name
    assert found["a"]["type"] == "numpy.ndarray"
    assert found["a"]["shape"] == [3, 4] and found["a"]["dtype"] == "int64"
    assert found["a"]["size"] == 12
    assert found["df"]["type"] == "pandas.DataFrame" and found["df"]["shape"] == [3, 2]
    assert found["df"]["columns"] == ["x", "name"]
    assert found["df"]["dtypes"][0] == "int64"
    assert found["n"] == {"name": "n", "type": "int", "repr": "5"}
    assert "a: numpy.ndarray · shape 3x4 · dtype int64" in result["text"]
    assert result["details"]["target"]["session"] == "vars"

    # Silent: the probe left no name behind and used no execution count.
    again = await ok(jp_fetch, transport, action="variables", session="vars")
    assert [v["name"] for v in again["details"]["variables"]] == list(found)
    after = int((await run(jp_fetch, count, session="vars"))["text"])
    assert after == before + 1  # the probes used no execution count


@pytest.mark.slow
async def test_variables_are_bounded(jp_fetch):
    await run(jp_fetch, "for i in range(300): globals()[f'v{i}'] = 'x' * 1000", session="many")

    result = await ok(jp_fetch, action="variables", session="many", max_variables=50)

    assert result["details"]["total"] == 301  # and i
    assert len(result["details"]["variables"]) == 50
    assert result["details"]["truncated"] is True
    assert all(len(v["repr"]) <= 200 for v in result["details"]["variables"])
    small = await ok(jp_fetch, action="variables", session="many", max_chars=1000)
    assert len(small["text"]) <= 1100
    assert "inspect one by name" in small["text"]


@pytest.mark.slow
async def test_inspect_shows_one_variable_at_length(jp_fetch):
    await run(jp_fetch, DATA, session="ins")

    frame = await ok(jp_fetch, action="inspect", session="ins", name="df")
    function = await ok(jp_fetch, action="inspect", session="ins", name="f")
    status, missing = await kernel_tool(jp_fetch)(
        {"action": "inspect", "session": "ins", "name": "nope"}
    )

    assert frame["details"]["variable"]["columns"] == ["x", "name"]
    assert "head:" in frame["text"] and "   x name" in frame["text"]
    assert function["details"]["variable"]["signature"] == "(x, y=2)"
    assert function["details"]["variable"]["doc"] == "Add."
    assert status == 404 and missing["message"] == "No variable named nope in python session ins"


async def test_variables_of_a_notebook_kernel_add_nothing_to_the_notebook(jp_fetch, jp_root_dir):
    path = jp_root_dir / "nb.ipynb"
    write_notebook(path, "x = 41\nimport numpy as np\nz = np.ones(3)")
    await run_ok(jp_fetch, notebook_path="nb.ipynb", cell_index=0)
    text = path.read_text()

    result = await ok(jp_fetch, action="variables", notebook_path="nb.ipynb", timeout=0)
    status = await ok(jp_fetch, action="status", notebook_path="nb.ipynb")

    found = {v["name"]: v for v in result["details"]["variables"]}
    assert found["x"]["repr"] == "41"
    assert found["z"]["shape"] == [3] and found["z"]["dtype"] == "float64"
    assert result["details"]["target"]["notebookPath"] == "nb.ipynb"
    assert path.read_text() == text
    assert status["details"]["state"] == "idle"
    assert status["details"]["executionCount"] == 1  # the probe used none
    assert "idle · execution count 1" in status["text"]


@pytest.mark.slow
async def test_a_notebook_kernel_busy_with_a_persons_cell_is_waited_for_or_busy(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "busy.ipynb"
    person_code = "import time\ntime.sleep(4)\ny = 7"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, person_code)
    try:
        msg_id = await other.execute(person_code)

        status, busy = await kernel_tool(jp_fetch)(
            {"action": "variables", "notebook_path": "busy.ipynb", "timeout": 0.5}
        )
        state = await ok(jp_fetch, action="status", notebook_path="busy.ipynb")
        waited = await ok(jp_fetch, action="variables", notebook_path="busy.ipynb", timeout=60)

        assert status == 409 and busy["reason"] == "kernel_busy"
        assert busy["message"].startswith("Kernel busy: a cell is running in the kernel of")
        assert state["details"]["state"] == "busy"
        running = state["details"]["running"]
        assert running["by"] == "person" and running["executionCount"] == 2
        assert running["cellIndex"] == 0 and running["cellId"] == "c0"
        # It waited for the person's cell to end: the name it defines last is there.
        assert "y" in {v["name"] for v in waited["details"]["variables"]}
        assert (await other.reply(msg_id))["status"] == "ok"
    finally:
        other.close()


@pytest.mark.slow
async def test_a_probe_queued_behind_a_persons_cell_not_yet_seen_answers_busy_uninterrupted(
    jp_fetch, jp_root_dir, jp_serverapp
):
    # The race: a person's cell began a moment before the request, its busy status not read
    # yet by the tool's connection, which then takes the kernel for idle and sends its probe.
    # Injected: once the connection has read the busy, it is made to forget it.
    path = jp_root_dir / "unseen.ipynb"
    person_code = "import time\ntime.sleep(6)\nz = 3"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "z = 1")
    try:
        msg_id = await other.execute(person_code)
        kernels = jp_serverapp.web_app.settings["xcsh"].inplace.kernels
        connected = kernels.connected(other.kernel_id)
        assert connected is not None
        await wait_until(lambda: connected.activity.busy)
        connected.activity.reset()  # its busy "not read yet"

        status, busy = await kernel_tool(jp_fetch)(
            {"action": "variables", "notebook_path": "unseen.ipynb", "timeout": 0.5}
        )

        assert status == 409 and busy["reason"] == "kernel_busy", busy
        # The person's cell was never interrupted: it ends as it would have.
        assert (await other.reply(msg_id))["status"] == "ok"
        after = await ok(jp_fetch, action="variables", notebook_path="unseen.ipynb", timeout=60)
        found = {v["name"]: v for v in after["details"]["variables"]}
        assert found["z"]["repr"] == "3"
    finally:
        other.close()


@pytest.mark.slow
async def test_restart_is_refused_while_a_persons_cell_runs_unless_forced(
    jp_fetch, jp_root_dir, jp_serverapp
):
    path = jp_root_dir / "r.ipynb"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "x = 1")
    try:
        msg_id = await other.execute("import time\ntime.sleep(60)")

        status, refused = await kernel_tool(jp_fetch)(
            {"action": "restart", "notebook_path": "r.ipynb", "timeout": 1}
        )
        assert status == 409 and refused["reason"] == "kernel_busy"
        assert "give force: true" in refused["message"]

        forced = await ok(jp_fetch, action="restart", notebook_path="r.ipynb", force=True)
        assert forced["details"]["stateLost"] is True
        assert forced["details"]["wasBusy"] is True
        del msg_id  # its kernel process is gone: no reply ever comes
    finally:
        other.close()
    after = await ok(jp_fetch, action="variables", notebook_path="r.ipynb", timeout=60)
    assert "x" not in {v["name"] for v in after["details"]["variables"]}


@pytest.mark.slow
async def test_restart_of_an_idle_notebook_kernel_loses_its_state(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "idle.ipynb", "x = 1")
    first = await run_ok(jp_fetch, notebook_path="idle.ipynb", cell_index=0)

    result = await ok(jp_fetch, action="restart", notebook_path="idle.ipynb")

    assert result["details"]["stateLost"] is True and result["details"]["wasBusy"] is False
    assert result["details"]["target"]["kernelId"] == first["kernel"]["id"]
    after = await ok(jp_fetch, action="variables", notebook_path="idle.ipynb", timeout=60)
    assert after["details"]["variables"] == []


async def test_interrupt_stops_the_running_cell(jp_fetch, jp_root_dir, jp_serverapp):
    path = jp_root_dir / "int.ipynb"
    other = await shared_with_a_person(jp_fetch, jp_serverapp, path, "x = 1")
    try:
        msg_id = await other.execute("import time\ntime.sleep(60)")

        result = await ok(jp_fetch, action="interrupt", notebook_path="int.ipynb")

        reply = await other.reply(msg_id, timeout=30)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert result["details"]["interrupted"] is True
    finally:
        other.close()


@pytest.mark.slow
async def test_interrupt_of_a_python_session_cancels_its_call(jp_fetch):
    await run(jp_fetch, "x = 1", session="long")
    call = asyncio.ensure_future(run(jp_fetch, "import time; time.sleep(60)", session="long"))
    await asyncio.sleep(1.5)

    result = await ok(jp_fetch, action="interrupt", session="long")

    assert result["details"]["interrupted"] is True
    assert (await call)["cancelled"] is True


@pytest.mark.slow
async def test_change_gives_the_notebook_a_new_kernel(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "ch.ipynb", "x = 1")
    first = await run_ok(jp_fetch, notebook_path="ch.ipynb", cell_index=0)
    old = first["kernel"]["id"]

    status, unknown = await kernel_tool(jp_fetch)(
        {"action": "change", "notebook_path": "ch.ipynb", "kernel_name": "no-such-kernel"}
    )
    result = await ok(jp_fetch, action="change", notebook_path="ch.ipynb", kernel_name="python3")

    assert status == 400 and unknown["message"] == "No such kernel: no-such-kernel"
    details = result["details"]
    assert details["stateLost"] is True and details["previousKernel"]["id"] == old
    new = details["target"]["kernelId"]
    assert new != old
    listed = json.loads((await jp_fetch("api", "sessions")).body)
    assert [s["kernel"]["id"] for s in listed if s["path"] == "ch.ipynb"] == [new]
    kernels = {k["id"] for k in json.loads((await jp_fetch("api", "kernels")).body)}
    assert old not in kernels
    # The next run uses the new kernel, where x is not defined.
    after = await run_ok(jp_fetch, notebook_path="ch.ipynb", cell_index=0)
    assert after["kernel"]["id"] == new


@pytest.mark.slow
async def test_status_and_sessions_of_python_sessions(jp_fetch):
    await run(jp_fetch, "a = 1", "b = 2", session="st")

    status = await ok(jp_fetch, action="status", session="st")
    listed = await ok(jp_fetch, action="sessions")

    assert status["details"]["state"] == "idle"
    assert status["details"]["executionCount"] == 2
    assert listed["details"]["sessions"] == await sessions(jp_fetch)
    assert "st · cwd (root) · python3 · idle" in listed["text"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "action is required"),
        ({"action": "dance"}, "Invalid action: dance"),
        ({"action": "variables"}, "session or notebook_path is required"),
        ({"action": "variables", "session": "s", "bogus": 1}, "Unknown field: bogus"),
        (
            {"action": "variables", "session": "s", "notebook_path": "a.ipynb"},
            "Give session or notebook_path, not both",
        ),
        ({"action": "inspect", "session": "s"}, "name is required for the inspect action"),
        ({"action": "restart", "session": "s"}, "Field session is not accepted by the restart"),
        ({"action": "change", "notebook_path": "a.ipynb"}, "kernel_name is required"),
        ({"action": "variables", "session": "s", "timeout": "1"}, "timeout must be a number"),
        ({"action": "variables", "session": "s", "timeout": 601}, "timeout must be between"),
        ({"action": "variables", "session": "s", "max_variables": 0}, "max_variables must be"),
        ({"action": "restart", "notebook_path": "a.ipynb", "force": 1}, "force must be a boolean"),
        ({"action": "status", "cwd": "x", "notebook_path": "a.ipynb"}, "cwd goes with session"),
    ],
)
async def test_bad_bodies_are_400(jp_fetch, body, message):
    status, result = await kernel_tool(jp_fetch)(body)

    assert status == 400, result
    assert result["message"].startswith(message), result["message"]


async def test_unknown_session_or_notebook_is_404(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "cold.ipynb", "x = 1")
    call = kernel_tool(jp_fetch)

    no_session = await call({"action": "variables", "session": "ghost"})
    no_notebook = await call({"action": "status", "notebook_path": "ghost.ipynb"})
    no_kernel = await call({"action": "restart", "notebook_path": "cold.ipynb"})

    assert no_session == (404, {"message": "No python session named ghost", "reason": None})
    assert no_notebook[0] == 404 and no_notebook[1]["message"] == "Notebook not found: ghost.ipynb"
    assert no_kernel[0] == 404
    assert no_kernel[1]["message"].startswith("Notebook cold.ipynb has no running kernel")


async def test_a_path_outside_the_root_is_refused(jp_fetch):
    status, result = await kernel_tool(jp_fetch)(
        {"action": "status", "notebook_path": "../outside.ipynb"}
    )

    assert status == 403, result


async def test_the_kernel_tool_is_listed_over_mcp(jp_fetch):
    response = await request(jp_fetch, "tools/list")

    tools = {tool["name"]: tool for tool in response["result"]["tools"]}
    schema = tools["kernel"]["inputSchema"]
    assert schema["properties"]["action"]["enum"] == [
        "variables",
        "inspect",
        "status",
        "interrupt",
        "restart",
        "change",
        "sessions",
    ]
    assert schema["required"] == ["action"]


@pytest.mark.slow
async def test_a_forced_restart_stops_a_run_in_place_which_says_its_state_is_lost(
    jp_fetch, jp_root_dir
):
    write_notebook(jp_root_dir / "run.ipynb", "x = 1", "import time\ntime.sleep(60)")
    await run_ok(jp_fetch, notebook_path="run.ipynb", cell_index=0)
    running = asyncio.ensure_future(
        run_ok(jp_fetch, notebook_path="run.ipynb", cell_index=1, timeout=120)
    )

    async def agent_running() -> bool:
        status = await ok(jp_fetch, action="status", notebook_path="run.ipynb")
        return (status["details"]["running"] or {}).get("by") == "agent"

    await eventually(agent_running, timeout=60)
    state = await ok(jp_fetch, action="status", notebook_path="run.ipynb")
    refused = await kernel_tool(jp_fetch)({"action": "restart", "notebook_path": "run.ipynb"})
    forced = await ok(jp_fetch, action="restart", notebook_path="run.ipynb", force=True)
    result = await asyncio.wait_for(running, 60)

    assert state["details"]["running"]["cellIndex"] == 1
    assert refused[0] == 409 and refused[1]["reason"] == "kernel_busy"
    assert forced["details"]["wasBusy"] is True
    assert result["stateLost"] is True and result["isError"] is True


async def test_a_hidden_notebook_is_not_found(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / ".secret.ipynb", "x = 1")

    status, result = await kernel_tool(jp_fetch)(
        {"action": "status", "notebook_path": ".secret.ipynb"}
    )

    assert (status, result["message"]) == (404, "Notebook not found: .secret.ipynb")


class TestWithoutExecute:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyExecuteAuthorizer"
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_variables_are_refused_and_sessions_still_listed(self, jp_fetch, transport):
        call = kernel_tool(jp_fetch, transport)

        refused = await call({"action": "variables", "session": "any"})
        listed = await call({"action": "sessions"})

        assert refused[0] == 403
        assert refused[1]["message"] == "User is not authorized to execute on resource: kernels."
        assert listed[0] == 200 and listed[1]["details"]["sessions"] == []


class TestDenyingWrites:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_restart_is_refused(self, jp_fetch):
        status, result = await kernel_tool(jp_fetch)(
            {"action": "restart", "notebook_path": "x.ipynb"}
        )

        assert status == 403
        assert result["message"] == "User is not authorized to write on resource: kernels."


async def test_a_session_whose_kernel_was_shut_down_elsewhere_is_not_running(jp_fetch):
    first = await run(jp_fetch, "x = 1", session="gone")
    await jp_fetch("api", "kernels", first["session"]["kernelId"], method="DELETE")

    status, result = await kernel_tool(jp_fetch)({"action": "variables", "session": "gone"})
    state = await ok(jp_fetch, action="status", session="gone")

    assert status == 409 and result["reason"] == "kernel_not_running"
    assert result["message"].startswith("The kernel of python session gone is not running")
    assert state["details"]["state"] == "dead"

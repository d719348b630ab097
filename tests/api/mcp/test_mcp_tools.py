"""The tools over MCP (raw HTTP): schemas from rest-api.yml, streaming, cancel, images, links."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import jsonschema
import pytest

from jupyter_xcsh.mcp import tools as mcp_tools
from jupyter_xcsh.mcp.schemas import flatten, merge_actions, resolve
from jupyter_xcsh.tools import Caller
from jupyter_xcsh.tools.base import Permission
from tests.support.inplace import write_notebook
from tests.support.mcp_client import (
    VERSION,
    as_rest,
    call_tool,
    post,
    request,
    sse_messages,
    stream_call,
)
from tests.support.openapi_check import request_is_valid, spec
from tests.support.python_tool import REQUEST_TIMEOUT, eventually, run, sessions

pytestmark = pytest.mark.timeout(300)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
    )
).decode()


VALID_NOTEBOOK_REQUESTS = [
    {"action": "read", "notebook_path": "a.ipynb"},
    {"action": "read", "notebook_path": "a", "cell_index": 2, "end_index": 4, "max_chars": 9},
    {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": ""},
    {"action": "edit", "notebook_path": "a", "cell_id": "x", "content": "y", "to_index": None},
    {"action": "edit", "notebook_path": "a", "cell_index": 1, "content": "", "cell_type": "raw"},
    {"action": "insert", "notebook_path": "a", "cell_index": 0, "content": "#", "cell_id": None},
    {"action": "delete", "notebook_path": "a.ipynb", "cell_id": "x", "content": None},
    {"action": "move", "notebook_path": "a.ipynb", "cell_index": 3, "to_index": 0},
    {"action": "insert", "notebook_path": "a", "after_cell_id": "x", "content": "", "regex": None},
    {"action": "move", "notebook_path": "a", "cell_id": "x", "to_before_cell_id": "y"},
    {"action": "find", "notebook_path": "a", "pattern": "df", "regex": True, "cell_type": "code"},
    {
        "notebook_path": "a.ipynb",
        "changes": [
            {"action": "edit", "cell_id": "x", "content": "y"},
            {"action": "insert", "before_cell_id": "x", "content": "# z", "cell_type": "markdown"},
        ],
        "expected_revision": "0123456789abcdef",
        "action": None,
    },
]


VALID_RUN_REQUESTS = [
    {"notebook_path": "a.ipynb", "all": True},
    {"notebook_path": "a.ipynb", "cell_index": 0, "end_index": 2, "stop_on_error": False},
    {"notebook_path": "a", "cell_ids": ["x", "y"], "timeout": 5, "stdin": ["bob"]},
    {"notebook_path": "a", "cell_id": "x", "stdin": "ask", "expected_revision": "0" * 16},
]


def stripped(node):
    """A schema resolved against rest-api.yml, descriptions trimmed (YAML folding: a newline)."""
    return _trimmed(resolve(spec(), node))


def _trimmed(node):
    if isinstance(node, dict):
        return {
            k: v.strip() if k == "description" and isinstance(v, str) else _trimmed(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_trimmed(v) for v in node]
    return node


def rest_request(path):
    body = spec()["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    return stripped(body["schema"])


def leaf_requests(schema):
    """The request shapes a REST request schema offers, nested alternatives (oneOf) expanded."""
    if "oneOf" in schema and "properties" not in schema:
        return [leaf for part in schema["oneOf"] for leaf in leaf_requests(part)]
    return [schema]


def rest_properties(schema):
    """Every property a REST request schema names, its alternatives (oneOf, ...) included."""
    found = dict(schema.get("properties", {}))
    for keyword in ("oneOf", "anyOf", "allOf"):
        for part in schema.get(keyword, []):
            for name, field in rest_properties(part).items():
                found.setdefault(name, field)
    return found


def as_sent_over_mcp(body):
    """``body`` as a client bound to the MCP subset sends it: no nulls, no list for stdin."""
    return {
        k: v for k, v in body.items() if v is not None and not (k == "stdin" and type(v) is list)
    }


def subset_violations(schema, where="inputSchema"):
    """Where ``schema`` leaves the subset every client can send (empty when it does not)."""
    found = []
    for keyword in ("oneOf", "anyOf", "allOf"):
        if keyword in schema:
            found.append(f"{where}: {keyword}")
    if not isinstance(schema.get("type"), str) or schema["type"] == "null":
        found.append(f"{where}: type {schema.get('type')!r}")
    if None in schema.get("enum", []):
        found.append(f"{where}: null in enum")
    for name, field in schema.get("properties", {}).items():
        found += subset_violations(field, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        found += subset_violations(schema["items"], f"{where}[]")
    return found


async def listed_tools(jp_fetch):
    response = await request(jp_fetch, "tools/list")
    return {tool["name"]: tool for tool in response["result"]["tools"]}


async def test_the_tools_are_listed_with_valid_json_schemas(jp_fetch):
    tools = await listed_tools(jp_fetch)

    assert list(tools) == ["notebook", "python", "artifact", "files", "kernel"]
    for tool in tools.values():
        for schema in (tool["inputSchema"], tool["outputSchema"]):
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object"
            assert "$ref" not in json.dumps(schema)  # self-contained
        assert tool["description"] and tool["title"]
        assert "title" not in tool.get("annotations", {})  # said once
    assert tools["artifact"]["annotations"] == {"readOnlyHint": True}


async def test_every_tool_schema_has_one_type_per_property_and_no_alternatives(jp_fetch):
    tools = await listed_tools(jp_fetch)

    for name, tool in tools.items():
        assert subset_violations(tool["inputSchema"]) == [], name
    notebook = tools["notebook"]["inputSchema"]["properties"]
    assert notebook["cell_index"]["type"] == "integer"
    assert notebook["all"]["type"] == "boolean"
    assert notebook["cell_ids"]["type"] == "array"
    assert notebook["changes"] == {"type": "array", "items": {"type": "object"}}  # x-mcp-brief
    assert tools["python"]["inputSchema"]["properties"]["stdin"]["enum"] == [
        "notice",
        "eof",
        "ask",
    ]


#: Fields the tools take but do not list (``x-mcp-listed: false``): the lab's whole cell, the
#: addressing by ``[n]``, and ``detach`` (MCP's default, true, is what agents want).
UNLISTED = {"cell", "execution_count", "detach"}


@pytest.mark.slow
async def test_unlisted_fields_are_still_accepted(jp_fetch, jp_root_dir):
    tools = await listed_tools(jp_fetch)
    write_notebook(jp_root_dir / "u.ipynb", "x = 1", "y = 2")

    listed = {name for tool in tools.values() for name in tool["inputSchema"]["properties"]}
    assert not UNLISTED & listed
    cell = {"cell_type": "markdown", "source": "# back", "metadata": {}}
    edit = {"action": "edit", "notebook_path": "u.ipynb", "cell_index": 0, "cell": cell}
    edited = await call_tool(jp_fetch, "notebook", edit)
    ran = await call_tool(jp_fetch, "python", {"cells": [{"code": "print(1)"}], "detach": False})

    assert edited["isError"] is False, edited
    assert json.loads((jp_root_dir / "u.ipynb").read_text())["cells"][0]["source"] == "# back"
    assert (ran["isError"], ran["content"][0]["text"]) == (False, "1")


async def test_null_arguments_are_taken_as_not_given(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "n.ipynb", "x = 1", "y = 2")
    nulls = {"timeout": None, "cwd": None, "reset": None, "mode": None, "stdin": None}

    ran = await call_tool(jp_fetch, "python", {"cells": [{"code": "print(3)"}], **nulls})
    read = await call_tool(
        jp_fetch,
        "notebook",
        {"action": "read", "notebook_path": "n.ipynb", "cell_index": None, "all": None},
    )

    assert (ran["isError"], ran["content"][0]["text"]) == (False, "3")
    assert read["isError"] is False
    assert read["structuredContent"]["details"]["totalCells"] == 2


def rest_descriptions(schema, name):
    """What MCP may say of property ``name`` of a REST request schema: each occurrence's
    ``x-mcp-description``, else its ``description``, stripped (absent: None)."""
    found = set()

    def visit(node):
        if isinstance(node, dict):
            field = node.get("properties", {}).get(name)
            if isinstance(field, dict):
                said = field.get("x-mcp-description", field.get("description"))
                found.add(said.strip() or None if isinstance(said, str) else None)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return found


def assert_listed_from_rest(listed, *rests):
    """``listed`` (an MCP input schema) says what the REST request schemas ``rests`` say.

    The same properties (but those not listed), the type REST gives first, and a description
    from rest-api.yml (its ``x-mcp-description`` where it has one).
    """
    properties = {}
    for rest in rests:
        for name, field in rest_properties(rest).items():
            properties.setdefault(name, field)
    assert set(listed["properties"]) == set(properties) - UNLISTED
    for name, field in listed["properties"].items():
        described = set().union(*(rest_descriptions(rest, name) for rest in rests))
        assert field.get("description") in described, name
        rest_type = properties[name].get("type")
        if isinstance(rest_type, str) and rest_type != "null":
            assert field["type"] == rest_type, name


async def test_tool_schemas_agree_with_rest_api_yml(jp_fetch):
    tools = await listed_tools(jp_fetch)

    assert_listed_from_rest(tools["python"]["inputSchema"], rest_request("/api/xcsh/python"))
    notebook, rest = tools["notebook"]["inputSchema"], rest_request("/api/xcsh/notebook")
    run_rest = rest_request("/api/xcsh/notebook/run")
    assert_listed_from_rest(notebook, rest, run_rest)
    shapes = leaf_requests(rest)
    actions = {
        a["properties"]["action"]["const"] for a in shapes if "const" in a["properties"]["action"]
    }
    # A batch has no action of its own (left out); every single request has one, run its own.
    assert set(notebook["properties"]["action"]["enum"]) == actions | {"run"}
    for alternative in shapes:
        assert set(notebook["required"]) <= set(alternative["required"])
    assert notebook["additionalProperties"] is False
    # Every request REST accepts, MCP's schema accepts (the tool then checks it exactly), a
    # null being left out and stdin's list of answers (not in the MCP subset) aside.
    mcp = jsonschema.Draft202012Validator(notebook)
    for body in VALID_NOTEBOOK_REQUESTS:
        assert request_is_valid("/api/xcsh/notebook", "post", body), body
        assert mcp.is_valid(as_sent_over_mcp(body)), body
    for body in VALID_RUN_REQUESTS:
        assert request_is_valid("/api/xcsh/notebook/run", "post", body), body
        assert mcp.is_valid(as_sent_over_mcp({"action": "run", **body})), body
    assert not mcp.is_valid({"action": "explode", "notebook_path": "a.ipynb"})
    assert not mcp.is_valid({"action": "read", "notebook_path": "a.ipynb", "colour": 1})

    artifact = tools["artifact"]["inputSchema"]
    assert artifact == {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
        },
    }


def test_an_action_served_by_another_operation_is_one_entry(monkeypatch):
    # What adding `run` takes: a tool declaring its REST path and permission, and its call.
    seen = []

    class RunCells:
        name = "run"
        route = "/api/xcsh/notebook/run"
        permission = Permission("execute", "kernels")

    async def run_cells(context, body):
        seen.append(body)
        return {"text": "ran", "isError": False}

    fake_spec = json.loads(json.dumps(spec()))
    fake_spec["paths"]["/api/xcsh/notebook/run"] = {
        "post": {
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["notebook_path"],
                            "properties": {
                                "notebook_path": {"type": "string"},
                                "all": {"type": "boolean", "description": "Every code cell."},
                            },
                        }
                    }
                }
            }
        }
    }
    operation = mcp_tools.Operation(RunCells, run_cells)
    monkeypatch.setitem(mcp_tools.NOTEBOOK_ACTIONS, "run", operation)

    tool = mcp_tools.build_tools(fake_spec)["notebook"]
    schema = tool.input_schema
    assert schema["properties"]["action"]["enum"][-1] == "run"
    assert schema["properties"]["all"]["description"] == "Every code cell."
    assert schema["required"] == ["notebook_path"]  # a batch (changes) has no action
    context = mcp_tools.ToolContext(None, Caller.trusted(), None, None)  # type: ignore[arg-type]
    body = {"action": "run", "notebook_path": "a.ipynb", "all": True}
    assert asyncio.run(tool.call(context, body)) == {"text": "ran", "isError": False}
    assert seen == [{"notebook_path": "a.ipynb", "all": True}]


def test_alternative_request_shapes_become_one_flat_object():
    single = {
        "type": "object",
        "additionalProperties": False,
        "required": ["action", "notebook_path"],
        "properties": {"action": {"enum": ["edit"]}, "notebook_path": {"type": "string"}},
    }
    batch = {
        "type": "object",
        "additionalProperties": False,
        "required": ["notebook_path", "changes"],
        "properties": {"notebook_path": {"type": "string"}, "changes": {"type": "array"}},
    }

    flat = flatten({"description": "d", "oneOf": [single, batch]})

    assert flat == {
        "description": "d",
        "type": "object",
        "properties": {
            "action": {"enum": ["edit"]},
            "notebook_path": {"type": "string"},
            "changes": {"type": "array"},
        },
        "required": ["notebook_path"],
        "additionalProperties": False,
    }
    both = flatten({"allOf": [single, {"required": ["cell_id"], "properties": {"cell_id": {}}}]})
    assert both["required"] == ["action", "notebook_path", "cell_id"]
    assert both["additionalProperties"] is False
    merged = merge_actions({"oneOf": [single, batch]}, {"run": single})
    assert merged["properties"]["action"]["enum"] == ["edit", "run"]


def test_one_schema_per_action_becomes_one_object_with_every_field():
    def shape(action, **fields):
        properties = {"action": {"const": action}, "notebook_path": {"type": "string"}}
        for name, field in fields.items():
            properties[name] = field
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["action", "notebook_path"],
            "properties": properties,
        }

    placeholder = {"type": "null", "description": "A field of another action."}
    request = {
        "discriminator": {"propertyName": "action"},
        "oneOf": [
            shape("move", to_index={"type": "integer", "minimum": 0, "description": "Where."}),
            shape("read", to_index=placeholder, mode={"enum": ["a"]}),
            shape("edit", to_index=placeholder, mode={"type": "string"}),
        ],
    }

    flat = flatten(request)

    assert "discriminator" not in flat
    assert flat["properties"]["action"] == {"type": "string", "enum": ["move", "read", "edit"]}
    # The description is the field's own, never its placeholder's (a field of another action).
    assert flat["properties"]["to_index"] == {
        "type": ["integer", "null"],
        "minimum": 0,
        "description": "Where.",
    }
    assert flat["properties"]["mode"] == {"anyOf": [{"enum": ["a"]}, {"type": "string"}]}
    assert flat["required"] == ["action", "notebook_path"]


def test_merged_actions_keep_only_fields_every_operation_requires():
    base = {
        "type": "object",
        "required": ["action", "notebook_path", "content"],
        "properties": {
            "action": {"enum": ["edit"]},
            "notebook_path": {"type": "string"},
            "content": {"type": "string"},
        },
    }
    other = {"required": ["notebook_path"], "properties": {"notebook_path": {"type": "string"}}}

    merged = merge_actions(base, {"run": other})

    assert merged["required"] == ["action", "notebook_path"]
    assert base["properties"]["action"]["enum"] == ["edit"]  # the base is left alone


@pytest.mark.slow
async def test_a_streamed_call_sends_progress_before_its_result(jp_fetch):
    await run(jp_fetch, "import time")
    code = "print('one', flush=True)\ntime.sleep(2.5)\nprint('two')"

    headers, messages = await stream_call(
        jp_fetch, "python", {"cells": [{"code": code}]}, request_id=9, progress_token="tok"
    )

    *progress, final = messages
    # The run's id, one when the cell starts, one per 2 s tick of the 2.5 s cell.
    assert len(progress) >= 3
    assert all(m["method"] == "notifications/progress" for m in progress)
    assert all(m["params"]["progressToken"] == "tok" for m in progress)
    values = [m["params"]["progress"] for m in progress]
    assert values == sorted(set(values))
    # The run's id first (a client that gives up waiting follows it again), then the cell.
    run_id = final["result"]["structuredContent"]["callId"]
    assert progress[0]["params"]["message"] == (
        f"run {run_id} started (follow it with run_id and wait)"
    )
    assert progress[1]["params"]["message"] == "cell 1/1 running"
    assert "one" in progress[-1]["params"]["message"]
    assert final["id"] == 9
    assert final["result"]["content"][0]["text"] == "one\ntwo"
    assert headers["X-Accel-Buffering"] == "no"


@pytest.mark.slow
async def test_without_a_progress_token_the_stream_holds_only_the_result(jp_fetch):
    _, messages = await stream_call(jp_fetch, "python", {"cells": [{"code": "print(5)"}]})

    assert [m.get("method") for m in messages] == [None]
    assert messages[0]["result"]["content"][0]["text"] == "5"


SLEEPER = (
    "import pathlib\nkept = 'yes'\npathlib.Path('started').write_text('x')\n"
    "time.sleep(60)\npathlib.Path('finished').write_text('x')"
)


async def _exists(path):
    return path.exists()


async def _busy(jp_fetch):
    return any(s["busy"] for s in await sessions(jp_fetch))


@pytest.mark.slow
async def test_notifications_cancelled_ends_the_named_call_only(jp_fetch, jp_root_dir):
    # Made with detach false, the run ends with its request, as with a hang-up.
    await run(jp_fetch, "import time")
    call = asyncio.create_task(
        stream_call(
            jp_fetch,
            "python",
            {"cells": [{"code": SLEEPER}], "timeout": 120, "detach": False},
            request_id=7,
        )
    )
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=REQUEST_TIMEOUT)

    def cancel(request_id):
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        note["params"] = {"requestId": request_id, "reason": "test"}
        return post(jp_fetch, note)

    for request_id in (8, "7", None):
        assert (await cancel(request_id))[0] == 202
    # Starting another session's kernel takes long enough for a wrong cancel to have landed.
    await run(jp_fetch, "1", session="probe")
    assert not call.done()
    assert await _busy(jp_fetch)

    assert (await cancel(7))[0] == 202
    _, messages = await asyncio.wait_for(call, 10)

    # JSON-RPC: a cancelled request is not answered (its stream ends); the run was interrupted.
    assert [m for m in messages if "result" in m or "error" in m] == []
    await eventually(lambda: _idle(jp_fetch), timeout=30)
    after = await run(jp_fetch, "print(kept)")
    assert after["text"] == "yes"
    assert not (jp_root_dir / "finished").exists()


async def test_notifications_cancelled_leaves_a_detached_run_in_place_going(jp_fetch, jp_root_dir):
    # A client cancels when it stops waiting (its own timeout as often as not): a run in
    # place, detached by default over MCP, goes on, to be followed by its run id.
    write_notebook(jp_root_dir / "m.ipynb", "import time\n" + SLEEPER, "print('after')")
    arguments = {"action": "run", "notebook_path": "m.ipynb", "all": True, "timeout": 120}
    call = asyncio.create_task(
        stream_call(jp_fetch, "notebook", arguments, request_id="r", progress_token="p")
    )
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=REQUEST_TIMEOUT)

    note = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    note["params"] = {"requestId": "r", "reason": "timed out after 60s"}
    assert (await post(jp_fetch, note))[0] == 202
    _, messages = await asyncio.wait_for(call, 20)

    assert [m for m in messages if "result" in m or "error" in m] == []
    run_id = messages[0]["params"]["message"].split()[1]
    followed = await call_tool(jp_fetch, "notebook", {"run_id": run_id, "wait": 0})
    assert followed["structuredContent"]["running"] is True  # nothing was interrupted
    assert "KeyboardInterrupt" not in followed["content"][0]["text"]


async def test_a_client_that_disconnects_interrupts_its_call_unless_detached(
    jp_fetch, jp_http_port, jp_base_url, jp_auth_header, jp_root_dir
):
    await run(jp_fetch, "import time")
    arguments = {"cells": [{"code": SLEEPER}], "timeout": 120, "detach": False}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "python", "arguments": arguments},
    }
    body = json.dumps(call).encode()
    _, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    headers = "".join(f"{k}: {v}\r\n" for k, v in jp_auth_header.items())
    writer.write(
        f"POST {jp_base_url}api/xcsh/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}"
        f"MCP-Protocol-Version: {VERSION}\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=REQUEST_TIMEOUT)

    writer.close()
    await writer.wait_closed()

    # Interrupted, the call ends and frees the session long before the cell's 60 s sleep.
    await eventually(lambda: _idle(jp_fetch), timeout=20)
    assert (await run(jp_fetch, "print(kept)"))["text"] == "yes"
    assert not (jp_root_dir / "finished").exists()


async def _idle(jp_fetch):
    return not await _busy(jp_fetch)


@pytest.mark.slow
async def test_a_detached_run_goes_on_after_its_client_hung_up_and_is_followed_by_run_id(
    jp_fetch, jp_root_dir
):
    code = "import pathlib, time\npathlib.Path('started').write_text('x')\ntime.sleep(3)\nprint(7)"
    texts = []
    call = asyncio.create_task(
        stream_call(
            jp_fetch,
            "python",
            {"cells": [{"code": code}]},
            progress_token="p",
            on_text=texts.append,
        )
    )
    await eventually(lambda: _exists(jp_root_dir / "started"), timeout=REQUEST_TIMEOUT)
    # The first progress notification names the run.
    first = sse_messages(texts[-1])[0]["params"]["message"]
    run_id = re.search(r"run ([0-9a-f]{32}) started", first).group(1)
    call.cancel()  # MCP's default: the run outlives its client (detach)

    followed = await call_tool(jp_fetch, "python", {"run_id": run_id, "wait": 60})
    again = await call_tool(jp_fetch, "python", {"run_id": run_id, "wait": 0})

    assert (followed["isError"], followed["content"][0]["text"]) == (False, "7")
    assert followed["structuredContent"]["callId"] == run_id
    assert again["content"][0]["text"] == "7"  # a finished run's result is kept


@pytest.mark.slow
async def test_wait_returns_the_result_so_far_of_a_run_still_going(jp_fetch):
    code = "import time\nprint('one', flush=True)\ntime.sleep(3)\nprint('two')"
    texts = []
    arguments = {"cells": [{"title": "a", "code": "1"}, {"title": "b", "code": code}]}
    call = asyncio.create_task(
        stream_call(jp_fetch, "python", arguments, progress_token="p", on_text=texts.append)
    )

    async def second_cell_runs():
        return bool(texts) and "cell 2/2 running" in texts[-1]

    await eventually(second_cell_runs, timeout=REQUEST_TIMEOUT)
    first = sse_messages(texts[-1])[0]["params"]["message"]
    run_id = re.search(r"run ([0-9a-f]{32}) started", first).group(1)

    so_far = await call_tool(jp_fetch, "python", {"run_id": run_id, "wait": 0.5})
    unknown = await call_tool(jp_fetch, "python", {"run_id": "0" * 32, "wait": 0})
    _, messages = await call

    assert so_far["isError"] is False
    assert so_far["structuredContent"]["running"] is True
    assert [c["status"] for c in so_far["structuredContent"]["cells"]] == ["complete", "running"]
    assert f'{{"run_id": "{run_id}", "wait": <seconds>}}' in so_far["content"][0]["text"]
    assert (unknown["isError"], unknown["structuredContent"]["status"]) == (True, 404)
    assert messages[-1]["result"]["content"][0]["text"].endswith("one\ntwo")


async def test_run_id_with_answer_completes_an_ask_prompt_over_mcp(jp_fetch):
    code = "name = input('name? ')\nprint('hello', name)"
    waiting = await call_tool(jp_fetch, "python", {"cells": [{"code": code}], "stdin": "ask"})
    run_id = waiting["structuredContent"]["awaitingInput"]["runId"]
    assert f'{{"run_id": "{run_id}", "answer": "..."}}' in waiting["content"][0]["text"]

    answered = await call_tool(jp_fetch, "python", {"run_id": run_id, "answer": "bob"})
    mixed = await call_tool(jp_fetch, "python", {"run_id": run_id, "answer": "x", "wait": 1})

    assert answered["isError"] is False
    assert answered["content"][0]["text"] == "name? bob\nhello bob"
    assert mixed["structuredContent"]["status"] == 400


async def test_images_arrive_as_image_content(jp_fetch):
    code = (
        "from IPython.display import display\n"
        f"display({{'image/png': {PNG!r}, 'text/plain': '<Figure>'}}, raw=True)"
    )
    result = await call_tool(jp_fetch, "python", {"cells": [{"code": code}]})

    size = len(base64.b64decode(PNG))
    assert result["content"][:2] == [
        {"type": "text", "text": f"<Figure>\n[image 1: 1x1 PNG, {size}B]"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]
    # Once: as image content, not again (base64) in structuredContent.
    assert [c for c in result["content"] if c["type"] == "image"] == [result["content"][1]]
    assert result["structuredContent"]["images"] == [
        {
            "mimeType": "image/png",
            "width": 1,
            "height": 1,
            "bytes": size,
            "artifactId": result["structuredContent"]["images"][0]["artifactId"],
            "omitted": False,
        }
    ]
    assert PNG not in json.dumps(result["structuredContent"])


@pytest.mark.slow
async def test_an_image_artifact_is_linked_and_read_as_an_image(jp_fetch):
    code = (
        "from IPython.display import display\n"
        f"display({{'image/png': {PNG!r}, 'text/plain': '<Figure>'}}, raw=True)"
    )
    result = await call_tool(jp_fetch, "python", {"cells": [{"code": code}]})

    uri = f"artifact://{result['structuredContent']['images'][0]['artifactId']}"
    links = [c for c in result["content"] if c["type"] == "resource_link"]
    assert [(link["uri"], link["mimeType"]) for link in links] == [(uri, "image/png")]
    read = await request(jp_fetch, "resources/read", {"uri": uri})
    assert read["result"]["contents"] == [{"uri": uri, "mimeType": "image/png", "blob": PNG}]
    described = await call_tool(jp_fetch, "artifact", {"id": uri})
    assert described["content"][0]["text"].startswith(f"{uri} is an image (1x1 PNG, ")
    assert described["content"][0]["text"].endswith("not text; shown below")
    assert described["content"][1] == {"type": "image", "data": PNG, "mimeType": "image/png"}
    assert "/api/" not in described["content"][0]["text"]  # an MCP agent has no REST path


async def test_a_cut_output_links_its_artifact_readable_by_tool_and_as_a_resource(jp_fetch):
    code = "import sys\n_ = sys.stdout.write(''.join(f'{i:07d}\\n' for i in range(262144)))"
    result = await call_tool(jp_fetch, "python", {"cells": [{"code": code}]})

    artifact_id = result["structuredContent"]["artifactId"]
    uri = f"artifact://{artifact_id}"
    links = [c for c in result["content"] if c["type"] == "resource_link"]
    assert [(link["uri"], link["mimeType"]) for link in links] == [(uri, "text/plain")]
    page = await call_tool(jp_fetch, "artifact", {"id": uri, "offset": 262142, "limit": 2})
    assert page["content"][0]["text"] == "0262141\n0262142\n"
    assert page["structuredContent"]["details"]["lines"] == 2

    read = await request(jp_fetch, "resources/read", {"uri": uri})
    contents = read["result"]["contents"]
    assert contents[0]["uri"] == uri
    assert contents[0]["text"].startswith("0000000\n0000001\n")
    assert "Continue with offset=" in contents[0]["text"]
    templates = await request(jp_fetch, "resources/templates/list")
    assert templates["result"]["resourceTemplates"][0]["uriTemplate"] == "artifact://{id}"
    for missing in ("artifact://20250101T120000-0123456789ab", "file:///etc/passwd"):
        error = (await request(jp_fetch, "resources/read", {"uri": missing}))["error"]
        assert error["code"] == -32002, missing


def test_sse_messages_skip_keep_alive_comments():
    text = ': keep-alive\n\nevent: message\ndata: {"jsonrpc": "2.0", "id": 1, "result": {}}\n\n'
    assert sse_messages(text) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


async def test_the_notebook_tool_runs_cells_in_place(jp_fetch, jp_root_dir):
    path = jp_root_dir / "m.ipynb"
    write_notebook(path, "print(6 * 7)", "1 / 0")
    arguments = {"action": "run", "notebook_path": "m.ipynb", "cell_index": 0}

    status, body = as_rest(await call_tool(jp_fetch, "notebook", arguments, whole=True))

    assert status == 200 and body["text"] == "42"
    assert body["notebook"]["via"] == "file" and body["kernel"]["started"] is True
    stored = json.loads(path.read_text())["cells"][0]
    assert stored["outputs"] == [{"name": "stdout", "output_type": "stream", "text": ["42\n"]}]
    assert stored["execution_count"] == 1
    # A failing cell is an error result with the run's body; a stale read is REST's 409.
    failing = {**arguments, "cell_index": 1}
    status, failed = as_rest(await call_tool(jp_fetch, "notebook", failing, whole=True))
    assert status == 200 and failed["isError"] is True
    assert failed["cells"][0]["error"]["ename"] == "ZeroDivisionError"
    stale = {**arguments, "expected_revision": "0" * 16}
    status, refused = as_rest(await call_tool(jp_fetch, "notebook", stale, whole=True))
    assert status == 409 and refused["reason"] == "stale_notebook"
    assert refused["details"]["revision"] == body["notebook"]["revision"]


VALID_FILES_REQUESTS = [
    {"action": "list"},
    {"action": "list", "path": "src", "glob": "*.py", "limit": 10},
    {"action": "read", "path": "a.txt", "start_line": 2, "end_line": 9, "max_chars": 100},
    {"action": "write", "path": "a.txt", "content": "", "expected_hash": "0123456789abcdef"},
    {"action": "write", "path": "a.txt", "content": "y", "old_content": "x", "glob": None},
    {"action": "mkdir", "path": "d"},
    {"action": "rename", "path": "a.txt", "new_path": "b/a.txt"},
    {"action": "delete", "path": "a.txt", "expected_hash": "0123456789abcdef"},
    {"action": "search", "pattern": "x", "regex": True, "glob": "*.py", "max_files": 5},
]


async def test_the_files_tool_schema_is_rest_api_ymls_in_the_simple_subset(jp_fetch, jp_root_dir):
    tools = await listed_tools(jp_fetch)
    files = tools["files"]["inputSchema"]
    rest = rest_request("/api/xcsh/files")

    assert_listed_from_rest(files, rest)
    assert subset_violations(files) == []
    assert files["properties"]["action"]["enum"] == [
        "list",
        "read",
        "write",
        "mkdir",
        "rename",
        "delete",
        "search",
    ]
    assert files["required"] == ["action"] and files["additionalProperties"] is False
    mcp = jsonschema.Draft202012Validator(files)
    for body in VALID_FILES_REQUESTS:
        assert request_is_valid("/api/xcsh/files", "post", body), body
        assert mcp.is_valid(as_sent_over_mcp(body)), body
    assert not mcp.is_valid({"action": "explode"})
    assert not mcp.is_valid({"action": "list", "colour": 1})

    (jp_root_dir / "a.txt").write_text("hello\n")
    read = await call_tool(jp_fetch, "files", {"action": "read", "path": "a.txt"})
    assert read["isError"] is False and "hello" in read["content"][0]["text"]
    refused = await call_tool(jp_fetch, "files", {"action": "read", "path": "../a.txt"})
    assert refused["isError"] is True and refused["structuredContent"]["status"] == 403

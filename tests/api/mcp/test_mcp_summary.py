"""What MCP costs an agent: ``tools/list`` within its budget, ``structuredContent`` a bounded
summary that never repeats the text, outputs or images, and refusals that teach."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from tornado.httpclient import HTTPClientError

from jupyter_xcsh.mcp.server import INSTRUCTIONS
from jupyter_xcsh.mcp.summary import LIMIT, OUTPUT_SCHEMAS, size, summarize
from tests.support.inplace import write_notebook
from tests.support.mcp_client import call_tool, check_summary, post, request
from tests.support.openapi_check import spec

pytestmark = pytest.mark.timeout(300)

#: ``tools/list`` of all the tools together, at most (issue 38's target), as ``json.dumps``
#: writes the tools array (what the official SDK client receives, with outputSchemas).
TOOLS_LIST_BUDGET = 8000
#: A listed argument's description, at most: one line for an agent. Longer REST prose stays in
#: rest-api.yml's ``description``; ``x-mcp-description`` gives the short one.
MAX_ARGUMENT_DESCRIPTION = 120
#: What MCP descriptions never name: a REST path or verb, a section of the docs.
REST_OR_DOCS = re.compile(r"/api/|\b(GET|POST|PUT|DELETE) /|docs/|contract\.md|§")


async def listed_tools(jp_fetch):
    response = await request(jp_fetch, "tools/list")
    return response["result"]["tools"]


def descriptions(node, where="", found=None):
    """Every description in a schema, by where it is."""
    found = {} if found is None else found
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            found[where] = node["description"]
        for key, value in node.items():
            descriptions(value, f"{where}.{key}", found)
    elif isinstance(node, list):
        for k, value in enumerate(node):
            descriptions(value, f"{where}[{k}]", found)
    return found


async def test_tools_list_fits_its_budget(jp_fetch):
    tools = await listed_tools(jp_fetch)

    chars = len(json.dumps(tools))
    assert chars <= TOOLS_LIST_BUDGET, {t["name"]: len(json.dumps(t)) for t in tools}
    assert all(tool["outputSchema"] == OUTPUT_SCHEMAS[tool["name"]] for tool in tools)


async def test_output_schemas_are_listed_to_versions_that_know_them(jp_fetch):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for version, declared in (("2025-03-26", False), ("2025-06-18", True)):
        _, _, response = await post(jp_fetch, message, headers={"MCP-Protocol-Version": version})
        tools = response["result"]["tools"]
        assert all(("outputSchema" in tool) is declared for tool in tools), version


async def test_descriptions_are_short_and_speak_of_mcp_arguments_only(jp_fetch):
    tools = await listed_tools(jp_fetch)

    for tool in tools:
        said = descriptions(tool["inputSchema"])
        long = {w: text for w, text in said.items() if len(text) > MAX_ARGUMENT_DESCRIPTION}
        assert long == {}, tool["name"]
        for text in [tool["description"], *said.values(), *descriptions(tool).values()]:
            assert not REST_OR_DOCS.search(text), (tool["name"], text)
    assert not REST_OR_DOCS.search(INSTRUCTIONS)


async def test_every_action_and_argument_is_told_somewhere(jp_fetch):
    # Hand-written tool descriptions stay in step with rest-api.yml: an action added to an enum,
    # or an argument without a description of its own, must be named in the tool's text.
    for tool in await listed_tools(jp_fetch):
        schema = tool["inputSchema"]
        told = " ".join([tool["description"], *descriptions(schema).values()])
        actions = schema["properties"].get("action", {}).get("enum", [])
        for action in actions:
            assert re.search(rf"(^|\n)- (.*, )?{action}\b", tool["description"]), action
        for name, field in schema["properties"].items():
            assert name == "action" or "description" in field or re.search(rf"\b{name}\b", told), (
                tool["name"],
                name,
            )


async def test_instructions_name_every_tool_in_a_line_and_say_how_to_start(jp_fetch):
    response = await request(jp_fetch, "initialize", {"protocolVersion": "2025-11-25"})

    instructions = response["result"]["instructions"]
    assert instructions == INSTRUCTIONS
    for tool in await listed_tools(jp_fetch):
        assert re.search(rf"^- {tool['name']}: ", instructions, re.M), tool["name"]
    assert "To start:" in instructions


def huge_error_body():
    """A RecursionError's REST body, as big as the one measured (330 KB of traceback)."""
    frame = "\x1b[0;32mCell In[6], line 1, in f(n)\x1b[0m\n----> 1 def f(n): return f(n+1)\n"
    traceback = [frame] * 3000
    return {
        "callId": "c" * 32,
        "text": frame * 200,
        "isError": True,
        "cancelled": False,
        "timedOut": False,
        "stdinRequested": False,
        "cells": [
            {
                "index": 0,
                "title": "cell 1",
                "status": "error",
                "output": frame * 200,
                "exitCode": 1,
                "durationMs": 40,
                "statusEvents": [{"op": "x", "data": "y" * 1000}] * 50,
                "error": {"ename": "RecursionError", "evalue": "m" * 5000, "traceback": traceback},
            }
        ],
        "images": [],
        "jsonOutputs": [{"big": "z" * 10000}],
        "statusEvents": [],
        "truncated": True,
        "totalLines": 600000,
        "totalBytes": 33000000,
        "outputLines": 200,
        "outputBytes": 16000,
        "artifactId": "20250101T120000-0123456789ab",
        "session": {"name": "default", "cwd": "", "kernelId": "k", "restartCount": 0},
    }


def test_a_huge_error_is_summarized_in_a_few_hundred_characters():
    body = huge_error_body()

    summary = summarize(body)

    assert size(summary) < 600, summary
    check_summary("python", summary)
    assert summary["cells"] == [
        {
            "index": 0,
            "status": "error",
            "exitCode": 1,
            "durationMs": 40,
            "error": {"ename": "RecursionError"},
        }
    ]
    assert summary["artifactId"] == body["artifactId"]
    assert "Cell In" not in json.dumps(summary)


def test_many_cells_are_cut_to_the_limit_keeping_the_failed_one():
    cells = [
        {"index": i, "cellId": f"id{i}", "status": "complete", "exitCode": 0, "output": "x"}
        for i in range(500)
    ]
    cells[317] = {**cells[317], "status": "error", "exitCode": 1}
    body = {"callId": "c" * 32, "text": "t", "isError": True, "cells": cells, "images": []}

    summary = summarize(body)

    assert size(summary) <= LIMIT
    check_summary("notebook", summary)
    kept = summary["cells"]
    assert 10 < len(kept) < 100
    assert summary["cellsOmitted"] == 500 - len(kept)
    assert {"index": 317, "cellId": "id317", "status": "error", "exitCode": 1} in kept
    assert [c["index"] for c in kept] == sorted(c["index"] for c in kept)
    assert summarize(body, limit=10**6)["cells"] == [
        {k: v for k, v in c.items() if k != "output"} for c in cells
    ]


def test_long_strings_are_clipped_and_a_summary_always_fits():
    body = {"details": {"path": "p" * 5000, **{f"k{i}": "v" * 190 for i in range(40)}}}

    summary = summarize(body)

    assert size(summary) <= LIMIT
    assert summary["details"]["path"].endswith("…")
    assert set(summary["details"]) == set(body["details"])


@pytest.mark.slow
async def test_a_recursion_error_over_mcp_is_bounded_and_said_once(jp_fetch):
    code = "def f(n):\n    return f(n + 1)\nf(0)"

    result = await call_tool(jp_fetch, "python", {"cells": [{"code": code}]})
    whole = await call_tool(jp_fetch, "python", {"cells": [{"code": code}]}, whole=True)

    structured = result["structuredContent"]
    assert result["isError"] is True
    assert "RecursionError" in result["content"][0]["text"]
    assert size(structured) <= LIMIT  # the REST body: hundreds of KB of traceback
    error = structured["cells"][0]["error"]
    assert error["ename"] == "RecursionError"
    assert "f(n + 1)" not in json.dumps(structured)
    # IPython 9 lists every frame: hundreds of KB, whose folded text is an artifact, named by
    # its id, not repeated. Older releases (ipykernel 6.29's, the lowest tested) fold the
    # repeated frames themselves (~2.3 KB in all): nothing to spill there.
    if size(whole["structuredContent"]) > 20 * LIMIT:
        assert error == {"ename": "RecursionError", "artifactId": error["artifactId"]}


@pytest.mark.slow
async def test_a_run_of_many_cells_over_mcp_is_bounded(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "many.ipynb", *[f"print({i})" for i in range(150)])
    arguments = {"action": "run", "notebook_path": "many.ipynb", "all": True, "timeout": 120}

    result = await call_tool(jp_fetch, "notebook", arguments)

    structured = result["structuredContent"]
    assert result["isError"] is False
    assert size(structured) <= LIMIT
    assert structured["cellsOmitted"] == 150 - len(structured["cells"])
    assert structured["notebook"]["totalCells"] == 150
    assert {"index", "cellId", "status", "exitCode", "executionCount"} <= set(
        structured["cells"][0]
    )


@pytest.mark.slow
async def test_every_tool_s_result_and_refusal_fits_its_output_schema(jp_fetch, jp_root_dir):
    # call_tool checks each: valid for the outputSchema, within LIMIT, no text in it.
    write_notebook(jp_root_dir / "s.ipynb", "x = 41 + 1", "print(x)")
    (jp_root_dir / "t.txt").write_text("one\ntwo\n")
    calls = [
        ("notebook", {"action": "read", "notebook_path": "s.ipynb"}),
        ("notebook", {"action": "find", "notebook_path": "s.ipynb", "pattern": "x"}),
        ("notebook", {"action": "run", "notebook_path": "s.ipynb", "all": True}),
        (
            "notebook",
            {"action": "edit", "notebook_path": "s.ipynb", "cell_index": 1, "content": "x"},
        ),
        ("notebook", {"action": "explode", "notebook_path": "s.ipynb"}),
        ("python", {"cells": [{"code": "print(1)"}]}),
        ("python", {"code": "print(1)"}),
        ("files", {"action": "list"}),
        ("files", {"action": "read", "path": "t.txt"}),
        ("files", {"action": "read", "path": "../t.txt"}),
        ("kernel", {"action": "variables", "notebook_path": "s.ipynb"}),
        ("kernel", {"action": "dance"}),
        ("artifact", {"id": "20250101T120000-0123456789ab"}),
    ]
    for name, arguments in calls:
        result = await call_tool(jp_fetch, name, arguments)
        structured = result["structuredContent"]
        jsonschema.validate(structured, OUTPUT_SCHEMAS[name])
        text = result["content"][0]["text"]
        assert len(text) < 40 or text not in json.dumps(structured), (name, arguments)
        if result["isError"] and "status" in structured:
            assert set(structured) <= {"status", "reason", "details"}


async def test_python_code_without_cells_is_told_where_code_goes(jp_fetch):
    result = await call_tool(jp_fetch, "python", {"code": "1 + 1"})

    assert result["content"][0]["text"] == (
        'Unknown field(s): code (did you mean cells: [{"code": ...}]? '
        "fields: cells, cwd, kernel_name, mode, notebook_path, reset, session, stdin, timeout)"
    )


async def test_an_invalid_action_lists_the_actions_the_tool_has(jp_fetch):
    # The actions named are the tool's own: rest-api.yml's over REST, and run too over MCP.
    tools = {tool["name"]: tool for tool in await listed_tools(jp_fetch)}
    mapping = spec()["components"]["schemas"]["NotebookRequest"]["discriminator"]["mapping"]
    assert set(tools["notebook"]["inputSchema"]["properties"]["action"]["enum"]) == {
        *mapping,
        "run",
    }

    for name in ("notebook", "files", "kernel"):
        enum = tools[name]["inputSchema"]["properties"]["action"]["enum"]
        result = await call_tool(jp_fetch, name, {"action": "raed"})
        text = result["content"][0]["text"]
        assert text == f"Invalid action: raed (did you mean read? actions: {', '.join(enum)})" or (
            text == f"Invalid action: raed (actions: {', '.join(enum)})"
        ), text
    status, rest = await post_notebook(jp_fetch, {"action": "compile", "notebook_path": "a"})
    assert (status, rest["message"]) == (
        400,
        f"Invalid action: compile (actions: {', '.join(mapping)})",
    )


async def post_notebook(jp_fetch, body):
    try:
        response = await jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(body))
    except HTTPClientError as e:
        return e.code, json.loads(e.response.body)
    return response.code, json.loads(response.body)

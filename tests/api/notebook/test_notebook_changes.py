"""The notebook tool's ``changes`` action: what changed since a revision, and who changed it.

A real server: a person saves through the contents API (as the lab does), this caller changes
cells over REST, another agent over MCP (its own session). The history itself:
tests/unit/tools/notebook/test_history.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.support.mcp_client import post
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.openapi_check import assert_response_matches

pytestmark = pytest.mark.timeout(300)

PATH = "nb.ipynb"


@pytest.fixture
def notebook(jp_root_dir):
    nb = sample_notebook()
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"c{k}"
    (jp_root_dir / PATH).write_text(jupyter_text(nb), encoding="utf-8")
    return jp_root_dir / PATH


async def tool(jp_fetch: Any, **body: Any) -> tuple[int, Any]:
    """``POST /api/xcsh/notebook``: ``(status, body)``, checked against the spec."""
    try:
        response = await jp_fetch(
            "api",
            "xcsh",
            "notebook",
            method="POST",
            body=json.dumps({"notebook_path": PATH, **body}),
        )
    except HTTPClientError as e:
        assert e.response is not None
        result = json.loads(e.response.body)
        assert_response_matches("/api/xcsh/notebook", "post", e.code, result)
        return e.code, result
    result = json.loads(response.body)
    assert_response_matches("/api/xcsh/notebook", "post", 200, result)
    return 200, result


async def save_as_the_lab_does(jp_fetch: Any, cell: int, source: str) -> None:
    model = json.loads((await jp_fetch("api", "contents", PATH)).body)
    model["content"]["cells"][cell]["source"] = source
    body = {"type": "notebook", "format": "json", "content": model["content"]}
    await jp_fetch("api", "contents", PATH, method="PUT", body=json.dumps(body))


async def another_agent(jp_fetch: Any, arguments: dict[str, Any]) -> None:
    """The notebook tool over MCP, in a session of its own (another agent, same token)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "notebook", "arguments": {"notebook_path": PATH, **arguments}},
    }
    status, _, response = await post(
        jp_fetch, message, headers={"Mcp-Session-Id": "xcsh-session-b"}
    )
    assert status == 200 and response["result"]["isError"] is False, response


async def test_changes_list_a_persons_save_this_callers_and_another_agents_edits(
    jp_fetch, notebook
):
    _, read = await tool(jp_fetch, action="read")
    since = read["details"]["revision"]

    await save_as_the_lab_does(jp_fetch, 1, "x = 2")
    status, _ = await tool(
        jp_fetch, action="insert", cell_index=0, content="import os", cell_type="code"
    )
    assert status == 200
    await another_agent(jp_fetch, {"action": "delete", "cell_id": "c3"})
    await another_agent(jp_fetch, {"action": "move", "cell_id": "c0", "to_index": 3})

    status, result = await tool(jp_fetch, action="changes", since_revision=since)

    assert status == 200
    details = result["details"]
    assert details["sinceRevision"] == since and details["truncated"] is False
    changes = details["changes"]
    by = [(c["change"], c["cellId"], c["by"]) for c in changes]
    assert by[0] == ("edited", "c1", "file")
    assert by[1][0] == "added" and by[1][2] == "you"
    assert ("removed", "c3", "agent") in by
    assert ("moved", "c0", "agent") in by
    assert changes[0]["source"] == "x = 2" and changes[1]["source"] == "import os"
    _, now = await tool(jp_fetch, action="read")
    assert details["revision"] == now["details"]["revision"]
    assert details["totalCells"] == now["details"]["totalCells"] == 4
    assert "by a save of the file" in result["text"] and "by another agent" in result["text"]
    assert "by you" in result["text"]

    # From the latest revision: nothing.
    _, later = await tool(jp_fetch, action="changes", since_revision=details["revision"])
    assert later["details"]["changes"] == []
    assert later["text"] == f"No changes since revision {details['revision']}."


async def test_changes_over_mcp_say_you_for_that_agents_own_edits(jp_fetch, notebook):
    _, read = await tool(jp_fetch, action="read")
    await another_agent(jp_fetch, {"action": "edit", "cell_id": "c0", "content": "# New"})
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "notebook",
            "arguments": {
                "action": "changes",
                "notebook_path": PATH,
                "since_revision": read["details"]["revision"],
            },
        },
    }
    _, _, mine = await post(jp_fetch, message, headers={"Mcp-Session-Id": "xcsh-session-b"})
    _, _, theirs = await post(jp_fetch, message, headers={"Mcp-Session-Id": "xcsh-session-c"})

    assert [c["by"] for c in mine["result"]["structuredContent"]["details"]["changes"]] == ["you"]
    assert [c["by"] for c in theirs["result"]["structuredContent"]["details"]["changes"]] == [
        "agent"
    ]


async def test_a_revision_the_history_does_not_reach_is_a_409_saying_read_again(jp_fetch, notebook):
    status, body = await tool(jp_fetch, action="changes", since_revision="0123456789abcdef")

    assert status == 409
    assert body["reason"] == "history_gone"
    assert "read the notebook again" in body["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "since_revision must be 16 lowercase hex digits"),
        ({"since_revision": "XYZ"}, "since_revision must be 16 lowercase hex digits"),
        (
            {"since_revision": "0123456789abcdef", "cell_index": 1},
            "Field cell_index is not accepted",
        ),
        ({"since_revision": "0123456789abcdef", "max_chars": 0}, "max_chars must be a positive"),
    ],
)
async def test_a_malformed_changes_request_is_a_400(jp_fetch, notebook, body, message):
    status, result = await tool(jp_fetch, action="changes", **body)

    assert status == 400
    assert message in result["message"]


async def test_since_revision_is_refused_by_other_actions(jp_fetch, notebook):
    status, result = await tool(jp_fetch, action="read", since_revision="0123456789abcdef")

    assert status == 400
    assert "since_revision is not accepted by the read action" in result["message"]

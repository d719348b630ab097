"""The person's review of agent calls, kept in the activity history.

``POST /api/xcsh/activity/review`` keeps a call (or its change to one cell) as kept or undone, or
as the person's own undo (``yours``); ``GET /api/xcsh/activity`` serves it back in each entry's
``review``, after a restart too, so that a reloaded lab shows only the changes still to review.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.events.activity import NOTEBOOK_SCHEMA
from jupyter_xcsh.events.history import ActivityHistory
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.openapi_check import assert_response_matches, request_is_valid


@pytest.fixture
def jp_server_config(jp_server_config, request):
    """The history on (the default), or off, or writes denied, for the tests whose name says so."""
    config = Config(jp_server_config)
    if "turned_off" in request.node.name:
        config.XcshSettings.activity_history = False
    if "without_write" in request.node.name:
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
    return config


@pytest.fixture
def history(jp_serverapp) -> ActivityHistory:
    """The server's history."""
    kept = jp_serverapp.web_app.settings["xcsh"].activity.history
    assert kept is not None
    return kept


@pytest.fixture
def notebooks(jp_root_dir):
    """Two notebooks of the contents root."""
    for name in ("a.ipynb", "b.ipynb"):
        (jp_root_dir / name).write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return ["a.ipynb", "b.ipynb"]


async def post_review(jp_fetch: Any, body: Any, raw: bytes | None = None) -> tuple[int, Any]:
    """``POST /api/xcsh/activity/review``: (status, body), checked against rest-api.yml."""
    data = raw if raw is not None else json.dumps(body).encode()
    try:
        response = await jp_fetch("api", "xcsh", "activity", "review", method="POST", body=data)
    except HTTPClientError as e:
        assert e.response is not None
        code, answer = e.code, json.loads(e.response.body)
    else:
        code, answer = response.code, json.loads(response.body)
    assert_response_matches("/api/xcsh/activity/review", "post", code, answer)
    return code, answer


async def entries(jp_fetch: Any, history: ActivityHistory) -> list[dict[str, Any]]:
    """The history's entries once every write is done, checked against rest-api.yml."""
    await asyncio.to_thread(history.flush)
    response = await jp_fetch("api", "xcsh", "activity", method="GET")
    body = json.loads(response.body)
    assert_response_matches("/api/xcsh/activity", "get", 200, body)
    return list(body["entries"])


async def edit(notebook_tool: Any, path: str, content: str) -> str:
    """Edit the first cell; return the call's id."""
    body = {"action": "edit", "notebook_path": path, "cell_index": 0, "content": content}
    status, result = await notebook_tool(body)
    assert status == 200, result
    return str(result["callId"])


async def test_a_kept_call_is_served_with_its_review(jp_fetch, notebook_tool, notebooks, history):
    kept_id = await edit(notebook_tool, "a.ipynb", "x = 1")
    pending_id = await edit(notebook_tool, "a.ipynb", "x = 2")
    assert [e["review"] for e in await entries(jp_fetch, history)] == [[], []]

    body = {"path": "a.ipynb", "call_ids": [kept_id], "cell_id": None, "state": "kept"}
    assert request_is_valid("/api/xcsh/activity/review", "post", body)
    status, answer = await post_review(jp_fetch, body)
    assert (status, answer) == (200, {"reviewed": 1})

    served = {e["callId"]: e["review"] for e in await entries(jp_fetch, history)}
    assert served == {kept_id: [{"cellId": None, "state": "kept"}], pending_id: []}


async def test_the_persons_own_undo_is_served_as_yours(jp_fetch, notebook_tool, notebooks, history):
    """The lab's undo is a notebook call too: kept as the person's, the lab lists it so after a
    reload (issue 41)."""
    undo_id = await edit(notebook_tool, "a.ipynb", "x = 1")
    body = {"path": "a.ipynb", "call_ids": [undo_id], "cell_id": None, "state": "yours"}
    assert request_is_valid("/api/xcsh/activity/review", "post", body)
    assert await post_review(jp_fetch, body) == (200, {"reviewed": 1})
    (entry,) = await entries(jp_fetch, history)
    assert entry["review"] == [{"cellId": None, "state": "yours"}]


async def test_one_cell_of_a_call_and_a_later_state(jp_fetch, notebook_tool, notebooks, history):
    call_id = await edit(notebook_tool, "a.ipynb", "x = 1")
    for state in ("kept", "undone"):
        status, _ = await post_review(
            jp_fetch, {"path": "a.ipynb", "call_ids": [call_id], "cell_id": "c1", "state": state}
        )
        assert status == 200
    (entry,) = await entries(jp_fetch, history)
    # The later state of the same call and cell replaces the earlier one.
    assert entry["review"] == [{"cellId": "c1", "state": "undone"}]


async def test_calls_of_another_notebook_or_unknown_are_left_out(
    jp_fetch, notebook_tool, notebooks, history
):
    call_id = await edit(notebook_tool, "a.ipynb", "x = 1")
    await asyncio.to_thread(history.flush)
    status, answer = await post_review(
        jp_fetch, {"path": "b.ipynb", "call_ids": [call_id, "f" * 32], "state": "kept"}
    )
    assert (status, answer) == (200, {"reviewed": 0})
    (entry,) = await entries(jp_fetch, history)
    assert entry["review"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"path": "a.ipynb", "call_ids": ["a" * 32], "state": "kept", "x": 1}, "Unknown field: x"),
        ({"call_ids": ["a" * 32], "state": "kept"}, "path is required"),
        ({"path": "a.ipynb", "state": "kept"}, "call_ids is required"),
        ({"path": "a.ipynb", "call_ids": ["a" * 32]}, "state is required"),
        ({"path": "a.ipynb", "call_ids": "a", "state": "kept"}, "call_ids must be an array"),
        ({"path": "a.ipynb", "call_ids": [], "state": "kept"}, "call_ids must hold 1 to 1000"),
        ({"path": "a.ipynb", "call_ids": ["x"], "state": "kept"}, "call_ids[0] must be a call id"),
        ({"path": "a.ipynb", "call_ids": [7], "state": "kept"}, "call_ids[0] must be a call id"),
        (
            {"path": "a.ipynb", "call_ids": ["a" * 32], "state": "done"},
            "state must be kept, undone or yours, got 'done'",
        ),
        (
            {"path": "a.ipynb", "call_ids": ["a" * 32], "cell_id": 3, "state": "kept"},
            "cell_id must be a string, got integer: 3",
        ),
        (
            {"path": "a.ipynb", "call_ids": ["a" * 32], "cell_id": "", "state": "kept"},
            "cell_id must be 1 to 1024 characters",
        ),
        (
            {"path": "../a.ipynb", "call_ids": ["a" * 32], "state": "kept"},
            "path must be a notebook path of the contents root",
        ),
    ],
)
async def test_a_bad_body_is_a_400(jp_fetch, body, message):
    status, answer = await post_review(jp_fetch, body)
    assert status == 400
    assert message in answer["message"]


async def test_a_body_that_is_no_json_object_is_a_400(jp_fetch):
    status, answer = await post_review(jp_fetch, None, raw=b"[1]")
    assert status == 400
    assert "must be a JSON object" in answer["message"]


async def test_a_hidden_notebook_is_a_404(jp_fetch, jp_serverapp):
    assert jp_serverapp.contents_manager.allow_hidden is False
    body = {"path": ".secret/n.ipynb", "call_ids": ["a" * 32], "state": "kept"}
    status, answer = await post_review(jp_fetch, body)
    assert status == 404, answer


async def test_turned_off_answers_404(jp_fetch):
    body = {"path": "a.ipynb", "call_ids": ["a" * 32], "state": "kept"}
    status, answer = await post_review(jp_fetch, body)
    assert status == 404
    assert "activity history is turned off" in answer["message"]


async def test_a_caller_without_write_is_refused(jp_fetch):
    body = {"path": "a.ipynb", "call_ids": ["a" * 32], "state": "kept"}
    status, answer = await post_review(jp_fetch, body)
    assert status == 403
    assert "not authorized to write on resource: contents" in answer["message"]


async def test_a_request_without_a_token_is_refused(jp_fetch):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "api",
            "xcsh",
            "activity",
            "review",
            method="POST",
            body=b"{}",
            headers={"Authorization": ""},
        )
    assert info.value.code in (401, 403)


async def test_the_review_outlives_the_store(
    jp_fetch, jp_root_dir, notebook_tool, notebooks, history
):
    call_id = await edit(notebook_tool, "a.ipynb", "x = 1")
    await asyncio.to_thread(history.flush)
    status, _ = await post_review(
        jp_fetch, {"path": "a.ipynb", "call_ids": [call_id], "state": "undone"}
    )
    assert status == 200
    # What a restarted server opens: a new store on the same file and root.
    reopened = ActivityHistory(history.db_path, root=str(jp_root_dir))
    try:
        page = await asyncio.to_thread(reopened.query_sync)
        assert [e["review"] for e in page["entries"]] == [[{"cellId": None, "state": "undone"}]]
    finally:
        reopened.close()


def test_reviews_of_calls_no_longer_kept_go_with_them(tmp_path):
    history = ActivityHistory(str(tmp_path / "h.sqlite"), root=str(tmp_path), max_calls=2)
    try:
        event = {"action": "edit", "path": "a.ipynb", "status": "ok", "cellIndex": 0}
        history.record(NOTEBOOK_SCHEMA, {"callId": "a" * 32, **event})
        history.flush()
        future = history._executor.submit(history._review, "a.ipynb", ["a" * 32], None, "kept")
        assert future.result() == 1
        for call_id in ("b" * 32, "c" * 32):
            history.record(NOTEBOOK_SCHEMA, {"callId": call_id, **event})
        history.flush()
        page = history.query_sync()
        assert [e["callId"] for e in page["entries"]] == ["b" * 32, "c" * 32]
        rows = history._executor.submit(
            lambda: history._connection().execute("SELECT COUNT(*) FROM reviews").fetchone()
        ).result()
        assert rows == (0,)
    finally:
        history.close()

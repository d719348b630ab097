"""An insert or edit with ``run: true``: the change, then a run in place of its cell, in one call
(docs/developers/contract.md §2.17), on a real server and real kernels, over REST and MCP."""

from __future__ import annotations

import json

import nbformat
import pytest
from traitlets.config import Config

from tests.support.inplace import markdown, run_ok, sessions, write_notebook
from tests.support.mcp_client import TRANSPORTS, call_tool
from tests.support.openapi_check import assert_response_matches, request_is_valid
from tests.support.python_tool import REQUEST_TIMEOUT, answer

pytestmark = pytest.mark.timeout(300)

NOTEBOOK = "/api/xcsh/notebook"


def stored(path):
    """The notebook as saved, validated against its nbformat schema."""
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


def texts(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


async def checked(notebook_tool, transport, body):
    """Call the notebook tool; a REST answer is checked against rest-api.yml."""
    if transport == "rest":
        assert request_is_valid(NOTEBOOK, "post", body), body
    status, result = await notebook_tool(body, request_timeout=REQUEST_TIMEOUT)
    if transport == "rest":
        assert_response_matches(NOTEBOOK, "post", status, result)
    return status, result


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_insert_that_runs_its_cell_is_one_call_with_the_runs_answer(
    notebook_tool, transport, jp_fetch, jp_root_dir, events, run_events
):
    path = jp_root_dir / "a.ipynb"
    write_notebook(path, "x = 20")
    await run_ok(jp_fetch, notebook_path="a.ipynb", cell_index=0)
    body = {
        "action": "insert",
        "notebook_path": "a.ipynb",
        "cell_index": 1,
        "content": "print(x + 22)",
        "run": True,
    }

    status, result = await checked(notebook_tool, transport, body)

    assert status == 200, result
    change = result["change"]
    assert result["text"] == ("Inserted code cell at position 1. Notebook now has 2 cells.\n\n42")
    assert result["isError"] is False
    assert (change["action"], change["cellIndex"], change["via"]) == ("insert", 1, "file")
    assert [(c["index"], c["cellId"], c["status"]) for c in result["cells"]] == [
        (1, change["cellId"], "complete")
    ]
    assert result["kernel"]["started"] is False  # the notebook's own kernel, state kept
    nb = stored(path)
    assert nb.cells[1].id == change["cellId"]
    assert texts(nb.cells[1]) == "42\n" and nb.cells[1].execution_count == 2
    assert result["notebook"]["revision"] == change["revision"]
    # The lab sees the change (its revert) and the run, as two calls of its own.
    assert [e["action"] for e in events if e["status"] == "ok"][-1] == "insert"
    assert any(e["event"] == "finished" for e in run_events)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_edit_that_runs_its_cell_reruns_it_with_the_new_source(
    notebook_tool, transport, jp_fetch, jp_root_dir
):
    path = jp_root_dir / "e.ipynb"
    write_notebook(path, "print('old')", "print('other')")
    await run_ok(jp_fetch, notebook_path="e.ipynb", all=True)
    body = {
        "action": "edit",
        "notebook_path": "e.ipynb",
        "cell_id": "c0",
        "content": "print('new')",
        "run": True,
        "timeout": 60,
    }

    status, result = await checked(notebook_tool, transport, body)

    assert status == 200, result
    assert result["text"] == "Replaced cell 0 (code). Notebook now has 2 cells.\n\nnew"
    assert result["change"]["cellId"] == "c0"
    nb = stored(path)
    assert (texts(nb.cells[0]), nb.cells[0].execution_count) == ("new\n", 3)
    assert texts(nb.cells[1]) == "other\n"  # only the changed cell ran


async def test_a_created_notebook_takes_an_insert_and_run_and_a_failure_is_the_runs(
    notebook_tool, jp_root_dir
):
    status, _ = await notebook_tool({"action": "create", "notebook_path": "new.ipynb"})
    assert status == 200
    body = {"action": "insert", "notebook_path": "new.ipynb", "cell_index": 0, "run": True}

    status, ok = await checked(notebook_tool, "rest", {**body, "content": "y = 2\ny * 21"})
    status2, failed = await checked(
        notebook_tool, "rest", {**body, "cell_index": 1, "content": "y['missing']"}
    )

    assert (status, ok["text"]) == (
        200,
        "Inserted code cell at position 0. Notebook now has 1 cells.\n\n42",
    )
    assert ok["kernel"]["started"] is True
    assert status2 == 200 and failed["isError"] is True
    assert failed["cells"][0]["error"]["ename"] == "TypeError"
    assert failed["text"].startswith(
        "Inserted code cell at position 1. Notebook now has 2 cells.\n\n"
    )
    nb = stored(jp_root_dir / "new.ipynb")
    assert [c.source for c in nb.cells] == ["y = 2\ny * 21", "y['missing']"]
    assert nb.cells[1].outputs[0].output_type == "error"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_change_refused_runs_nothing_and_a_cell_that_cannot_run_is_not_inserted(
    notebook_tool, transport, jp_root_dir, jp_fetch
):
    path = jp_root_dir / "r.ipynb"
    before = write_notebook(path, "x = 1", markdown("# Notes", "m1"))
    run = {"notebook_path": "r.ipynb", "run": True}
    cases = [
        (
            {"action": "edit", "cell_id": "c0", "content": "y", "expected_source_hash": "0" * 16},
            409,
            None,
        ),
        ({"action": "edit", "cell_index": 7, "content": "y"}, 400, None),
        ({"action": "insert", "cell_index": 9, "content": "y"}, 400, None),
        (
            {"action": "insert", "cell_index": 0, "content": "# t", "cell_type": "markdown"},
            400,
            "Cell 0 is not a code cell in r.ipynb",
        ),
        ({"action": "edit", "cell_id": "m1", "content": "# new"}, 400, None),
        ({"action": "insert", "cell_index": 0, "content": "y", "timeout": "soon"}, 400, None),
        (
            {"action": "insert", "cell_index": 0, "content": "y", "stdin": "shout"},
            400,
            None,
        ),
        (
            {"action": "delete", "cell_index": 0},
            400,
            "Field run is not accepted by the delete action (run: true goes with insert or edit)",
        ),
        ({"action": "insert", "cell_index": 0, "content": "y", "run": "yes"}, 400, None),
    ]
    for fields, code, message in cases:
        status, result = await notebook_tool({**run, **fields})
        assert status == code, (fields, result)
        if message is not None:
            assert result["message"] == message
    assert path.read_text(encoding="utf-8") == before
    assert await sessions(jp_fetch) == []  # no kernel was started: nothing ran


async def test_run_fields_need_run_and_a_batch_takes_none(notebook_tool, jp_root_dir):
    path = jp_root_dir / "b.ipynb"
    before = write_notebook(path, "x = 1")
    insert = {"action": "insert", "notebook_path": "b.ipynb", "cell_index": 0, "content": "y"}
    batch = {"notebook_path": "b.ipynb", "changes": [{**insert, "notebook_path": None}]}

    cases = [
        (
            {**insert, "timeout": 5},
            "timeout goes with run: true (an insert or edit that runs its cell)",
        ),
        (
            {**insert, "run": False, "stdin": "ask"},
            "stdin goes with run: true (an insert or edit that runs its cell)",
        ),
        (
            {**batch, "run": True},
            "run: true goes with a single insert or edit, not a batch (run the cells "
            'afterwards with action "run")',
        ),
    ]
    for body, message in cases:
        status, result = await notebook_tool(body)
        assert (status, result["message"]) == (400, message)
    assert path.read_text(encoding="utf-8") == before
    # run: false (or null) is a plain change.
    status, result = await notebook_tool({**insert, "run": False})
    assert status == 200 and "change" not in result and "cells" not in result


async def test_the_run_asks_for_input_and_is_answered_as_any_runs(
    notebook_tool, jp_root_dir, jp_fetch
):
    path = jp_root_dir / "ask.ipynb"
    write_notebook(path, "x = 1")
    body = {
        "action": "insert",
        "notebook_path": "ask.ipynb",
        "cell_index": 1,
        "content": "name = input('name? ')\nprint('hello', name)",
        "run": True,
        "stdin": "ask",
    }

    status, waiting = await checked(notebook_tool, "rest", body)

    assert status == 200, waiting
    run_id = waiting["awaitingInput"]["runId"]
    assert waiting["text"].startswith("Inserted code cell at position 1. Notebook now has 2 cells.")
    assert waiting["change"]["cellIndex"] == 1
    # Another change that runs is refused while the notebook's run waits, and changes nothing.
    again = {**body, "cell_index": 0, "content": "z = 3", "stdin": None}
    status, refused = await notebook_tool(again)
    assert status == 409
    assert refused["message"].startswith(f"Session ask.ipynb is waiting for input: run {run_id}")
    assert len(stored(path).cells) == 2

    status, done = await answer(jp_fetch, run_id, "bob")

    assert status == 200, done
    assert done["cells"][0]["output"] == "name? bob\nhello bob\n"
    assert texts(stored(path).cells[1]) == "hello bob\n"


async def test_over_mcp_the_run_is_detached_and_followed_with_run_id_alone(jp_fetch, jp_root_dir):
    path = jp_root_dir / "m.ipynb"
    write_notebook(path, "x = 1")
    arguments = {
        "action": "insert",
        "notebook_path": "m.ipynb",
        "cell_index": 1,
        "content": "name = input('name? ')\nprint('hi', name)",
        "run": True,
        "stdin": "ask",
    }

    waiting = await call_tool(jp_fetch, "notebook", arguments)
    run_id = waiting["structuredContent"]["awaitingInput"]["runId"]
    assert f'{{"run_id": "{run_id}", "answer": "..."}}' in waiting["content"][0]["text"]
    # As the text says: the same tool, run_id and answer, no action.
    done = await call_tool(jp_fetch, "notebook", {"run_id": run_id, "answer": "ada"})

    assert done["isError"] is False, done
    assert done["structuredContent"]["cells"][0]["status"] == "complete"
    assert "name? ada\nhi ada" in done["content"][0]["text"]
    assert texts(stored(path).cells[1]) == "hi ada\n"


async def test_a_streamed_change_and_run_ends_with_the_result(jp_fetch, jp_root_dir):
    write_notebook(jp_root_dir / "s.ipynb", "x = 1")
    body = {
        "action": "insert",
        "notebook_path": "s.ipynb",
        "cell_index": 1,
        "content": "print('a')\nprint('b')",
        "run": True,
    }

    response = await jp_fetch(
        "api",
        "xcsh",
        "notebook",
        method="POST",
        body=json.dumps(body),
        headers={"Accept": "application/x-ndjson"},
        request_timeout=REQUEST_TIMEOUT,
    )

    assert response.headers["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.body.decode().splitlines()]
    assert lines[0]["type"] == "start" and lines[-1]["type"] == "result"
    result = lines[-1]["result"]
    assert result["text"].endswith("\n\na\nb") and result["change"]["cellIndex"] == 1
    # A plain change asked for as a stream is answered as JSON (nothing runs).
    plain = {**body, "run": None, "cell_index": 0}
    response = await jp_fetch(
        "api",
        "xcsh",
        "notebook",
        method="POST",
        body=json.dumps(plain),
        headers={"Accept": "application/x-ndjson"},
    )
    assert json.loads(response.body)["details"]["action"] == "insert"


class TestDenyingExecution:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyExecuteAuthorizer"
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_a_caller_who_may_not_execute_changes_nothing(
        self, notebook_tool, transport, jp_root_dir
    ):
        path = jp_root_dir / "d.ipynb"
        before = write_notebook(path, "x = 1")
        body = {
            "action": "insert",
            "notebook_path": "d.ipynb",
            "cell_index": 1,
            "content": "x",
            "run": True,
        }

        status, result = await notebook_tool(body)

        assert status == 403
        assert result["message"] == "User is not authorized to execute on resource: kernels."
        assert path.read_text(encoding="utf-8") == before

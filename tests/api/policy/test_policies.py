"""Agent policies (issue 40) through the notebook, files, kernel and artifact tools.

Given a policy set by the operator (configuration) or the person (``PUT /api/xcsh/policies``),
when an agent's tool call touches the path, then ``allow`` lets it go, ``deny`` refuses it
(``policy_denied``), and ``ask`` waits for the person's answer in the lab (polled from a
concurrent task here, as the lab does) — refused at once with no lab open
(``approval_required``). Nothing is changed on any refusal. Every case runs through REST and
MCP: both go through the tool's one call path. No kernel is started here
(``test_policies_run.py`` has the runs).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nbformat.v4 import new_code_cell, new_notebook
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.policy.rules import Rule, effective, parse_rule
from jupyter_xcsh.policy.store import PolicyStore
from tests.support.mcp_client import TRANSPORTS
from tests.support.notebooks import jupyter_text
from tests.support.policies import (
    APPROVALS,
    POLICIES,
    answer,
    answer_next,
    asked,
    fetch_json,
    pending,
    set_policy,
    tool,
)

#: Seconds an approval waits in these tests: long enough for the polling "lab" on a loaded
#: machine (it polls every 50 ms), short enough for the timeout cases.
APPROVAL_TIMEOUT = 8.0


@pytest.fixture
def operator_rules() -> list[dict[str, Any]]:
    """The operator's rules of the test server (none by default)."""
    return []


@pytest.fixture
def jp_server_config(jp_server_config, operator_rules, tmp_path):
    """The extension with a short approval timeout and the operator's rules."""
    config = Config(jp_server_config)
    config.XcshSettings.approval_timeout = APPROVAL_TIMEOUT
    config.XcshSettings.agent_policies = operator_rules
    config.XcshSettings.policy_store_path = str(tmp_path / "state" / "policies.json")
    return config


def write(path: Any, *sources: str, tagged: tuple[int, ...] = ()) -> str:
    """Write a notebook of code cells ``c0``, ``c1``... (``tagged``: ask-before-run)."""
    cells = []
    for i, source in enumerate(sources):
        cell = new_code_cell(source, id=f"c{i}")
        if i in tagged:
            cell.metadata["tags"] = ["ask-before-run"]
        cells.append(cell)
    text = jupyter_text(new_notebook(cells=cells))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


EDIT = {"action": "edit", "notebook_path": "a.ipynb", "cell_id": "c0", "content": "x = 2"}


# -- deny ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_read_only_notebook_refuses_an_edit_and_allows_a_read(
    jp_fetch, jp_root_dir, transport
):
    before = write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="read-only")
    call = tool(jp_fetch, transport, "notebook")
    status, body = await call(EDIT)
    assert status == 403, body
    assert body["reason"] == "policy_denied"
    assert "read-only" not in body["message"] and "edit" in body["message"]
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before
    status, body = await call({"action": "read", "notebook_path": "a.ipynb"})
    assert status == 200, body


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_folder_rule_covers_the_notebooks_under_it(jp_fetch, jp_root_dir, transport):
    before = write(jp_root_dir / "prod" / "deep" / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "prod", "folder", classes={"edit": "deny"})
    status, body = await tool(jp_fetch, transport, "notebook")(
        {**EDIT, "notebook_path": "prod/deep/a.ipynb"}
    )
    assert (status, body["reason"]) == (403, "policy_denied")
    assert (jp_root_dir / "prod" / "deep" / "a.ipynb").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_deleting_a_cell_is_destructive(jp_fetch, jp_root_dir, transport):
    before = write(jp_root_dir / "a.ipynb", "x = 1", "y = 2")
    await set_policy(jp_fetch, "a.ipynb", classes={"destructive": "deny"})
    call = tool(jp_fetch, transport, "notebook")
    status, body = await call({"action": "delete", "notebook_path": "a.ipynb", "cell_id": "c1"})
    assert (status, body["reason"]) == (403, "policy_denied")
    batch = {
        "notebook_path": "a.ipynb",
        "changes": [
            {"action": "edit", "cell_id": "c0", "content": "z"},
            {"action": "delete", "cell_id": "c1"},
        ],
    }
    status, body = await call(batch)
    assert (status, body["reason"]) == (403, "policy_denied")
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before
    status, body = await call(EDIT)  # an edit is not destructive
    assert status == 200, body


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_files_tool_classes(jp_fetch, jp_root_dir, transport):
    (jp_root_dir / "d").mkdir()
    (jp_root_dir / "d" / "f.txt").write_text("one\n", encoding="utf-8")
    await set_policy(jp_fetch, "d", "folder", classes={"destructive": "deny", "read": "allow"})
    files = tool(jp_fetch, transport, "files")
    status, read = await files({"action": "read", "path": "d/f.txt"})
    assert status == 200, read
    digest = read["details"]["hash"]
    for body in (
        {"action": "delete", "path": "d/f.txt", "expected_hash": digest},
        {"action": "write", "path": "d/f.txt", "content": "two\n", "expected_hash": digest},
        {"action": "rename", "path": "d/f.txt", "new_path": "d/g.txt"},
    ):
        status, answer_ = await files(body)
        assert (status, answer_["reason"]) == (403, "policy_denied"), (body, answer_)
    assert (jp_root_dir / "d" / "f.txt").read_text(encoding="utf-8") == "one\n"
    # An edit of the file (old_content) and a new file are edits, not destructive.
    status, body = await files(
        {"action": "write", "path": "d/f.txt", "content": "1", "old_content": "one"}
    )
    assert status == 200, body
    status, body = await files({"action": "write", "path": "d/new.txt", "content": "n"})
    assert status == 200, body
    # Renaming into a read-only folder is judged by the strictest of both paths.
    (jp_root_dir / "free.txt").write_text("f", encoding="utf-8")
    await set_policy(jp_fetch, "d", "folder", preset="read-only")
    status, body = await files({"action": "rename", "path": "free.txt", "new_path": "d/free.txt"})
    assert (status, body["reason"]) == (403, "policy_denied")
    assert (jp_root_dir / "free.txt").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_kernel_restart_is_destructive_and_refused_before_any_kernel(
    jp_fetch, jp_root_dir, transport
):
    write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", classes={"destructive": "deny"})
    status, body = await tool(jp_fetch, transport, "kernel")(
        {"action": "restart", "notebook_path": "a.ipynb"}
    )
    # Without the policy: 404/409 (the notebook has no kernel); the policy answers first.
    assert (status, body["reason"]) == (403, "policy_denied")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_root_rule_covers_artifacts(jp_fetch, transport):
    await set_policy(jp_fetch, "", "folder", classes={"read": "deny"})
    if transport == "rest":
        status, body = await fetch_json(jp_fetch, "api", "xcsh", "artifacts", "0" * 32)
    else:
        status, body = await tool(jp_fetch, transport, "artifact")({"id": "0" * 32})
    assert (status, body["reason"]) == (403, "policy_denied")


# -- the operator's rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "operator_rules",
    [[{"path": "secret/*.ipynb", "kind": "notebook", "classes": {"edit": "deny"}}]],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_operator_glob_is_enforced_and_the_person_cannot_loosen_it(
    jp_fetch, jp_root_dir, transport
):
    before = write(jp_root_dir / "secret" / "a.ipynb", "x = 1")
    described = await set_policy(jp_fetch, "secret/a.ipynb", preset="full")
    assert described["effective"]["edit"] == "deny"
    assert described["preset"] == "custom"
    assert {r["source"] for r in described["rules"]} == {"operator", "person"}
    status, body = await tool(jp_fetch, transport, "notebook")(
        {**EDIT, "notebook_path": "secret/a.ipynb"}
    )
    assert (status, body["reason"]) == (403, "policy_denied")
    assert "operator" in body["message"]
    assert (jp_root_dir / "secret" / "a.ipynb").read_text(encoding="utf-8") == before


# -- ask -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ask_with_no_lab_open_is_refused_at_once(jp_fetch, jp_root_dir, transport):
    before = write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
    started = asyncio.get_running_loop().time()
    status, body = await tool(jp_fetch, transport, "notebook")(EDIT)
    assert (status, body["reason"]) == (403, "approval_required")
    assert asyncio.get_running_loop().time() - started < APPROVAL_TIMEOUT / 2
    assert "a.ipynb" in body["message"] and "c0" in body["message"]
    assert "Agent access" in body["message"]
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ask_approved_once_changes_and_asks_again_next_time(jp_fetch, jp_root_dir, transport):
    write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
    await pending(jp_fetch)  # the lab is open
    call = tool(jp_fetch, transport, "notebook")
    (status, body), asked = await asyncio.gather(call(EDIT), answer_next(jp_fetch, "allow-once"))
    assert status == 200, body
    assert "x = 2" in (jp_root_dir / "a.ipynb").read_text(encoding="utf-8")
    assert asked["class"] == "edit" and asked["tool"] == "notebook"
    assert asked["path"] == "a.ipynb" and asked["cellIds"] == ["c0"]
    assert asked["detail"]["code"] == "x = 2"
    assert "edit cell c0 of a.ipynb" in asked["summary"]
    assert await pending(jp_fetch) == []
    seen = {asked["id"]}
    (status, body), again = await asyncio.gather(
        call({**EDIT, "content": "x = 3"}), answer_next(jp_fetch, "allow-once", seen=seen)
    )
    assert status == 200 and again["id"] != asked["id"]


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_allow_for_the_notebook_is_remembered_for_that_class(
    jp_fetch, jp_root_dir, transport
):
    write(jp_root_dir / "a.ipynb", "x = 1", "y = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
    await pending(jp_fetch)
    call = tool(jp_fetch, transport, "notebook")
    (status, body), _ = await asyncio.gather(call(EDIT), answer_next(jp_fetch, "allow-notebook"))
    assert status == 200, body
    status, body = await call({**EDIT, "content": "x = 3"})  # no question this time
    assert status == 200, body
    # Another class (a delete is destructive) still asks: no lab answers, so it times out.
    status, body = await call({"action": "delete", "notebook_path": "a.ipynb", "cell_id": "c1"})
    assert (status, body["reason"]) == (403, "approval_required")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ask_denied_answers_with_the_persons_reason(jp_fetch, jp_root_dir, transport):
    before = write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
    await pending(jp_fetch)
    (status, body), _ = await asyncio.gather(
        tool(jp_fetch, transport, "notebook")(EDIT),
        answer_next(jp_fetch, "deny", "not before the review"),
    )
    assert (status, body["reason"]) == (403, "approval_denied")
    assert "not before the review" in body["message"]
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_ask_timeout_refuses_and_a_late_answer_is_409(jp_fetch, jp_root_dir, transport):
    before = write(jp_root_dir / "a.ipynb", "x = 1")
    await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
    await pending(jp_fetch)
    call = asyncio.ensure_future(tool(jp_fetch, transport, "notebook")(EDIT))
    first = (await asked(jp_fetch))[0]  # keeps the lab "open" while it waits
    status, body = await call
    assert (status, body["reason"]) == (403, "approval_required")
    assert "in time" in body["message"]
    status, late = await answer(jp_fetch, first["id"], "allow-once")
    assert status == 409, late
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before
    assert await pending(jp_fetch) == []


async def test_two_agents_asking_at_once_get_their_own_answers(jp_fetch, jp_root_dir):
    write(jp_root_dir / "a.ipynb", "x = 1")
    write(jp_root_dir / "b.ipynb", "y = 1")
    await set_policy(jp_fetch, "", "folder", preset="ask-changes")
    await pending(jp_fetch)
    one = asyncio.ensure_future(tool(jp_fetch, "rest", "notebook", {"X-Agent-Name": "one"})(EDIT))
    two = asyncio.ensure_future(
        tool(jp_fetch, "mcp", "notebook")({**EDIT, "notebook_path": "b.ipynb", "content": "y = 2"})
    )
    by_path = {a["path"]: a for a in await asked(jp_fetch, 2)}
    assert by_path["a.ipynb"]["agent"] == "one"
    # The first answer counts: a second answer to the same approval is a 409.
    assert (await answer(jp_fetch, by_path["b.ipynb"]["id"], "deny", "no"))[0] == 200
    assert (await answer(jp_fetch, by_path["b.ipynb"]["id"], "allow-once"))[0] == 409
    assert (await answer(jp_fetch, by_path["a.ipynb"]["id"], "allow-once"))[0] == 200
    (s1, b1), (s2, b2) = await one, await two
    assert s1 == 200, b1
    assert (s2, b2["reason"]) == (403, "approval_denied")
    assert "x = 2" in (jp_root_dir / "a.ipynb").read_text(encoding="utf-8")
    assert "y = 2" not in (jp_root_dir / "b.ipynb").read_text(encoding="utf-8")


# -- protected: no agent tool changes a policy ----------------------------------------------------
UNTAGGED = {
    "cell_type": "code",
    "execution_count": None,
    "id": "c0",
    "metadata": {},
    "outputs": [],
    "source": "x",
}
TAGGED = {**UNTAGGED, "metadata": {"tags": ["ask-before-run"]}}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("tagged", "change"),
    [
        ((), {"action": "edit", "cell_id": "c0", "cell": TAGGED}),
        ((0,), {"action": "edit", "cell_id": "c0", "cell": UNTAGGED}),
        ((0,), {"action": "delete", "cell_id": "c0"}),
        ((), {"action": "insert", "cell_index": 0, "cell": {**TAGGED, "id": "n"}}),
        ((0,), {"changes": [{"action": "delete", "cell_id": "c0"}]}),
    ],
    ids=["tag-added", "tag-removed", "tagged-deleted", "tagged-inserted", "batch-delete"],
)
async def test_the_notebook_tool_never_moves_the_ask_before_run_tag(
    jp_fetch, jp_root_dir, transport, tagged, change
):
    before = write(jp_root_dir / "a.ipynb", "x", "y", tagged=tagged)
    status, body = await tool(jp_fetch, transport, "notebook")(
        {"notebook_path": "a.ipynb", **change}
    )
    assert status == 403, body
    assert "policy_protected" in (body["reason"], body["message"]), body
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_files_tool_never_moves_the_tag_in_a_notebooks_json(
    jp_fetch, jp_root_dir, transport
):
    before = write(jp_root_dir / "a.ipynb", "x", "y", tagged=(1,))
    files = tool(jp_fetch, transport, "files")
    status, read = await files({"action": "read", "path": "a.ipynb", "max_chars": 100000})
    assert status == 200, read
    untagged = before.replace('"ask-before-run"', '"other"')
    for body in (
        {
            "action": "write",
            "path": "a.ipynb",
            "content": untagged,
            "expected_hash": read["details"]["hash"],
        },
        {"action": "write", "path": "a.ipynb", "old_content": '"ask-before-run"', "content": '"x"'},
        {"action": "write", "path": "b.ipynb", "content": before},  # a new notebook with a tag
    ):
        status, answer_ = await files(body)
        assert (status, answer_["reason"]) == (403, "policy_protected"), (body, answer_)
    assert (jp_root_dir / "a.ipynb").read_text(encoding="utf-8") == before
    assert not (jp_root_dir / "b.ipynb").exists()


class TestTheLabsLongPoll:
    """``GET /api/xcsh/approvals?wait=&since=``: held until the approvals change; a lab with a
    held request is open however long ago it last asked (a background tab's slowed timers)."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        """A lab counts as open for 1 s only after its last request."""
        config = Config(jp_server_config)
        config.XcshSettings.approval_presence = 1.0
        return config

    async def long_poll(self, jp_fetch: Any, since: int, wait: int = 30, **kw: Any) -> Any:
        """One long poll, checked against rest-api.yml: its 200 body."""
        params = {"wait": str(wait), "since": str(since)}
        status, body = await fetch_json(
            jp_fetch, "api", "xcsh", "approvals", params=params, spec_path=APPROVALS, **kw
        )
        assert status == 200, body
        return body

    @pytest.mark.slow
    async def test_a_held_request_keeps_the_lab_open_and_answers_with_the_new_approval(
        self, jp_fetch, jp_root_dir
    ):
        write(jp_root_dir / "a.ipynb", "x = 1")
        await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
        status, first = await fetch_json(jp_fetch, "api", "xcsh", "approvals", spec_path=APPROVALS)
        assert status == 200 and first["approvals"] == [], first
        held = asyncio.ensure_future(self.long_poll(jp_fetch, first["version"]))
        await asyncio.sleep(2.5)  # past the 1 s presence window of the first request
        assert not held.done()
        loop = asyncio.get_running_loop()
        call = asyncio.ensure_future(tool(jp_fetch, "rest", "notebook")(EDIT))
        asked_at = loop.time()
        changed = await asyncio.wait_for(held, 10)  # at once, not after 30 s
        assert loop.time() - asked_at < 5
        assert changed["version"] != first["version"]
        (approval,) = changed["approvals"]
        assert approval["path"] == "a.ipynb" and approval["cellIds"] == ["c0"]
        # The answer is a change too: a poll at the new version answers when it comes.
        again = asyncio.ensure_future(self.long_poll(jp_fetch, changed["version"]))
        await asyncio.sleep(0.3)
        assert not again.done()
        assert (await answer(jp_fetch, approval["id"], "allow-once"))[0] == 200
        status, body = await call
        assert status == 200, body  # the call waited for the answer: not refused at once
        after = await asyncio.wait_for(again, 10)
        assert after["approvals"] == [] and after["version"] != changed["version"]

    async def test_a_poll_at_an_old_version_or_without_wait_answers_at_once(self, jp_fetch):
        status, first = await fetch_json(jp_fetch, "api", "xcsh", "approvals", spec_path=APPROVALS)
        assert status == 200, first
        loop = asyncio.get_running_loop()
        started = loop.time()
        body = await self.long_poll(jp_fetch, first["version"] - 1)
        assert body == first
        body = await self.long_poll(jp_fetch, first["version"], wait=0)
        assert body == first
        status, body = await fetch_json(
            jp_fetch, "api", "xcsh", "approvals", params={"since": str(first["version"])}
        )
        assert (status, body) == (200, first)
        assert loop.time() - started < 5
        # Held for its whole wait when nothing changes, then answered as it is.
        body = await self.long_poll(jp_fetch, first["version"], wait=1)
        assert body == first and loop.time() - started >= 1

    @pytest.mark.slow
    async def test_a_client_that_hangs_up_is_no_longer_held(
        self, jp_fetch, jp_root_dir, jp_serverapp
    ):
        (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_xcsh"]
        approvals = app.services.policies.approvals
        write(jp_root_dir / "a.ipynb", "x = 1")
        await set_policy(jp_fetch, "a.ipynb", preset="ask-changes")
        status, first = await fetch_json(jp_fetch, "api", "xcsh", "approvals")
        params = {"wait": "30", "since": str(first["version"])}
        with pytest.raises(HTTPClientError) as hung_up:  # the client gives up after 1 s
            await jp_fetch("api", "xcsh", "approvals", params=params, request_timeout=1)
        assert hung_up.value.code == 599
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while approvals.held and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert approvals.held == 0
        # Nobody holds a request and the window has passed: no lab is open, an ask is refused
        # at once.
        await asyncio.sleep(1.5)
        started = loop.time()
        status, body = await tool(jp_fetch, "rest", "notebook")(EDIT)
        assert (status, body["reason"]) == (403, "approval_required"), body
        assert "no JupyterLab is open" in body["message"]
        assert loop.time() - started < APPROVAL_TIMEOUT / 2

    @pytest.mark.parametrize(
        "query",
        [
            {"wait": "31"},
            {"wait": "-1"},
            {"wait": "1.5"},
            {"wait": "abc"},
            {"wait": ""},
            {"wait": "9" * 5000},
            {"wait": "\u0663"},
            {"since": "x"},
            {"since": "-3"},
            {"since": str(2**53)},
            {"since": "1" * 5000},
            {"since": "1e3", "wait": "5"},
        ],
    )
    async def test_a_bad_query_is_a_400(self, jp_fetch, query):
        status, body = await fetch_json(
            jp_fetch, "api", "xcsh", "approvals", params=query, spec_path=APPROVALS
        )
        assert status == 400, (query, body)
        assert next(iter(query)) in body["message"]  # the bad one

    async def test_a_query_argument_given_twice_is_a_400(self, jp_fetch):
        status, body = await fetch_json(
            jp_fetch, "api", "xcsh", "approvals", params=[("wait", "1"), ("wait", "2")]
        )
        assert status == 400 and "once" in body["message"], body


class TestTheStoreInsideTheRoot:
    """The person's policy file placed inside the contents root (a misconfiguration)."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir):
        """The store in ``conf/`` of the root."""
        config = Config(jp_server_config)
        config.XcshSettings.policy_store_path = str(jp_root_dir / "conf" / "policies.json")
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_no_tool_reaches_the_policy_store(self, jp_fetch, jp_root_dir, transport):
        await set_policy(jp_fetch, "x.ipynb", preset="read-only")
        store = jp_root_dir / "conf" / "policies.json"
        kept = store.read_text(encoding="utf-8")
        files = tool(jp_fetch, transport, "files")
        for body in (
            {"action": "read", "path": "conf/policies.json"},
            {"action": "write", "path": "conf/policies.json", "content": "{}", "old_content": "x"},
            {"action": "delete", "path": "conf/policies.json"},
            {"action": "delete", "path": "conf"},
            {"action": "rename", "path": "conf", "new_path": "elsewhere"},
        ):
            status, answer_ = await files(body)
            assert (status, answer_["reason"]) == (403, "policy_protected"), (body, answer_)
        assert store.read_text(encoding="utf-8") == kept
        # Each attempt is in the activity history, for the person to see.
        reasons: list[str] = []
        for _ in range(100):
            _, page = await fetch_json(jp_fetch, "api", "xcsh", "activity")
            reasons = [e.get("reason", "") for entry in page["entries"] for e in entry["events"]]
            if len(reasons) >= 5:
                break
            await asyncio.sleep(0.1)
        assert reasons == ["policy_protected"] * 5


class TestTheStoreThroughALinkMadeLater:
    """The person's policy file outside the root (the default), reached through symbolic links
    an agent could make in the root once the server runs: each call resolves them again."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir):
        """The store in a folder beside the root."""
        config = Config(jp_server_config)
        store = jp_root_dir.parent / "xcsh-data" / "policies.json"
        config.XcshSettings.policy_store_path = str(store)
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_no_tool_reaches_the_policy_store_through_a_link(
        self, jp_fetch, jp_root_dir, transport
    ):
        files = tool(jp_fetch, transport, "files")
        status, answer_ = await files({"action": "read", "path": "later.json"})
        assert status == 404, answer_  # nothing there yet: the path was resolved once already
        await set_policy(jp_fetch, "x.ipynb", preset="read-only")
        store = jp_root_dir.parent / "xcsh-data" / "policies.json"
        kept = store.read_text(encoding="utf-8")
        (jp_root_dir / "later.json").symlink_to(store)
        (jp_root_dir / "data").symlink_to(store.parent)
        for body in (
            {"action": "read", "path": "later.json"},
            {"action": "read", "path": "data/policies.json"},
            {"action": "delete", "path": "data"},
        ):
            status, answer_ = await files(body)
            assert (status, answer_["reason"]) == (403, "policy_protected"), (body, answer_)
        assert store.read_text(encoding="utf-8") == kept


# -- the person's endpoints ----------------------------------------------------------------------
async def test_policies_get_put_delete(jp_fetch, jp_root_dir, tmp_path):
    status, body = await fetch_json(
        jp_fetch, "api", "xcsh", "policies", params={"path": "a.ipynb"}, spec_path=POLICIES
    )
    assert status == 200
    assert body["effective"] == dict.fromkeys(body["effective"], "allow")
    assert body["preset"] == "full" and body["rules"] == []
    described = await set_policy(jp_fetch, "a.ipynb", preset="ask-running")
    assert described["preset"] == "ask-running"
    assert described["effective"]["run"] == "ask" and described["effective"]["edit"] == "allow"
    stored = json.loads((tmp_path / "state" / "policies.json").read_text(encoding="utf-8"))
    assert list(stored["roots"].values()) == [
        [{"path": "a.ipynb", "kind": "notebook", "classes": described["effective"]}]
    ]
    for bad in (
        {"path": "a.ipynb", "kind": "notebook"},
        {"path": "a.ipynb", "kind": "cell", "preset": "full"},
        {"path": "a.ipynb", "kind": "notebook", "preset": "everything"},
        {"path": "a.ipynb", "kind": "notebook", "classes": {"run": "maybe"}},
        {"path": "a.ipynb", "kind": "notebook", "classes": {"fly": "deny"}},
        {"path": "a.ipynb", "kind": "notebook", "preset": "full", "source": "operator"},
        {"path": "a.ipynb", "kind": "notebook", "preset": {}},  # once a 500 (the fuzzer's)
        {"path": "a.ipynb", "preset": "full"},
        {"path": "a.ipynb", "kind": "notebook", "classes": {}},
    ):
        status, error = await fetch_json(
            jp_fetch,
            "api",
            "xcsh",
            "policies",
            method="PUT",
            body=json.dumps(bad),
            spec_path=POLICIES,
        )
        assert status == 400, (bad, error)
    params = {"path": "a.ipynb", "kind": "notebook"}
    status, _ = await fetch_json(
        jp_fetch, "api", "xcsh", "policies", method="DELETE", params=params
    )
    assert status == 204
    status, _ = await fetch_json(
        jp_fetch, "api", "xcsh", "policies", method="DELETE", params=params, spec_path=POLICIES
    )
    assert status == 404


async def test_approval_answers_are_checked(jp_fetch):
    status, body = await answer(jp_fetch, "0" * 32, "allow-once")
    assert status == 404, body
    status, body = await answer(jp_fetch, "0" * 32, "maybe")
    assert status == 400, body
    status, body = await answer(jp_fetch, "0" * 32, "deny", "r" * 501)
    assert status == 400, body
    status, body = await fetch_json(jp_fetch, "api", "xcsh", "approvals", spec_path=APPROVALS)
    assert (status, body["approvals"]) == (200, []) and isinstance(body["version"], int)


def test_person_rules_survive_a_restart(tmp_path):
    path = str(tmp_path / "p.json")
    store = PolicyStore(path, str(tmp_path / "root"))
    store.set(parse_rule({"path": "x/", "kind": "folder", "preset": "read-only"}, "person"))
    again = PolicyStore(path, str(tmp_path / "root"))
    assert [r.to_json() for r in again.rules] == [r.to_json() for r in store.rules]
    assert PolicyStore(path, str(tmp_path / "other")).rules == []  # another server's root


def test_strictest_operator_rule_and_most_specific_person_rule():
    operator = [
        Rule("", "folder", {"destructive": "ask"}, "operator"),
        Rule("*.ipynb", "notebook", {"destructive": "deny"}, "operator"),
    ]
    person = [
        Rule("a", "folder", {"run": "deny"}),
        Rule("a/n.ipynb", "notebook", {"run": "ask"}),
    ]
    decisions, _ = effective(operator, person, "a/n.ipynb")
    assert decisions == {
        "read": "allow",
        "edit": "allow",
        "run": "ask",
        "python": "allow",
        "destructive": "deny",
    }
    decisions, _ = effective(operator, person, "a/other.txt")
    assert decisions["run"] == "deny" and decisions["destructive"] == "ask"

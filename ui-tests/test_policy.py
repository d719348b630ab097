"""The person decides what agents may do, in the lab (issue 40): the ``ask-before-run`` tag
from the cell toolbar, the notebook's "Agent access" menu, and approvals of agents' requests.

With ``XCSH_UI_SCREENSHOTS`` set, the screenshots of the approval dialog and the Agent access
menu are also saved as ``docs/images/policy-*.png``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.error
import urllib.request
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

REPO = Path(__file__).resolve().parent.parent
DOCS_IMAGES = REPO / "docs" / "images"

TOGGLE = '.jp-cell-toolbar [data-jp-item-name="xcsh-ask-before-run"] button'


def doc_screenshot(lab_page, label: str) -> None:
    """A screenshot kept for the docs when screenshots are asked for."""
    path = lab_page.screenshot(label)
    if os.environ.get("XCSH_UI_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / f"policy-{label}.png")


def saved_tags(lab, name: str) -> list[list[str]]:
    """The tags of each cell of the notebook as saved on disk."""
    notebook = json.loads((lab.root / name).read_text())
    return [cell["metadata"].get("tags", []) for cell in notebook["cells"]]


def save(lab_page) -> None:
    page = lab_page.page
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def test_the_cell_toolbar_sets_and_removes_the_ask_before_run_tag(lab, lab_page):
    cells = lab_page.open_notebook("tagged.ipynb", ["x = 1", "train()", "y = 2"])
    page = lab_page.page
    cell = cells.nth(1)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    toggle = cell.locator(TOGGLE)
    expect(toggle).to_be_visible()
    toggle.click()
    expect(cell).to_have_class(_has("jp-xcsh-mod-askBeforeRun"))
    expect(cell.locator(".jp-xcsh-AskBeforeRun")).to_have_text("Agents ask before running")
    expect(
        cell.locator('.jp-cell-toolbar [data-jp-item-name="xcsh-ask-before-run"]')
    ).to_have_class(_has("lm-mod-toggled"))
    expect(cells.nth(0)).not_to_have_class(_has("jp-xcsh-mod-askBeforeRun"))
    save(lab_page)
    assert saved_tags(lab, "tagged.ipynb") == [[], ["ask-before-run"], []]
    doc_screenshot(lab_page, "tagged-cell")

    # Again: the tag goes, and the mark with it.
    cell.locator(TOGGLE).click()
    expect(cell).not_to_have_class(_has("jp-xcsh-mod-askBeforeRun"))
    expect(cell.locator(".jp-xcsh-AskBeforeRun")).to_have_count(0)
    save(lab_page)
    assert saved_tags(lab, "tagged.ipynb") == [[], [], []]


def _has(name: str) -> Any:
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


DIALOG = ".jp-Dialog.jp-xcsh-ApprovalDialog"


def write_tagged_notebook(lab, name: str, sources: list[str], tagged: int) -> None:
    """A notebook of code cells ``cell-<i>``; cell ``tagged`` carries ``ask-before-run``."""
    lab.write_notebook(name, sources)
    path = lab.root / name
    notebook = json.loads(path.read_text())
    notebook["cells"][tagged]["metadata"]["tags"] = ["ask-before-run"]
    path.write_text(json.dumps(notebook, indent=1) + "\n")


def agent_call(lab, path: str, body: dict[str, Any], agent: str = "claude-code") -> Future[Any]:
    """An agent's REST call in the background: ``(status, body)`` once it answers."""

    def call() -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{lab.url}/{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"token {lab.token}",
                "Content-Type": "application/json",
                "X-Agent-Name": agent,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=180) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    return lab._pool.submit(call)


def outputs_of(lab, name: str) -> list[str]:
    """The text each cell of the saved notebook printed."""
    notebook = json.loads((lab.root / name).read_text())
    return ["".join(o.get("text", "") for o in cell["outputs"]) for cell in notebook["cells"]]


def test_an_agent_run_waits_at_an_ask_before_run_cell_until_the_lab_allows_it(lab, lab_page):
    name = "approve-run.ipynb"
    write_tagged_notebook(
        lab, name, ["print('before')", "print('training')", "print('after')"], tagged=1
    )
    lab_page.open(f"lab/tree/{name}")
    page = lab_page.page
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(3)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(1)).to_have_class(
        _has("jp-xcsh-mod-askBeforeRun")
    )
    run = agent_call(lab, "api/xcsh/notebook/run", {"notebook_path": name, "all": True})
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("claude-code asks for your approval")
    expect(dialog.locator('[data-fact="Notebook"]')).to_have_text(name)
    expect(dialog.locator(".jp-xcsh-Approval-code")).to_have_text("print('training')")
    expect(dialog.locator(".jp-xcsh-Approval-expires")).to_contain_text("Expires in")
    # The run waits at the tagged cell: the cell before it has run, the one after has not.
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells.nth(0).locator(".jp-OutputArea-output")).to_contain_text("before")
    assert not run.done()
    expect(cells.nth(2).locator(".jp-OutputArea-output")).to_have_count(0)
    doc_screenshot(lab_page, "approval")
    dialog.get_by_role("button", name="Allow once").click()
    expect(dialog).to_have_count(0)
    status, body = run.result(timeout=120)
    assert status == 200, body
    assert [c["status"] for c in body["cells"]] == ["complete"] * 3, body
    assert (
        body["text"].index("before") < body["text"].index("training") < body["text"].index("after")
    )
    panel = lab_page.open_activity()
    log = panel.locator(".jp-xcsh-ApprovalLog")
    open_log(log)
    expect(log.locator('[data-kind="asked"]')).to_contain_text("claude-code asked")
    expect(log.locator('[data-kind="answered"]')).to_contain_text("Allowed once")


def test_the_agent_access_menu_asks_before_changes_and_a_deny_answers_the_agent(lab, lab_page):
    name = "deny-edit.ipynb"
    lab_page.open_notebook(name, ["x = 1"])
    page = lab_page.page
    access = page.locator(".jp-NotebookPanel-toolbar .jp-xcsh-AgentAccess button")
    expect(access).to_have_text("Agents: Full access")
    access.click()
    menu = page.locator(".lm-Menu.jp-xcsh-AgentAccessMenu")
    expect(menu).to_be_visible()
    for label in ["Full access", "Ask before changes", "Ask before running", "Read only"]:
        expect(menu.locator(".lm-Menu-item", has_text=label)).to_be_visible()
    expect(menu.locator(".lm-Menu-item.lm-mod-toggled")).to_have_text(re.compile("Full access"))
    doc_screenshot(lab_page, "agent-access")
    menu.locator(".lm-Menu-item", has_text="Ask before changes").click()
    expect(access).to_have_text("Agents: Ask before changes")
    policy = lab.api("GET", f"api/xcsh/policies?path={name}")
    assert policy["preset"] == "ask-changes"
    assert policy["effective"]["edit"] == "ask"

    edit = agent_call(
        lab,
        "api/xcsh/notebook",
        {"action": "edit", "notebook_path": name, "cell_id": "cell-0", "content": "x = 2"},
    )
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()
    expect(dialog.locator(".jp-xcsh-Approval-code")).to_have_text("x = 2")
    dialog.locator("textarea").fill("not before the review")
    dialog.get_by_role("button", name="Deny").click()
    expect(dialog).to_have_count(0)
    status, body = edit.result(timeout=120)
    assert status == 403, body
    assert body["reason"] == "approval_denied"
    assert "not before the review" in body["message"]
    assert "x = 1" in (lab.root / name).read_text()
    panel = lab_page.open_activity()
    expect(panel.locator('.jp-xcsh-ApprovalLog [data-kind="answered"]')).to_contain_text("Denied")
    lab.api("DELETE", f"api/xcsh/policies?path={name}&kind=notebook")


def test_the_dialog_closes_when_another_lab_answers(lab, lab_page):
    name = "other-lab.ipynb"
    write_tagged_notebook(lab, name, ["print('tagged')"], tagged=0)
    lab_page.open(f"lab/tree/{name}")
    page = lab_page.page
    run = agent_call(lab, "api/xcsh/notebook/run", {"notebook_path": name, "all": True})
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()
    approval_id = dialog.locator(".jp-xcsh-Approval").get_attribute("data-approval-id")
    # Another lab (here: the REST API, as a lab calls it) answers first.
    lab.api("POST", f"api/xcsh/approvals/{approval_id}", {"decision": "allow-once"})
    expect(dialog).to_have_count(0)
    status, body = run.result(timeout=120)
    assert status == 200, body


def test_an_operator_rule_is_shown_as_the_servers_in_the_menu(lab, lab_page):
    (lab.root / "operator-locked").mkdir(exist_ok=True)
    name = "operator-locked/held.ipynb"
    lab_page.open_notebook(name, ["x = 1"])
    page = lab_page.page
    access = page.locator(".jp-NotebookPanel-toolbar .jp-xcsh-AgentAccess button")
    expect(access).to_have_text("Agents: Custom")
    access.click()
    menu = page.locator(".lm-Menu.jp-xcsh-AgentAccessMenu")
    expect(
        menu.locator(".lm-Menu-item", has_text="Set by the server: run asks you")
    ).to_be_visible()
    expect(
        menu.locator(".lm-Menu-item", has_text="Full access (limited by the server)")
    ).to_be_visible()
    page.keyboard.press("Escape")

    # The folder's menu in the file browser.
    page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:go-to-path', {path: '/'})")
    item = page.locator('.jp-DirListing-item[data-isdir="true"]', has_text="operator-locked")
    item.click(button="right")
    page.locator(".lm-Menu-item", has_text="Agent Access").hover()
    folder_menu = page.locator(".lm-Menu.jp-xcsh-AgentAccessMenu")
    expect(folder_menu.locator(".lm-Menu-item", has_text="Read only")).to_be_visible()
    folder_menu.locator(".lm-Menu-item", has_text="Read only").click()
    policy = lab.api("GET", "api/xcsh/policies?path=operator-locked/held.ipynb")
    assert policy["preset"] == "read-only"
    lab.api("DELETE", "api/xcsh/policies?path=operator-locked&kind=folder")


def test_an_answer_after_another_labs_is_told_already_answered(lab, lab_page):
    """A lab that missed the news (its event socket silent, its long poll held somewhere on
    the way) shows the request from its first list; answered meanwhile in another lab, its own
    answer is a 409: "Already answered"."""
    name = "late-answer.ipynb"
    write_tagged_notebook(lab, name, ["print('tagged')"], tagged=0)
    page = lab_page.page
    # The server's events never reach this page: a socket that stays open and says nothing.
    page.route_web_socket(re.compile(r".*/api/events/subscribe.*"), lambda ws: None)
    # Only the first list (no `since`) reaches the server; each long poll after it hangs.
    page.route(re.compile(r".*/api/xcsh/approvals\?.*since=.*"), lambda route: None)
    lab.api("GET", "api/xcsh/approvals")  # a lab is open while this page loads
    run = agent_call(lab, "api/xcsh/notebook/run", {"notebook_path": name, "all": True})
    wait_for_a_request(lab)
    lab_page.open(f"lab/tree/{name}")
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()  # from the first list
    approval_id = dialog.locator(".jp-xcsh-Approval").get_attribute("data-approval-id")
    lab.api("POST", f"api/xcsh/approvals/{approval_id}", {"decision": "deny"})
    dialog.get_by_role("button", name="Allow once").click()
    expect(page.locator(".Toastify__toast", has_text="Already answered")).to_be_visible()
    # The other lab's deny counted: the run stopped at the cell, which did not run.
    status, body = run.result(timeout=120)
    assert status == 200 and body["isError"] is True, body
    assert "The person denied this request" in body["text"], body


def test_a_lab_without_events_learns_of_asks_and_answers_from_its_long_poll(lab, lab_page):
    """The lab keeps a long poll of the requests waiting (``wait=30&since=<version>``): with
    its event socket silent, an ask shows at once and another lab's answer closes it."""
    name = "long-poll.ipynb"
    write_tagged_notebook(lab, name, ["print('tagged')"], tagged=0)
    page = lab_page.page
    page.route_web_socket(re.compile(r".*/api/events/subscribe.*"), lambda ws: None)
    long_poll = re.compile(r".*/api/xcsh/approvals\?(?=.*wait=30)(?=.*since=\d+).*")
    with page.expect_request(long_poll):
        lab_page.open(f"lab/tree/{name}")
    run = agent_call(lab, "api/xcsh/notebook/run", {"notebook_path": name, "all": True})
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible(timeout=8000)  # the long poll answers when it is asked
    approval_id = dialog.locator(".jp-xcsh-Approval").get_attribute("data-approval-id")
    lab.api("POST", f"api/xcsh/approvals/{approval_id}", {"decision": "allow-once"})
    expect(dialog).to_have_count(0, timeout=8000)  # and when another lab answers
    status, body = run.result(timeout=120)
    assert status == 200 and body["isError"] is False, body


def wait_for_a_request(lab, timeout: float = 60) -> None:
    """Wait until an agent's request is pending on the server."""
    deadline = time.monotonic() + timeout
    while not lab.api("GET", "api/xcsh/approvals")["approvals"]:
        assert time.monotonic() < deadline, "no request was asked"
        time.sleep(0.1)


def test_a_refusal_by_policy_is_listed_in_the_activity_panel(lab, lab_page):
    name = "refused.ipynb"
    lab_page.open_notebook(name, ["x = 1"])
    lab.api("PUT", "api/xcsh/policies", {"path": name, "kind": "notebook", "preset": "read-only"})
    status, body = agent_call(
        lab,
        "api/xcsh/notebook",
        {"action": "edit", "notebook_path": name, "cell_id": "cell-0", "content": "x = 2"},
    ).result(timeout=120)
    assert status == 403 and body["reason"] == "policy_denied", body
    panel = lab_page.open_activity()
    log = panel.locator(".jp-xcsh-ApprovalLog")
    open_log(log)
    expect(log.locator('[data-kind="refused"]')).to_contain_text("Refused")
    expect(page_access(lab_page)).to_have_text("Agents: Read only")
    lab.api("DELETE", f"api/xcsh/policies?path={name}&kind=notebook")


def open_log(log) -> None:
    """Unfold the approvals log of the activity panel (folded while requests wait)."""
    expect(log.locator("details")).to_have_count(1)
    if log.locator("details[open]").count() == 0:
        log.locator("summary").click()
    expect(log.locator("details[open]")).to_have_count(1)


def page_access(lab_page) -> Any:
    return lab_page.page.locator(".jp-NotebookPanel-toolbar .jp-xcsh-AgentAccess button")


def test_later_leaves_the_request_in_the_activity_panel_to_answer_from_there(lab, lab_page):
    name = "later.ipynb"
    write_tagged_notebook(lab, name, ["print('tagged')"], tagged=0)
    lab_page.open(f"lab/tree/{name}")
    page = lab_page.page
    run = agent_call(lab, "api/xcsh/notebook/run", {"notebook_path": name, "all": True})
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Later").click()
    expect(dialog).to_have_count(0)
    assert not run.done()
    panel = lab_page.open_activity()
    waiting = panel.locator(".jp-xcsh-ApprovalLog-pending")
    expect(waiting).to_contain_text("claude-code waits for your approval")
    waiting.get_by_role("button", name="Answer…").click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Allow once").click()
    expect(waiting).to_have_count(0)
    status, body = run.result(timeout=120)
    assert status == 200 and body["isError"] is False, body

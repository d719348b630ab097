"""The lab's typed client, as built into the lab extension, against a real server.

The client's types are generated from ``rest-api.yml`` at build time (``npm run build:api``);
this test runs the real ``XcshClient`` of the built extension in the browser, calls every
endpoint through it, and checks what each function returns against the same ``rest-api.yml``.
A client that parsed a response wrongly (a bare array where the server wraps it in an object,
a string where it sends a number) fails here.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

import jsonschema
import yaml
from playwright.sync_api import expect

#: Loads the client from the extension's own module (``./extension`` of its federated
#: container), bound to the page's server settings, as ``window.xcsh``.
LOAD_CLIENT = """async () => {
  const factory = await window._JUPYTERLAB['jupyter-xcsh'].get('./extension');
  const lib = factory();
  const settings = window.jupyterapp.serviceManager.serverSettings;
  window.xcsh = { lib, client: new lib.XcshClient({ serverSettings: settings }) };
  window.xcshEvents = [];
  window.jupyterapp.serviceManager.events.stream.connect((_, e) => window.xcshEvents.push(e));
}"""

#: Calls one client function; an error comes back as its class, status, message and reason.
CALL = """async ([name, args]) => {
  try {
    return { ok: await window.xcsh.client[name](...args) ?? null };
  } catch (e) {
    return { error: {
      isXcshError: e instanceof window.xcsh.lib.XcshResponseError,
      status: e.response?.status ?? null,
      message: e.message,
      reason: e.reason ?? null
    } };
  }
}"""


@cache
def _spec() -> dict[str, Any]:
    text = files("jupyter_xcsh").joinpath("rest-api.yml").read_text(encoding="utf-8")
    return yaml.safe_load(text)  # type: ignore[no-any-return]


def assert_schema(value: Any, name: str) -> None:
    """Fail unless ``value`` fits ``components.schemas.<name>`` of rest-api.yml."""
    schema = {"$ref": f"#/components/schemas/{name}", "components": _spec()["components"]}
    jsonschema.validate(value, schema, cls=jsonschema.Draft202012Validator)


def call(page, name: str, *args: Any) -> Any:
    answer = page.evaluate(CALL, [name, list(args)])
    assert "error" not in answer, answer["error"]
    return answer["ok"]


def fails(page, name: str, *args: Any) -> dict[str, Any]:
    answer = page.evaluate(CALL, [name, list(args)])
    assert "error" in answer, answer
    return answer["error"]  # type: ignore[no-any-return]


def test_every_client_function_returns_what_rest_api_yml_promises(lab, lab_page):
    lab.write_notebook("contract.ipynb", ["a = 1", "b = 2"])
    lab_page.open()
    page = lab_page.page
    page.evaluate(LOAD_CLIENT)

    # The notebook tool: each action's result is an edit or a read result.
    base = {"notebook_path": "contract.ipynb"}
    inserted = call(page, "notebook", {**base, "action": "insert", "cell_index": 2, "content": "c"})
    assert_schema(inserted, "NotebookEditResult")
    edited = call(page, "notebook", {**base, "action": "edit", "cell_index": 2, "content": "d"})
    assert_schema(edited, "NotebookEditResult")
    moved = call(page, "notebook", {**base, "action": "move", "cell_index": 2, "to_index": 0})
    assert_schema(moved, "NotebookEditResult")
    read = call(page, "notebook", {**base, "action": "read"})
    assert_schema(read, "NotebookReadResult")
    deleted = call(page, "notebook", {**base, "action": "delete", "cell_index": 0})
    assert_schema(deleted, "NotebookEditResult")
    assert deleted["details"]["cellSource"] == ["d"]
    # A refusal carries the server's message and reason.
    cell = {"cell_type": "raw", "id": "cell-0", "metadata": {}, "source": "x"}
    refused = fails(page, "notebook", {**base, "action": "insert", "cell_index": 0, "cell": cell})
    assert refused == {
        "isXcshError": True,
        "status": 409,
        "message": "Cell id cell-0 already exists in contract.ipynb",
        "reason": "cell_exists",
    }
    missing = fails(page, "notebook", {"action": "read", "notebook_path": "nope.ipynb"})
    assert missing["status"] == 404 and missing["message"] == "Notebook not found: nope.ipynb"

    # A run in place, in the notebook's own kernel; its outputs go into the notebook.
    ran = call(page, "runNotebook", {**base, "cell_index": 1, "timeout": 120})
    assert_schema(ran, "RunResult")
    assert ran["isError"] is False and ran["cells"][0]["outputsWritten"] is True
    stale = fails(page, "runNotebook", {**base, "cell_index": 1, "expected_revision": "0" * 16})
    assert (stale["status"], stale["reason"]) == (409, "stale_notebook")

    # The python tool, with output long enough to spill to an artifact.
    cells = [{"code": "print('x' * 100000)", "title": "long"}]
    result = call(page, "runPython", {"cells": cells, "session": "contract"})
    assert_schema(result, "PythonResult")
    assert result["truncated"] is True
    text = call(page, "getArtifact", result["artifactId"])
    assert text == "x" * 100000 + "\n"
    assert call(page, "getArtifact", result["artifactId"], {"offset": 1, "limit": 1}) == text

    # The files tool: every answer is a FilesResult; a stale write is a 409 FilesConflict.
    written = call(page, "files", {"action": "write", "path": "contract.txt", "content": "one\n"})
    assert_schema(written, "FilesResult")
    listed = call(page, "files", {"action": "list", "glob": "contract.*"})
    assert_schema(listed, "FilesResult")
    assert [e["name"] for e in listed["details"]["entries"]] == ["contract.ipynb", "contract.txt"]
    read_file = call(page, "files", {"action": "read", "path": "contract.txt"})
    assert read_file["details"]["content"] == "one\n"
    assert read_file["details"]["hash"] == written["details"]["hash"]
    stale_file = fails(
        page,
        "files",
        {"action": "write", "path": "contract.txt", "content": "x", "expected_hash": "0" * 16},
    )
    assert (stale_file["status"], stale_file["reason"]) == (409, "stale_file")

    # Sessions: a list of sessions (the server wraps it in {"sessions": [...]}).
    sessions = call(page, "listSessions")
    assert isinstance(sessions, list) and sessions
    for session in sessions:
        assert_schema(session, "PythonSession")
    assert any(s["name"] == "contract" for s in sessions)
    idle = call(page, "interruptSession", "contract")
    assert idle == {"interrupted": False}

    # The kernel tool: a session's variables, and its 404 for an unknown session.
    variables = call(page, "kernel", {"action": "variables", "session": "contract"})
    assert_schema(variables, "KernelResult")
    unknown = fails(page, "kernel", {"action": "status", "session": "nope"})
    assert unknown["status"] == 404 and unknown["message"] == "No python session named nope"

    # Interrupting one running call by the callId of its events.
    page.evaluate("() => { window.xcshEvents.length = 0; }")
    page.evaluate(
        """() => { window.xcshRun = window.xcsh.client.runPython(
             { cells: [{ code: 'import time\\ntime.sleep(60)' }], session: 'contract' }); }"""
    )
    page.wait_for_function(
        "() => window.xcshEvents.some(e => e.event === 'started' && e.session === 'contract')"
    )
    call_id = page.evaluate(
        "() => window.xcshEvents.find(e => e.event === 'started' && e.session === 'contract')"
        ".callId"
    )
    assert call(page, "interruptCall", call_id) == {"interrupted": True}
    cancelled = page.evaluate("() => window.xcshRun")
    assert_schema(cancelled, "PythonResult")
    assert cancelled["cancelled"] is True and cancelled["callId"] == call_id
    unknown = fails(page, "interruptCall", call_id)
    assert unknown["status"] == 404

    assert call(page, "shutdownSession", "contract") is None
    assert not any(s["name"] == "contract" for s in call(page, "listSessions"))
    expect(page.locator(".jp-Dialog")).to_have_count(0)

"""Hostile input on every endpoint: a clear 4xx with an exact message, never a 5xx (issue 8).

Each test sends what a fuzzer or a confused agent sends (deep nesting, names no file system
takes, NUL characters, lone surrogates, numbers out of range, ``%`` signs) to the real server
and checks the exact answer, that it matches ``rest-api.yml``, and that nothing was written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.paths import hide_root
from tests.support.mcp_client import call_tool
from tests.support.notebooks import jupyter_text, load, sample_notebook
from tests.support.openapi_check import assert_response_matches, request_is_valid
from tests.support.python_tool import run, sessions

NOTEBOOK = "/api/xcsh/notebook"
PYTHON = "/api/xcsh/python"


@pytest.fixture
def notebook(jp_root_dir):
    """A Jupyter-written notebook at ``dir/a.ipynb`` with four cells; returns its os path."""
    (jp_root_dir / "dir").mkdir()
    path = jp_root_dir / "dir" / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


@pytest.fixture
def fetch(jp_fetch):
    """``fetch(method, path, body=, raw=, headers=, params=) -> (status, headers, body)``.

    ``path`` is not URL-encoded (``jp_fetch`` does that). The body is the parsed JSON answer
    (errors included), so every status can be checked.
    """

    async def call(
        method: str,
        path: str,
        body: Any = None,
        raw: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        kwargs: dict[str, Any] = {"method": method, "headers": headers or {}, "params": params}
        if data is not None or method == "POST":
            kwargs["body"] = data if data is not None else b""
        parts = path.lstrip("/").split("/")
        try:
            response = await jp_fetch(*parts, **kwargs)
        except HTTPClientError as e:
            assert e.response is not None
            return e.code, e.response.headers, json.loads(e.response.body)
        return response.code, response.headers, json.loads(response.body or b"null")

    return call


async def _refused(fetch, path, status, message, *, body=None, raw=None):
    got, _, result = await fetch("POST", path, body=body, raw=raw)
    assert (got, result["message"]) == (status, message), result
    assert_response_matches(path, "POST", status, result)


def nested(depth: int) -> str:
    """A python tool body whose ``cells`` value holds ``depth`` arrays and objects in all."""
    return '{"cells": ' + "[" * depth + "]" * depth + "}"


# --- request bodies (handlers/base.py json_body) ------------------------------------------


@pytest.mark.parametrize("path", [NOTEBOOK, PYTHON])
async def test_a_deeply_nested_body_is_a_400_not_a_recursion_error(fetch, path):
    message = "Request body is nested too deeply (more than 64 levels)"
    await _refused(fetch, path, 400, message, raw=nested(100_000))
    # Past the parser's own recursion limit and just past the bound alike.
    await _refused(fetch, path, 400, message, raw=nested(64))


async def test_a_body_nested_within_the_bound_gets_the_fields_own_message(fetch):
    # The top-level object is the first of the 64 levels allowed.
    await _refused(fetch, PYTHON, 400, "cells[0].code must be a string", raw=nested(63))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_not_json(fetch, constant):
    body = '{"cells": [], "timeout": ' + constant + "}"
    message = f"Request body is not valid JSON: {constant} is not a JSON value"
    await _refused(fetch, PYTHON, 400, message, raw=body)


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        (PYTHON, '{"cells": [{"code": "1"}], "session": "s\\ud800"}', "session"),
        (PYTHON, '{"cells": [{"code": "print(\\"\\udfff\\")"}]}', "cells[0].code"),
        (PYTHON, '{"cells": [{"code": "1", "title": "\\uDC80"}]}', "cells[0].title"),
        (PYTHON, '{"cells": [], "cwd": "\\ud800"}', "cwd"),
        (NOTEBOOK, '{"action": "read", "notebook_path": "\\ud800.ipynb"}', "notebook_path"),
        (
            NOTEBOOK,
            '{"action": "read", "notebook_path": "dir/a.ipynb", "cell_id": "\\udc00"}',
            "cell_id",
        ),
    ],
)
async def test_a_lone_surrogate_in_any_string_field_is_a_400(fetch, notebook, path, raw, field):
    code = raw.split("\\u")[-1][:4].lower()
    message = f"Invalid Unicode in {field}: a lone surrogate (\\u{code})"
    await _refused(fetch, path, 400, message, raw=raw)


async def test_a_lone_surrogate_in_content_changes_nothing(fetch, notebook):
    before = notebook.read_bytes()
    raw = (
        '{"action": "insert", "notebook_path": "dir/a.ipynb", "cell_index": 0, '
        '"content": "x = \\"\\ud83d\\""}'
    )
    message = "Invalid Unicode in content: a lone surrogate (\\ud83d)"
    await _refused(fetch, NOTEBOOK, 400, message, raw=raw)
    assert notebook.read_bytes() == before


async def test_a_surrogate_pair_is_ordinary_text(fetch, notebook):
    raw = (
        '{"action": "insert", "notebook_path": "dir/a.ipynb", "cell_index": 0, '
        '"content": "smile \\ud83d\\ude00"}'
    )
    status, _, result = await fetch("POST", NOTEBOOK, raw=raw)
    assert status == 200, result
    assert load(notebook.read_text(encoding="utf-8")).cells[0].source == "smile \U0001f600"


async def test_a_lone_surrogate_in_a_field_name_is_a_400(fetch):
    raw = '{"cells": [{"code": "1", "\\ud800": 1}]}'
    message = "Invalid Unicode in a field name of cells[0]: a lone surrogate"
    await _refused(fetch, PYTHON, 400, message, raw=raw)


# --- paths (paths.py check_path) ---------------------------------------------------------


async def test_a_file_name_over_255_bytes_is_a_400_for_reads_and_writes(fetch, jp_root_dir):
    name = "é" * 128 + ".ipynb"  # 134 characters, 262 bytes
    message = f"Path has a name longer than 255 bytes: dir/{name}"
    body = {"action": "read", "notebook_path": f"dir/{name}"}
    await _refused(fetch, NOTEBOOK, 400, message, body=body)
    body = {"action": "insert", "notebook_path": f"dir/{name}", "cell_index": 0, "content": ""}
    await _refused(fetch, NOTEBOOK, 400, message, body=body)
    assert list(jp_root_dir.iterdir()) == []


async def test_a_folder_name_over_255_bytes_is_a_400(fetch):
    path = "d" * 256 + "/a.ipynb"
    message = f"Path has a name longer than 255 bytes: {path}"
    await _refused(fetch, NOTEBOOK, 400, message, body={"action": "read", "notebook_path": path})


async def test_a_path_longer_than_the_system_takes_is_a_400(fetch):
    path = "/".join(["d" * 200] * 25) + "/a.ipynb"  # every name fits, the whole does not
    message = f"Path is too long: {path}"
    await _refused(fetch, NOTEBOOK, 400, message, body={"action": "read", "notebook_path": path})


async def test_a_nul_in_a_notebook_path_is_a_400(fetch):
    body = {"action": "read", "notebook_path": "a\x00.ipynb"}
    message = "Path contains a NUL character: 'a\\x00.ipynb'"
    await _refused(fetch, NOTEBOOK, 400, message, body=body)


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("dir\x00x", "Working directory contains a NUL character: 'dir\\x00x'"),
        ("x" * 256, f"Working directory has a name longer than 255 bytes: {'x' * 256}"),
    ],
)
async def test_a_working_directory_no_system_takes_is_a_400(fetch, cwd, message):
    await _refused(fetch, PYTHON, 400, message, body={"cells": [{"code": "1"}], "cwd": cwd})


# --- numbers and names (execution/python/request.py) -------------------------------------


@pytest.mark.parametrize("timeout", ["1" + "0" * 400, "1e999", "-1e999"])
async def test_a_timeout_beyond_any_float_is_a_400(fetch, timeout):
    raw = '{"cells": [{"code": "1"}], "timeout": ' + timeout + "}"
    assert not request_is_valid(PYTHON, "POST", json.loads(raw))  # rest-api.yml says so too
    await _refused(fetch, PYTHON, 400, "timeout must be a finite number of seconds", raw=raw)


@pytest.mark.parametrize("session", ["", ".", "..", "a/b", "tab\there", "nul\x00", "x" * 201])
async def test_a_session_name_that_cannot_be_addressed_is_a_400(fetch, session):
    message = (
        "session must be 1 to 200 characters, not only dots, without '/' or control characters"
    )
    body = {"cells": [{"code": "1"}], "session": session}
    assert not request_is_valid(PYTHON, "POST", body)  # rest-api.yml's pattern says so too
    await _refused(fetch, PYTHON, 400, message, body=body)


# --- JSON integers: 1.0 is 1 (notebook/edit/cells.py) -----------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"action": "read", "cell_index": 1.0, "end_index": 2.0, "max_chars": 5000.0},
        {"action": "edit", "cell_index": 1.0, "content": "y = 2"},
        {"action": "insert", "cell_index": 4.0, "content": "# end"},
        {"action": "delete", "cell_index": 3.0},
        {"action": "move", "cell_index": 0.0, "to_index": 3.0},
    ],
    ids=lambda body: body["action"],
)
async def test_an_integral_number_is_an_integer_in_every_integer_field(fetch, notebook, body):
    body = {**body, "notebook_path": "dir/a.ipynb"}
    assert request_is_valid(NOTEBOOK, "POST", body)  # JSON Schema's integer takes 1.0 too
    status, _, result = await fetch("POST", NOTEBOOK, body=body)
    assert status == 200, result
    assert_response_matches(NOTEBOOK, "POST", 200, result)
    details = result["details"]
    got = {
        "read": lambda: (details["startIndex"], details["endIndex"]),
        "move": lambda: (details["fromIndex"], details["cellIndex"]),
    }.get(body["action"], lambda: details["cellIndex"])()
    expected = {"read": (1, 2), "move": (0, 3)}.get(body["action"], int(body["cell_index"]))
    assert got == expected
    assert not any(isinstance(value, float) for value in details.values())
    assert ".0" not in result["text"].split("\n")[0]


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("cell_index", 1.5, "number: 1.5"),
        ("cell_index", "1", "string: '1'"),
        ("cell_index", True, "boolean: True"),
        ("end_index", 2.5, "number: 2.5"),
        ("max_chars", "100", "string: '100'"),
    ],
)
async def test_a_number_with_a_fraction_a_string_or_a_boolean_stays_a_400(
    fetch, notebook, field, value, shown
):
    body = {"action": "read", "notebook_path": "dir/a.ipynb", field: value}
    assert not request_is_valid(NOTEBOOK, "POST", body)
    await _refused(fetch, NOTEBOOK, 400, f"{field} must be an integer, got {shown}", body=body)


@pytest.mark.parametrize(
    "body",
    [
        {"action": "read", "content": None, "cell_type": None, "to_index": None},
        {"action": "delete", "cell_index": 0, "content": None, "max_chars": None},
        {"action": "insert", "cell_index": 0, "content": "", "cell_id": None, "to_index": None},
    ],
    ids=lambda body: body["action"],
)
async def test_null_fields_of_other_actions_are_accepted_by_server_and_spec(fetch, notebook, body):
    body = {**body, "notebook_path": "dir/a.ipynb"}
    assert request_is_valid(NOTEBOOK, "POST", body)
    status, _, result = await fetch("POST", NOTEBOOK, body=body)
    assert status == 200, result


async def test_an_unknown_field_is_refused_even_when_null(fetch, notebook):
    body = {"action": "read", "notebook_path": "dir/a.ipynb", "bogus": None}
    assert not request_is_valid(NOTEBOOK, "POST", body)
    message = (
        "Unknown field: bogus "
        "(read takes: notebook_path, cell_index, cell_id, end_index, max_chars, execution_count, "
        "images)"
    )
    await _refused(fetch, NOTEBOOK, 400, message, body=body)


# --- artifacts query and Range (handlers/artifacts.py) -----------------------------------


@pytest.fixture
def artifact(jp_serverapp) -> str:
    """A real artifact of two lines; returns its id."""
    with jp_serverapp.web_app.settings["xcsh"].artifact_store.create("python") as writer:
        writer.write(b"one\ntwo\n")
    return str(writer.id)


@pytest.mark.parametrize(
    ("params", "headers", "status", "text"),
    [
        ({"offset": "9" * 5000}, {}, 200, b""),
        ({"limit": "9" * 5000}, {}, 200, b"one\ntwo\n"),
        ({}, {"Range": "bytes=-" + "9" * 5000}, 206, b"one\ntwo\n"),
        ({}, {"Range": "bytes=0-" + "9" * 5000}, 206, b"one\ntwo\n"),
    ],
)
async def test_numbers_of_thousands_of_digits_in_an_artifact_request_are_read_as_numbers(
    jp_fetch, artifact, params, headers, status, text
):
    # Python refuses int() of more than 4300 digits: these were 500s.
    response = await jp_fetch("api", "xcsh", "artifacts", artifact, params=params, headers=headers)
    assert (response.code, response.body) == (status, text)


async def test_a_range_starting_thousands_of_digits_in_is_not_satisfiable(fetch, artifact):
    header = "bytes=" + "9" * 5000 + "-"
    status, _, result = await fetch(
        "GET", f"/api/xcsh/artifacts/{artifact}", headers={"Range": header}
    )
    assert (status, result["message"]) == (416, f"Range not satisfiable: {header}")


# --- exact messages with % on every endpoint (handlers/base.py write_error) ---------------


async def test_a_percent_sign_comes_back_as_sent_from_every_endpoint(
    fetch, jp_root_dir, jp_base_url
):
    (jp_root_dir / "100%").write_text("not a folder", encoding="utf-8")
    answers = [
        await fetch("POST", NOTEBOOK, body={"action": "read", "notebook_path": "100%s%d.ipynb"}),
        await fetch("POST", NOTEBOOK, body={"action": "%s", "notebook_path": "a.ipynb"}),
        await fetch("POST", PYTHON, body={"cells": [], "cwd": "50%"}),
        await fetch("POST", PYTHON, body={"cells": [], "cwd": "100%"}),
        await fetch("POST", PYTHON, body={"cells": [], "mode": "100%"}),
        await fetch("DELETE", "/api/xcsh/sessions/100%"),
        await fetch("POST", "/api/xcsh/sessions/100%/interrupt", raw=b""),
        await fetch("GET", "/api/xcsh/artifacts/100%"),
        await fetch("GET", "/api/xcsh/artifacts/1", params={"offset": "5%"}),
        await fetch("POST", "/api/xcsh/calls/100%/interrupt", raw=b""),
    ]
    assert [(status, body["message"]) for status, _, body in answers] == [
        (404, "Notebook not found: 100%s%d.ipynb"),
        (
            400,
            "Invalid action: %s (actions: edit, insert, delete, move, read, find, create, changes)",
        ),
        (400, "Working directory does not exist: 50%"),
        (400, "Working directory is not a directory: 100%"),
        (400, "mode must be 'session' or 'per-call', not '100%'"),
        (404, "No python session named 100%"),
        (404, "No python session named 100%"),
        (400, "Invalid artifact id: '100%'"),
        (400, "offset must be a positive integer, got '5%'"),
        (404, f"Not found: {jp_base_url}api/xcsh/calls/100%25/interrupt"),
    ]


# --- URLs and methods (handlers/base.py) -------------------------------------------------


async def test_an_unknown_url_under_the_api_is_a_json_404(fetch, jp_base_url):
    for method, path in [
        ("GET", "api/xcsh/nothing/here"),
        ("POST", "api/xcsh/calls/not-an-id/interrupt"),
        ("GET", "api/xcsh"),
    ]:
        status, headers, body = await fetch(method, path)
        assert (status, body["message"]) == (404, f"Not found: {jp_base_url}{path}")
        assert headers["Content-Type"] == "application/json"


async def test_a_method_the_endpoint_lacks_is_a_405_listing_the_methods(fetch):
    status, headers, body = await fetch("PUT", NOTEBOOK, raw=b"{}")
    assert (status, body["message"]) == (405, "Method Not Allowed")
    assert headers["Allow"] == "POST, OPTIONS"
    status, headers, _ = await fetch("GET", "/api/xcsh/sessions/default")
    assert (status, headers["Allow"]) == (405, "DELETE, OPTIONS")


# --- contents manager errors (handlers/base.py domain_errors) ----------------------------


class TestAContentsManagerFault:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.DiskFullContentsManager"
        return config

    async def test_its_message_names_the_file_by_api_path_not_the_servers_path(
        self, fetch, notebook, jp_root_dir
    ):
        before = notebook.read_bytes()
        body = {"action": "insert", "notebook_path": "dir/a.ipynb", "cell_index": 0, "content": ""}
        status, _, result = await fetch("POST", NOTEBOOK, body=body)
        assert status == 500  # the server's own fault, passed on with its status
        assert result["message"] == (
            "Unexpected error while saving file: dir/a.ipynb "
            "[Errno 28] No space left on device: 'dir/a.ipynb'"
        )
        assert str(jp_root_dir) not in json.dumps(result)
        assert notebook.read_bytes() == before


# --- hostile files (notebook/storage/document.py) ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"cells": [], "metadata": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}",
        '{"cells": [{"x": ' + "[" * 100_000 + "]" * 100_000 + "}], " + '"metadata": {}}',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["metadata", "cell", "top"],
)
async def test_a_notebook_nested_deeper_than_any_parser_goes_is_a_422(fetch, jp_root_dir, text):
    (jp_root_dir / "deep.ipynb").write_text(text, encoding="utf-8")
    for body in (
        {"action": "read", "notebook_path": "deep.ipynb"},
        {"action": "insert", "notebook_path": "deep.ipynb", "cell_index": 0, "content": ""},
    ):
        status, _, result = await fetch("POST", NOTEBOOK, body=body)
        assert (status, result["message"]) == (422, "Invalid JSON in notebook: deep.ipynb")
    assert (jp_root_dir / "deep.ipynb").read_text(encoding="utf-8") == text


# --- the pure helpers (paths.py) ---------------------------------------------------------


def test_hide_root_names_files_by_api_path_and_the_root_as_slash(tmp_path):
    root = str(tmp_path / "nb")
    message = f"Cannot save {root}/dir/a.ipynb; '{root}' is full; {root}2/x is elsewhere"
    assert hide_root(message, [root + "/"]) == (
        f"Cannot save dir/a.ipynb; '/' is full; {root}2/x is elsewhere"
    )


def test_hide_root_knows_the_root_by_its_resolved_name_too(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    message = f"Error in {tmp_path / 'real' / 'a.ipynb'}"
    assert hide_root(message, [str(tmp_path / "link")]) == "Error in a.ipynb"


# --- empty cell ids (notebook/edit/request.py, execution/inplace/request.py; issue 20) -----


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("to_after_cell_id", {"action": "move", "cell_index": 0, "to_after_cell_id": ""}),
        ("to_before_cell_id", {"action": "move", "cell_index": 0, "to_before_cell_id": ""}),
        ("cell_id", {"action": "move", "cell_id": "", "to_index": 1}),
        ("cell_id", {"action": "edit", "cell_id": "", "content": "x"}),
        ("cell_id", {"action": "delete", "cell_id": ""}),
        ("cell_id", {"action": "read", "cell_id": ""}),
        ("after_cell_id", {"action": "insert", "after_cell_id": "", "content": "x"}),
        ("before_cell_id", {"action": "insert", "before_cell_id": "", "content": "x"}),
    ],
    ids=lambda value: value if isinstance(value, str) else value["action"],
)
async def test_an_empty_cell_id_is_a_400_naming_the_field_and_changes_nothing(
    fetch, notebook, field, change
):
    # An empty to_after_cell_id was read as "no anchor" and fired an assertion (a 500).
    before = notebook.read_bytes()
    body = {**change, "notebook_path": "dir/a.ipynb"}
    await _refused(fetch, NOTEBOOK, 400, f"{field} must not be empty", body=body)
    if change["action"] != "read":
        batch = {
            "notebook_path": "dir/a.ipynb",
            "changes": [{"action": "edit", "cell_index": 0, "content": "changed"}, change],
        }
        message = f"Change 2 failed: {field} must not be empty"  # changes count from 1
        await _refused(fetch, NOTEBOOK, 400, message, body=batch)
    assert notebook.read_bytes() == before


async def test_an_empty_cell_id_over_mcp_is_the_tools_400_not_an_internal_error(jp_fetch, notebook):
    arguments = {
        "action": "move",
        "notebook_path": "dir/a.ipynb",
        "cell_index": 0,
        "to_after_cell_id": "",
    }
    result = await call_tool(jp_fetch, "notebook", arguments)
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == 400
    assert result["content"][0]["text"] == "to_after_cell_id must not be empty"


async def test_an_empty_cell_id_of_a_run_is_a_400_naming_the_field(fetch, notebook):
    body = {"notebook_path": "dir/a.ipynb", "cell_id": ""}
    await _refused(fetch, "/api/xcsh/notebook/run", 400, "cell_id must not be empty", body=body)


# --- paths with .. inside the root (paths.py; issue 20) ------------------------------------


async def test_a_dotdot_that_stays_inside_the_root_is_resolved(fetch, notebook, jp_root_dir):
    top = sample_notebook()
    top.cells = top.cells[:1]
    (jp_root_dir / "top.ipynb").write_text(jupyter_text(top), encoding="utf-8")
    for path, cells in (
        ("./dir/../top.ipynb", 1),
        ("dir/./../dir/a.ipynb", 4),
        ("dir/x/../a.ipynb", 4),
    ):
        status, _, result = await fetch(
            "POST", NOTEBOOK, body={"action": "read", "notebook_path": path}
        )
        assert status == 200, (path, result)
        assert result["details"]["totalCells"] == cells, (path, result["details"])


async def test_a_dotdot_climbing_above_the_root_says_so(fetch, notebook):
    path = "dir/../../a.ipynb"
    message = f"Path is outside the contents root: {path} (its .. climbs above the root)"
    body = {"action": "read", "notebook_path": path}
    await _refused(fetch, NOTEBOOK, 403, message, body=body)


# --- a session's cwd as a query argument (handlers/sessions.py; issue 20) -------------------


@pytest.mark.parametrize("cwd", ["\x00", "\n", "\x1f", "\x7f", "sub\x00"])
async def test_a_control_character_in_cwd_is_a_400_and_shuts_nothing_down(fetch, jp_fetch, cwd):
    # Tornado's get_query_argument made ?cwd=%00 a space and stripped it: the root's session.
    await run(jp_fetch, "x = 1")
    message = f"cwd must not contain control characters: {cwd!r}"
    for method, path in (
        ("DELETE", "/api/xcsh/sessions/default"),
        ("POST", "/api/xcsh/sessions/default/interrupt"),
    ):
        status, _, result = await fetch(method, path, params={"cwd": cwd})
        assert (status, result["message"]) == (400, message)
        assert_response_matches(path.replace("default", "{name}"), method, 400, result)
    assert [s["cwd"] for s in await sessions(jp_fetch)] == [""]


@pytest.mark.slow
async def test_a_cwd_of_white_space_is_not_stripped_to_the_root(fetch, jp_fetch):
    await run(jp_fetch, "x = 1")
    status, _, result = await fetch("DELETE", "/api/xcsh/sessions/default", params={"cwd": " "})
    assert (status, result["message"]) == (404, "No python session named default with cwd ' '")
    assert [s["cwd"] for s in await sessions(jp_fetch)] == [""]

"""The files tool (``POST /api/xcsh/files``, MCP ``files``) on real servers.

Every action on the server's default (disk, asynchronous) contents manager, over REST and MCP;
the root and hidden-file rules; preconditions; and every action again on a contents manager
that keeps nothing on disk (``tests/support/memory_contents.py``), selected by the server's config.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from tests.support.mcp_client import TRANSPORTS, tool_via_mcp
from tests.support.openapi_check import assert_response_matches

pytestmark = pytest.mark.timeout(120)

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@pytest.fixture
def files_tool(jp_fetch, transport):
    """Call the files tool; return ``(status, json body)`` for success and error alike.

    REST answers are checked against ``rest-api.yml``; over MCP (``transport``), the tool
    result shaped as REST would answer it.
    """
    if transport == "mcp":
        return tool_via_mcp(jp_fetch, "files")

    async def call(body: Any, raw: bytes | None = None, **kwargs: Any) -> tuple[int, Any]:
        data = raw if raw is not None else json.dumps(body).encode()
        try:
            response = await jp_fetch("api", "xcsh", "files", method="POST", body=data, **kwargs)
        except HTTPClientError as e:
            assert e.response is not None
            code, text = e.code, e.response.body
        else:
            code, text = response.code, response.body
        if code != 401:
            assert_response_matches("/api/xcsh/files", "POST", code, text)
        return code, json.loads(text)

    return call


@pytest.fixture
def tree(jp_root_dir):
    """A small project: text files, a notebook, a binary file and a sub-folder."""
    (jp_root_dir / "src").mkdir()
    (jp_root_dir / "src" / "app.py").write_text("import os\n\ndef main():\n    return 42\n")
    (jp_root_dir / "src" / "util.py").write_text("def helper():\n    return 'main'\n")
    (jp_root_dir / "README.md").write_text("# Project\nRun main.\n")
    (jp_root_dir / "logo.png").write_bytes(PNG)
    (jp_root_dir / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    return jp_root_dir


# -- every action ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_list_shows_entries_with_their_fields_folders_first(files_tool, tree):
    status, result = await files_tool({"action": "list"})

    assert status == 200
    details = result["details"]
    names = [e["name"] for e in details["entries"]]
    assert names == ["src", "README.md", "logo.png", "notes.txt"]
    png = details["entries"][2]
    assert png["path"] == "logo.png" and png["type"] == "file" and png["size"] == len(PNG)
    assert png["lastModified"] and details["entries"][0]["size"] is None
    assert details["leftOff"] == 0 and "src/" in result["text"]


async def test_list_with_glob_and_limit_says_how_many_were_left_off(files_tool, tree):
    for n in range(5):
        (tree / f"data{n}.csv").write_text("a,b\n")

    status, result = await files_tool({"action": "list", "glob": "*.csv", "limit": 2})

    assert status == 200
    assert [e["name"] for e in result["details"]["entries"]] == ["data0.csv", "data1.csv"]
    assert result["details"]["totalEntries"] == 5 and result["details"]["leftOff"] == 3
    assert "3 left off" in result["text"]
    status, result = await files_tool({"action": "list", "path": "src"})
    assert [e["path"] for e in result["details"]["entries"]] == ["src/app.py", "src/util.py"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_read_gives_a_line_range_and_the_files_hash(files_tool, tree):
    status, result = await files_tool(
        {"action": "read", "path": "notes.txt", "start_line": 3, "end_line": 5}
    )

    assert status == 200
    details = result["details"]
    assert details["content"] == "line 3\nline 4\nline 5\n"
    assert details["hash"] == sha((tree / "notes.txt").read_bytes())
    assert (details["totalLines"], details["startLine"], details["endLine"]) == (100, 3, 5)
    assert details["truncated"] is False
    assert details["hash"] in result["text"] and "line 4" in result["text"]


async def test_a_read_past_its_budget_stops_at_a_line_and_says_where_to_continue(files_tool, tree):
    status, result = await files_tool({"action": "read", "path": "notes.txt", "max_chars": 50})

    assert status == 200
    assert result["details"]["content"] == "".join(f"line {n}\n" for n in range(1, 8))
    assert result["details"]["truncated"] is True
    assert "Continue with start_line=8" in result["text"]
    status, result = await files_tool({"action": "read", "path": "notes.txt", "start_line": 101})
    assert status == 400 and "past the end" in result["message"]


async def test_a_line_longer_than_the_budget_is_cut_and_said_so(files_tool, jp_root_dir):
    (jp_root_dir / "wide.txt").write_text("x" * 500 + "\nnext\n")

    status, result = await files_tool({"action": "read", "path": "wide.txt", "max_chars": 100})

    assert status == 200 and result["details"]["content"] == "x" * 100
    assert "longer than the 100 character budget" in result["text"]
    assert "start_line=2" in result["text"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_binary_file_is_refused_with_its_size_and_type(files_tool, tree):
    (tree / "zeros.txt").write_bytes(b"abc\x00def")

    status, result = await files_tool({"action": "read", "path": "logo.png"})

    assert status == 422 and result["reason"] == "binary_file"
    assert f"{len(PNG)} bytes" in result["message"] and "image/png" in result["message"]
    assert result["details"]["size"] == len(PNG)
    assert result["details"]["mimetype"] == "image/png"
    status, result = await files_tool({"action": "read", "path": "zeros.txt"})
    assert status == 422 and result["reason"] == "binary_file"


async def test_a_folder_or_a_missing_file_cannot_be_read(files_tool, tree):
    status, result = await files_tool({"action": "read", "path": "src"})
    assert status == 400 and "is a folder" in result["message"]
    status, result = await files_tool({"action": "read", "path": "nope.txt"})
    assert status == 404 and result["message"] == "Not found: nope.txt"
    status, result = await files_tool({"action": "list", "path": "README.md"})
    assert status == 400 and "not a folder" in result["message"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_write_creates_a_file_and_its_folders_but_never_replaces_without_a_hash(
    files_tool, tree
):
    status, result = await files_tool(
        {"action": "write", "path": "new/deep/a.txt", "content": "hello\n"}
    )

    assert status == 200
    assert (tree / "new" / "deep" / "a.txt").read_text() == "hello\n"
    assert result["details"]["created"] is True
    assert result["details"]["hash"] == sha(b"hello\n")
    assert result["details"]["createdFolders"] == ["new", "new/deep"]
    status, result = await files_tool({"action": "write", "path": "README.md", "content": "x"})
    assert status == 409 and result["reason"] == "file_exists"
    assert result["details"]["content"] == "# Project\nRun main.\n"
    assert (tree / "README.md").read_text() == "# Project\nRun main.\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_write_replaces_a_file_still_as_read_and_refuses_a_stale_hash(files_tool, tree):
    _, read = await files_tool({"action": "read", "path": "README.md"})
    read_hash = read["details"]["hash"]

    body = {"action": "write", "path": "README.md", "expected_hash": read_hash}
    status, result = await files_tool({**body, "content": "# New\n"})
    assert status == 200 and result["details"]["created"] is False
    assert result["details"]["previousHash"] == read_hash
    assert (tree / "README.md").read_text() == "# New\n"

    status, result = await files_tool({**body, "content": "# Stale\n"})  # the old hash again
    assert status == 409 and result["reason"] == "stale_file"
    new_hash = sha(b"# New\n")
    assert f"expected hash {read_hash}, found {new_hash}" in result["message"]
    assert result["details"]["hash"] == new_hash
    assert result["details"]["content"] == "# New\n"
    assert (tree / "README.md").read_text() == "# New\n"  # nothing written


async def test_two_writes_from_the_same_read_one_wins_the_other_is_stale(files_tool, tree):
    _, read = await files_tool({"action": "read", "path": "README.md"})
    body = {"action": "write", "path": "README.md", "expected_hash": read["details"]["hash"]}

    answers = await asyncio.gather(
        files_tool({**body, "content": "first\n"}), files_tool({**body, "content": "second\n"})
    )

    assert sorted(status for status, _ in answers) == [200, 409]
    winner = next(result for status, result in answers if status == 200)
    assert sha((tree / "README.md").read_bytes()) == winner["details"]["hash"]


async def test_write_with_old_content_replaces_its_one_occurrence(files_tool, tree):
    path = tree / "src" / "app.py"
    body = {"action": "write", "path": "src/app.py"}

    status, result = await files_tool({**body, "old_content": "return 42", "content": "return 7"})
    assert status == 200
    assert path.read_text() == "import os\n\ndef main():\n    return 7\n"

    status, result = await files_tool({**body, "old_content": "return 42", "content": "x"})
    assert status == 409 and result["reason"] == "stale_file"
    assert result["message"] == "old_content not found in src/app.py"
    status, result = await files_tool({**body, "old_content": "\n", "content": ""})
    assert status == 400 and result["message"] == "old_content occurs 4 times in src/app.py"
    status, result = await files_tool(
        {**body, "old_content": "x", "content": "y", "path": "absent.py"}
    )
    assert status == 404
    assert path.read_text() == "import os\n\ndef main():\n    return 7\n"
    assert not (tree / "absent.py").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_mkdir_rename_and_delete(files_tool, tree):
    status, result = await files_tool({"action": "mkdir", "path": "out/plots"})
    assert status == 200 and result["details"]["createdFolders"] == ["out", "out/plots"]
    assert (tree / "out" / "plots").is_dir()
    status, result = await files_tool({"action": "mkdir", "path": "out"})
    assert status == 200 and result["details"]["created"] is False
    status, result = await files_tool({"action": "mkdir", "path": "README.md"})
    assert status == 409

    status, result = await files_tool(
        {"action": "rename", "path": "src/util.py", "new_path": "lib/tools.py"}
    )
    assert status == 200 and result["details"]["newPath"] == "lib/tools.py"
    assert (tree / "lib" / "tools.py").read_text().startswith("def helper")
    assert not (tree / "src" / "util.py").exists()
    status, result = await files_tool(
        {"action": "rename", "path": "lib/tools.py", "new_path": "README.md"}
    )
    assert status == 409 and result["reason"] == "exists"
    assert (tree / "README.md").read_text().startswith("# Project")

    status, result = await files_tool({"action": "delete", "path": "README.md"})
    assert status == 400 and "expected_hash is required" in result["message"]
    status, result = await files_tool(
        {"action": "delete", "path": "README.md", "expected_hash": "0" * 16}
    )
    assert status == 409 and result["reason"] == "stale_file"
    assert (tree / "README.md").exists()
    readme_hash = sha((tree / "README.md").read_bytes())
    status, result = await files_tool(
        {"action": "delete", "path": "README.md", "expected_hash": readme_hash}
    )
    assert status == 200 and not (tree / "README.md").exists()

    status, result = await files_tool({"action": "delete", "path": "out"})
    assert status == 409 and result["reason"] == "folder_not_empty"
    assert result["details"]["names"] == ["plots"]
    assert (tree / "out" / "plots").is_dir()
    status, result = await files_tool({"action": "delete", "path": "out/plots"})
    assert status == 200 and not (tree / "out" / "plots").exists()


async def test_a_binary_file_is_deleted_or_renamed_with_the_hash_its_refusal_gave(files_tool, tree):
    _, refused = await files_tool({"action": "read", "path": "logo.png"})
    png_hash = refused["details"]["hash"]
    assert png_hash == sha(PNG)

    status, _ = await files_tool(
        {
            "action": "rename",
            "path": "logo.png",
            "new_path": "img/logo.png",
            "expected_hash": png_hash,
        }
    )
    assert status == 200
    status, _ = await files_tool(
        {"action": "delete", "path": "img/logo.png", "expected_hash": png_hash}
    )
    assert status == 200 and not (tree / "img" / "logo.png").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_search_finds_literal_and_regex_matches_in_text_files(files_tool, tree):
    status, result = await files_tool({"action": "search", "pattern": "main"})

    assert status == 200
    found = [(m["path"], m["line"]) for m in result["details"]["matches"]]
    assert found == [("README.md", 2), ("src/app.py", 3), ("src/util.py", 2)]
    assert result["details"]["skippedBinary"] == 1  # logo.png
    assert "src/app.py:3: def main():" in result["text"]

    status, result = await files_tool(
        {"action": "search", "pattern": r"^def \w+\(", "regex": True, "glob": "*.py"}
    )
    assert status == 200
    assert [m["text"] for m in result["details"]["matches"]] == ["def main():", "def helper():"]
    status, result = await files_tool({"action": "search", "path": "src", "pattern": "zzz"})
    assert status == 200 and result["details"]["matches"] == []
    assert result["text"].startswith("No match for text 'zzz' under src")


async def test_search_is_bounded_by_limit_and_max_files(files_tool, tree):
    status, result = await files_tool({"action": "search", "pattern": "line", "limit": 5})
    assert status == 200 and len(result["details"]["matches"]) == 5
    assert result["details"]["truncated"] is True
    assert "Search stopped after 5 matching lines found (limit)" in result["text"]

    status, result = await files_tool({"action": "search", "pattern": "e", "max_files": 2})
    assert status == 200 and result["details"]["filesSearched"] == 2
    assert "2 files read (max_files)" in result["details"]["stoppedAfter"]


@pytest.mark.slow
async def test_a_runaway_regex_is_stopped_and_a_bad_one_refused(files_tool, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("a" * 40 + "!\n")

    started = time.monotonic()
    status, result = await files_tool({"action": "search", "pattern": "(a+)+$", "regex": True})
    assert status == 400 and "backtracks too much" in result["message"]
    assert time.monotonic() - started < 30
    status, result = await files_tool({"action": "search", "pattern": "(", "regex": True})
    assert status == 400 and result["message"].startswith("Invalid regex:")


async def test_edge_cases_of_paths_and_files(files_tool, tree):
    (tree / "empty.txt").write_text("")
    status, result = await files_tool({"action": "read", "path": "empty.txt"})
    assert status == 200 and result["details"]["content"] == ""
    assert result["details"]["totalLines"] == 0 and result["details"]["hash"] == sha(b"")

    status, result = await files_tool({"action": "search", "path": "src/app.py", "pattern": "os"})
    assert [(m["path"], m["line"]) for m in result["details"]["matches"]] == [("src/app.py", 1)]
    status, result = await files_tool({"action": "search", "pattern": "main", "glob": "src/*"})
    assert {m["path"] for m in result["details"]["matches"]} == {"src/app.py", "src/util.py"}

    status, result = await files_tool({"action": "rename", "path": "src", "new_path": "src/in"})
    assert status == 400 and "into itself" in result["message"]
    status, result = await files_tool({"action": "delete", "path": "/", "expected_hash": "0" * 16})
    assert status == 403
    status, result = await files_tool({"action": "read", "path": "x" * 256})
    assert status == 400 and "longer than 255 bytes" in result["message"]
    status, result = await files_tool({"action": "read", "path": str(tree / "README.md")})
    assert status == 200 and result["details"]["path"] == "README.md"  # absolute inside: fine
    assert (tree / "src" / "app.py").exists()


# -- the root and hidden files ---------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_paths_outside_the_root_are_refused(files_tool, tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret\n")
    for body in (
        {"action": "read", "path": "../secret.txt"},
        {"action": "read", "path": "src/../../secret.txt"},
        {"action": "read", "path": str(outside / "secret.txt")},
        {"action": "list", "path": ".."},
        {"action": "write", "path": "../x.txt", "content": "x"},
        {"action": "mkdir", "path": str(outside / "d")},
        {"action": "rename", "path": "README.md", "new_path": "../README.md"},
        {"action": "search", "path": "..", "pattern": "secret"},
    ):
        status, result = await files_tool(body)
        assert status == 403, (body, result)
        assert "outside the contents root" in result["message"]
        assert str(outside) not in result["message"] or body["action"] != "rename"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (tree / "README.md").exists()


async def test_a_symlink_out_of_the_root_is_neither_followed_nor_searched(
    files_tool, tree, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret main\n")
    os.symlink(outside / "secret.txt", tree / "link.txt")
    os.symlink(outside, tree / "linked")

    for body in (
        {"action": "read", "path": "link.txt"},
        {"action": "read", "path": "linked/secret.txt"},
        {"action": "list", "path": "linked"},
        {"action": "write", "path": "link.txt", "content": "x", "expected_hash": "0" * 16},
        {"action": "write", "path": "linked/new.txt", "content": "x"},
    ):
        status, result = await files_tool(body)
        assert status == 403, (body, result)
    status, result = await files_tool({"action": "search", "pattern": "secret"})
    assert status == 200 and result["details"]["matches"] == []
    assert (outside / "secret.txt").read_text() == "secret main\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.fixture
def hidden(tree):
    (tree / ".env").write_text("TOKEN=main\n")
    (tree / ".cache").mkdir()
    (tree / ".cache" / "data.txt").write_text("main\n")
    return tree


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_hidden_files_are_out_of_reach_while_the_server_hides_them(files_tool, hidden):
    _, listed = await files_tool({"action": "list"})
    assert not any(e["name"].startswith(".") for e in listed["details"]["entries"])
    _, found = await files_tool({"action": "search", "pattern": "main"})
    assert all(not m["path"].startswith(".") for m in found["details"]["matches"])

    for body in (
        {"action": "read", "path": ".env"},
        {"action": "read", "path": ".cache/data.txt"},
        {"action": "list", "path": ".cache"},
        {"action": "delete", "path": ".env", "expected_hash": sha(b"TOKEN=main\n")},
        {"action": "rename", "path": ".env", "new_path": "env.txt"},
    ):
        status, result = await files_tool(body)
        assert status == 404, (body, result)
    for body in (
        {"action": "write", "path": ".env", "content": "x", "expected_hash": sha(b"TOKEN=main\n")},
        {"action": "write", "path": ".new", "content": "x"},
        {"action": "mkdir", "path": ".git"},
        {"action": "rename", "path": "README.md", "new_path": ".README.md"},
    ):
        status, result = await files_tool(body)
        assert status == 403, (body, result)
        assert "allow_hidden" in result["message"]
    assert (hidden / ".env").read_text() == "TOKEN=main\n"
    assert not (hidden / ".new").exists() and not (hidden / ".git").exists()
    assert (hidden / "README.md").exists()


class TestAllowingHiddenFiles:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ContentsManager.allow_hidden = True
        return config

    async def test_hidden_files_are_listed_read_written_and_searched(self, files_tool, hidden):
        _, listed = await files_tool({"action": "list"})
        assert {".env", ".cache"} <= {e["name"] for e in listed["details"]["entries"]}
        status, read = await files_tool({"action": "read", "path": ".env"})
        assert status == 200 and read["details"]["content"] == "TOKEN=main\n"
        status, _ = await files_tool(
            {
                "action": "write",
                "path": ".env",
                "content": "T=1\n",
                "expected_hash": read["details"]["hash"],
            }
        )
        assert status == 200 and (hidden / ".env").read_text() == "T=1\n"
        _, found = await files_tool({"action": "search", "pattern": "main"})
        assert ".cache/data.txt" in {m["path"] for m in found["details"]["matches"]}


# -- bad bodies and authorization ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "action is required"),
        ({"action": "explode"}, "Invalid action: explode"),
        ({"action": "read"}, "path is required for read action"),
        ({"action": "read", "path": "a", "colour": 1}, "Unknown field: colour"),
        ({"action": "read", "path": "a", "content": "x"}, "Field content is not accepted"),
        ({"action": "read", "path": 3}, "path must be a string, got integer: 3"),
        ({"action": "read", "path": "a", "start_line": 1.5}, "start_line must be an integer"),
        ({"action": "read", "path": "a", "start_line": 0}, "start_line must be at least 1"),
        ({"action": "read", "path": "a", "start_line": 5, "end_line": 2}, "end_line (2) is"),
        ({"action": "write", "path": "a"}, "content is required for write action"),
        ({"action": "write", "path": "a", "content": "x", "expected_hash": "x"}, "expected_hash"),
        ({"action": "write", "path": "a", "content": "", "old_content": ""}, "old_content must"),
        ({"action": "rename", "path": "a"}, "new_path is required for rename action"),
        ({"action": "search"}, "pattern is required for search action"),
        ({"action": "search", "pattern": "a", "regex": "yes"}, "regex must be a boolean"),
        ({"action": "list", "path": "a\x00b"}, "Path contains a NUL character"),
    ],
)
async def test_a_bad_body_is_a_400_saying_why(files_tool, tree, body, message):
    status, result = await files_tool(body)

    assert status == 400
    assert message in result["message"], result


async def test_a_body_that_is_not_a_json_object_is_a_400(files_tool):
    for raw in (b"", b"not json", b"[1]", b'{"action": NaN}'):
        status, _ = await files_tool(None, raw=raw)
        assert status == 400


async def test_null_fields_are_not_given(files_tool, tree):
    status, result = await files_tool(
        {"action": "read", "path": "README.md", "start_line": None, "content": None}
    )
    assert status == 200 and result["details"]["startLine"] == 1


class TestDenyingWrites:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_changes_are_forbidden_and_reads_allowed(self, files_tool, tree):
        for body in (
            {"action": "write", "path": "n.txt", "content": "x"},
            {"action": "mkdir", "path": "d"},
            {"action": "rename", "path": "README.md", "new_path": "R.md"},
            {"action": "delete", "path": "README.md", "expected_hash": "0" * 16},
        ):
            status, result = await files_tool(body)
            assert status == 403
            assert result["message"] == "User is not authorized to write on resource: contents."
        assert not (tree / "n.txt").exists() and not (tree / "d").exists()
        assert (tree / "README.md").exists()
        status, _ = await files_tool({"action": "read", "path": "README.md"})
        assert status == 200
        status, _ = await files_tool({"action": "search", "pattern": "main"})
        assert status == 200


class TestDenyingEverything:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyAllAuthorizer"
        return config

    async def test_even_a_list_is_forbidden(self, files_tool, tree):
        status, _ = await files_tool({"action": "list"})
        assert status == 403


async def test_a_request_without_a_token_is_refused(files_tool, tree):
    status, _ = await files_tool({"action": "list"}, headers={"Authorization": ""})
    assert status in (401, 403)


# -- a contents manager that is not the disk -------------------------------------------------


@pytest.mark.filterwarnings("ignore:The synchronous ContentsManager:DeprecationWarning")
class TestContentsNotOnDisk:
    """Every action through a contents manager keeping files in memory, selected by config.

    A synchronous one (the server's default, used by the other tests, is asynchronous).
    """

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = (
            "tests.support.memory_contents.MemoryContentsManager"
        )
        return config

    @pytest.mark.parametrize("transport", TRANSPORTS)
    async def test_every_action_works_and_nothing_reaches_the_disk(
        self, files_tool, jp_serverapp, jp_root_dir
    ):
        cm = jp_serverapp.contents_manager
        assert type(cm).__name__ == "MemoryContentsManager"
        before = sorted(p.name for p in jp_root_dir.iterdir())

        status, result = await files_tool(
            {"action": "write", "path": "pkg/mod.py", "content": "def main():\n    pass\n"}
        )
        assert status == 200 and result["details"]["createdFolders"] == ["pkg"]
        assert cm.files["pkg/mod.py"] == b"def main():\n    pass\n"
        status, result = await files_tool({"action": "mkdir", "path": "empty"})
        assert status == 200 and "empty" in cm.folders

        _, listed = await files_tool({"action": "list"})
        assert [e["name"] for e in listed["details"]["entries"]] == ["empty", "pkg"]
        status, read = await files_tool({"action": "read", "path": "pkg/mod.py", "start_line": 2})
        assert status == 200 and read["details"]["content"] == "    pass\n"
        file_hash = read["details"]["hash"]
        assert file_hash == sha(b"def main():\n    pass\n")

        status, _ = await files_tool(
            {"action": "write", "path": "pkg/mod.py", "content": "x", "expected_hash": "1" * 16}
        )
        assert status == 409 and cm.files["pkg/mod.py"] == b"def main():\n    pass\n"
        status, written = await files_tool(
            {"action": "write", "path": "pkg/mod.py", "old_content": "pass", "content": "return 1"}
        )
        assert status == 200 and cm.files["pkg/mod.py"] == b"def main():\n    return 1\n"

        status, found = await files_tool(
            {"action": "search", "pattern": r"return \d", "regex": True}
        )
        assert status == 200
        assert [(m["path"], m["line"]) for m in found["details"]["matches"]] == [("pkg/mod.py", 2)]

        status, _ = await files_tool({"action": "rename", "path": "pkg", "new_path": "lib"})
        assert status == 200 and "lib/mod.py" in cm.files and "pkg/mod.py" not in cm.files
        status, _ = await files_tool(
            {"action": "delete", "path": "lib/mod.py", "expected_hash": written["details"]["hash"]}
        )
        assert status == 200 and "lib/mod.py" not in cm.files
        status, _ = await files_tool({"action": "delete", "path": "empty"})
        assert status == 200 and "empty" not in cm.folders

        cm.files["blob.bin"] = b"\xff\xfe\x00\x01"
        cm.modified["blob.bin"] = cm.modified[""]
        status, refused = await files_tool({"action": "read", "path": "blob.bin"})
        assert status == 422 and refused["details"]["size"] == 4
        assert sorted(p.name for p in jp_root_dir.iterdir()) == before

    async def test_the_hidden_rule_and_the_root_hold_there_too(self, files_tool, jp_serverapp):
        cm = jp_serverapp.contents_manager
        cm.files[".secret"] = b"main\n"
        cm.modified[".secret"] = cm.modified[""]

        status, _ = await files_tool({"action": "read", "path": ".secret"})
        assert status == 404
        status, _ = await files_tool({"action": "write", "path": ".other", "content": "x"})
        assert status == 403 and ".other" not in cm.files
        status, _ = await files_tool({"action": "read", "path": "../x"})
        assert status == 403
        _, found = await files_tool({"action": "search", "pattern": "main"})
        assert found["details"]["matches"] == []

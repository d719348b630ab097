"""The MCP Inspector's CLI (``@modelcontextprotocol/inspector --cli``) against a live server.

The Inspector builds each argument from the tool's input schema (``--tool-arg key=value``), so
it sends ``cell_index=1`` as an integer, ``reset=true`` as a boolean and ``cells=[...]`` as an
array only because the schemas use one plain type per property. ``XCSH_MCP_INSPECTOR`` names
the installed launcher (``scripts/check.sh`` installs it from npm); without it these tests are
skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not os.environ.get("XCSH_MCP_INSPECTOR"),
        reason="XCSH_MCP_INSPECTOR (the Inspector's mcp-inspector launcher) is not set",
    ),
]


async def inspector(mcp_url: str, headers: dict[str, str], home: Any, *args: str) -> Any:
    """Run the Inspector CLI once with ``args``; its JSON output (a failure fails the test)."""
    header = [f"{name}: {value}" for name, value in headers.items()]
    process = await asyncio.create_subprocess_exec(
        os.environ["XCSH_MCP_INSPECTOR"],
        "--cli",
        mcp_url,
        "--transport",
        "http",
        "--header",
        *header,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(home)},  # its catalog and storage stay in the test's
    )
    out, err = await asyncio.wait_for(process.communicate(), 180)
    assert process.returncode == 0, (out.decode(), err.decode())
    return json.loads(out)


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": "# Title"},
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "b2",
            "metadata": {},
            "outputs": [],
            "source": "x = 1",
        },
        {"cell_type": "markdown", "id": "c3", "metadata": {}, "source": "end"},
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


async def test_integer_boolean_and_array_arguments_arrive_typed(
    mcp_url, jp_auth_header, jp_root_dir, tmp_path
):
    (jp_root_dir / "a.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    home = tmp_path / "inspector-home"
    home.mkdir()

    listed = await inspector(mcp_url, jp_auth_header, home, "--method", "tools/list")
    assert {"notebook", "python", "artifact"} <= {tool["name"] for tool in listed["tools"]}

    # Integers: cell_index and end_index.
    read = await inspector(
        mcp_url,
        jp_auth_header,
        home,
        "--method",
        "tools/call",
        "--tool-name",
        "notebook",
        "--tool-arg",
        "action=read",
        "notebook_path=a.ipynb",
        "cell_index=1",
        "end_index=2",
    )
    assert read.get("isError") is not True, read
    details = read["structuredContent"]["details"]
    assert (details["startIndex"], details["endIndex"]) == (1, 2)
    assert [cell["cellId"] for cell in details["cells"]] == ["b2"]

    # An array (cells) and a boolean (reset), with an integer (timeout).
    run = await inspector(
        mcp_url,
        jp_auth_header,
        home,
        "--method",
        "tools/call",
        "--tool-name",
        "python",
        "--tool-arg",
        'cells=[{"code": "print(6 * 7)"}]',
        "reset=true",
        "timeout=120",
    )
    assert run["structuredContent"]["isError"] is False, run
    assert run["content"][0]["text"] == "42"

    # A boolean that the tool checks strictly: regex=true (a string "true" would be refused).
    found = await inspector(
        mcp_url,
        jp_auth_header,
        home,
        "--method",
        "tools/call",
        "--tool-name",
        "notebook",
        "--tool-arg",
        "action=find",
        "notebook_path=a.ipynb",
        "pattern=^x = \\d$",
        "regex=true",
    )
    assert found.get("isError") is not True, found
    assert [m["cellId"] for m in found["structuredContent"]["details"]["matches"]] == ["b2"]

    resources = await inspector(mcp_url, jp_auth_header, home, "--method", "resources/list")
    assert [r["uri"] for r in resources["resources"]] == ["notebook:///a.ipynb"]

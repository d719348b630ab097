"""Count the extension's modules one real call crosses (docs/developers/architecture.md's walks).

Starts a real Jupyter Server with the extension (the test suite's fixtures), makes one MCP
``python`` call and one REST notebook ``edit``, each twice (the first starts the session's
kernel or loads the notebook; the second is the steady case), and lists, for each, the distinct
``jupyter_xcsh`` modules the server entered while it answered: a profile hook
(``sys.setprofile`` and ``threading.setprofile``, installed before the server starts so every
thread it makes is seen) notes the module of every Python function called or resumed between
sending the request and receiving the answer. Background work that happens to run in that
window (a pool timer, the activity history's writer) is counted too: the figures are an upper
bound of the call's own path.

Run from the repository root with the test environment installed::

    .venv/bin/python scripts/module_walk.py            # counts
    .venv/bin/python scripts/module_walk.py --list     # and the modules, in order of entry

The script only measures; it changes nothing. To compare with an older commit, run this same
file with that commit's tree first on ``PYTHONPATH`` (and its ``tests/`` as the fixtures).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "jupyter_xcsh"
RESULTS = os.environ.get("MODULE_WALK_OUT", "")

_recording = False
_seen: dict[str, None] = {}


def _profile(frame: Any, event: str, arg: Any) -> None:
    if _recording and event == "call":
        name = frame.f_globals.get("__name__", "")
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            _seen.setdefault(name, None)


def _start() -> None:
    global _recording
    _seen.clear()
    _recording = True


def _stop() -> list[str]:
    global _recording
    _recording = False
    return list(_seen)


walks: dict[str, list[str]] = {}


async def _measured(name: str, call: Any) -> Any:
    # pytest imports this file as a module of its own: the hook and the counts are the
    # script's (``__main__``'s).
    script = sys.modules["__main__"]
    script._start()
    try:
        return await call()
    finally:
        script.walks[name] = script._stop()


@pytest.fixture
def jp_server_config(jp_server_config: Any) -> Any:
    """The test server, with the extension enabled (as ``tests/conftest.py`` does)."""
    from traitlets.config import Config

    config = Config(jp_server_config)
    config.ServerApp.jpserver_extensions = {"jupyter_xcsh": True}
    return config


async def test_walks(jp_fetch: Any, jp_root_dir: Path) -> None:
    """One MCP python call and one REST notebook edit, each cold then warm."""
    from nbformat import v4, writes

    from tests.support.mcp_client import VERSION

    async def mcp_python() -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "python", "arguments": {"cells": [{"code": "print(6 * 7)"}]}},
        }
        response = await jp_fetch(
            "api",
            "xcsh",
            "mcp",
            method="POST",
            body=json.dumps(body),
            headers={"MCP-Protocol-Version": VERSION, "Accept": "application/json"},
            request_timeout=180,
        )
        answer = json.loads(response.body)
        assert "42" in json.dumps(answer["result"]), answer
        return answer

    nb = v4.new_notebook(cells=[v4.new_code_cell("x = 1", id="c0")])
    (jp_root_dir / "a.ipynb").write_text(writes(nb), encoding="utf-8")

    async def rest_edit(source: str) -> Any:
        body = {"action": "edit", "notebook_path": "a.ipynb", "cell_id": "c0", "content": source}
        response = await jp_fetch(
            "api", "xcsh", "notebook", method="POST", body=json.dumps(body), request_timeout=60
        )
        assert response.code == 200
        return json.loads(response.body)

    await _measured("MCP python call, first (starts the session's kernel)", mcp_python)
    await _measured("MCP python call", mcp_python)
    await _measured("REST notebook edit, first (loads the notebook)", lambda: rest_edit("x = 2"))
    await _measured("REST notebook edit", lambda: rest_edit("x = 3"))


def main() -> int:
    """Run the walks in a test server and print the counts (``--list``: and the modules)."""
    sys.path.insert(0, str(ROOT))
    threading.setprofile(_profile)
    sys.setprofile(_profile)
    args = [
        __file__,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "pytest_jupyter.jupyter_server",
        "--rootdir",
        str(ROOT),
        "-o",
        "addopts=",
    ]
    code = pytest.main(args)
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
    if code != 0:
        return int(code)
    for name, modules in walks.items():
        print(f"{len(modules):3d}  {name}")
        if "--list" in sys.argv:
            for module in modules:
                print(f"       {module}")
    if RESULTS:
        Path(RESULTS).write_text(json.dumps(walks, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: this project beside its peers, in one run on one Jupyter Server.

Usage (its own environment: the peers newest from PyPI)::

    python3 -m venv .venv-peers
    SKIP_JUPYTER_BUILDER=1 .venv-peers/bin/pip install -e . jupyter-mcp-server \\
        jupyter-server-nbmodel mcp
    .venv-peers/bin/python bench/peers.py [--rounds 60] [--cells 500,2000] [--block 10] [--warm 3]

(about 5 minutes at the defaults on a loaded 2-core machine, 10 with ``--rounds 100``). Exits
with status 2 and says what to install when a peer or the MCP SDK is missing.

Starts one Jupyter Server (127.0.0.1, a free port) with jupyter_xcsh, jupyter_mcp_server (in
extension mode: its ``/mcp`` endpoint) and jupyter_server_nbmodel loaded together, and runs the
same workload on each, the paths of each workload interleaved in blocks so all see the same
machine load:

- ``pass`` and a 1 MB print (1 KiB lines): jupyter-mcp-server's ``execute_code`` on a kernel
  of the server, jupyter-server-nbmodel's ``POST /api/kernels/<id>/execute`` then ``GET`` of
  its request until done, and this project's python tool over MCP and over REST;
- insert, edit (the whole source of one cell) and read (one cell, with its outputs) on
  notebooks of 500 and 2,000 cells (~10 KB each: stream and image outputs; each side its own
  copy of the file; ``jupyter_server_ydoc``, which jupyter-mcp-server's dependencies install,
  is turned off, so both sides edit files): jupyter-mcp-server's ``insert_cell``,
  ``overwrite_cell_source`` and ``read_cell`` against this project's notebook tool over MCP
  and over REST (jupyter-server-nbmodel has no notebook tools).

Both MCP sides are called with the official MCP SDK client (``mcp``, streamable HTTP), so the
client's cost is the same on both. Prints p50 / p95 per path, the ratio of each peer's p50 /
p95 to this project's over MCP (theirs / ours), and the characters the agent received per
call. Checks the work was done: each print's answer holds the whole output (or says where it
went), and after the edit and insert rounds each side's file is read back from disk.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute import NbmodelClient, Server, percentiles, print_code
from notebook_edit import build_notebook

#: What must be installed besides this project (the module each package provides).
PEERS = {
    "jupyter-mcp-server": "jupyter_mcp_server",
    "jupyter-server-nbmodel": "jupyter_server_nbmodel",
    "mcp": "mcp",
}
SETUP = (
    "python3 -m venv .venv-peers && SKIP_JUPYTER_BUILDER=1 .venv-peers/bin/pip install -e . "
    "jupyter-mcp-server jupyter-server-nbmodel mcp, then .venv-peers/bin/python bench/peers.py"
)
OURS = "xcsh MCP"


def missing_peers() -> list[str]:
    """The packages this benchmark needs that are not installed here."""
    return [name for name, module in PEERS.items() if importlib.util.find_spec(module) is None]


def version(package: str) -> str:
    """The installed version of ``package``."""
    from importlib.metadata import version as installed

    return installed(package)


@dataclass
class Timed:
    """One way of doing one operation: its timed call and what the agent received."""

    call: Callable[[], Awaitable[Received]]
    times: list[float] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)


async def interleave(paths: dict[str, Timed], rounds: int, block: int, warm: int) -> None:
    """Run each path ``warm`` times, then ``rounds`` times in blocks of ``block``, in turn."""
    for path in paths.values():
        for _ in range(warm):
            await path.call()
    for _ in range(max(1, rounds // block)):
        for path in paths.values():
            for _ in range(block):
                t = time.perf_counter()
                received = await path.call()
                path.times.append((time.perf_counter() - t) * 1000)
                path.received.append(received)


def table(title: str, paths: dict[str, Timed]) -> list[str]:
    """The lines of one operation's table: p50, p95, ratios to ours over MCP, what came back."""
    ours_p50, ours_p95 = percentiles(paths[OURS].times)
    lines = [title]
    for name, path in paths.items():
        p50, p95 = percentiles(path.times)
        text = max(r.text for r in path.received)
        answer = max(r.answer for r in path.received)
        lines.append(
            f"  {name:<38} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms"
            f"  {p50 / ours_p50:6.2f}x {p95 / ours_p95:6.2f}x  text {text:>9,}  answer {answer:>9,}"
        )
    return lines


def text_of(result: Any) -> str:
    """The text contents of an SDK ``CallToolResult`` (what an agent's model reads)."""
    return "".join(getattr(c, "text", "") for c in result.content)


@dataclass(frozen=True)
class Received:
    """What one call gave the agent: the text its model reads, the whole answer (characters)."""

    text: int
    answer: int


def received(result: Any) -> Received:
    """What an SDK ``CallToolResult`` carries: its text contents, and all of it as JSON."""
    answer = result.model_dump_json(by_alias=True, exclude_none=True)
    return Received(len(text_of(result)), len(answer))


def ready_kernel(server: Server) -> str:
    """Start a kernel through the server's REST API and wait until the server reports it idle.

    The server learns the state from the kernel's status messages, and may have missed the
    first ones (its IOPub socket still connecting): each try asks for another (``kernel_info``).
    """
    kernel_id = server.new_kernel()
    client = server.raw_client(kernel_id)  # waits for a kernel_info reply
    try:
        end = time.monotonic() + 60
        while True:
            time.sleep(0.2)
            kernel = server.request("GET", f"/api/kernels/{kernel_id}")
            assert isinstance(kernel, dict)
            if kernel["execution_state"] == "idle":
                return kernel_id
            if time.monotonic() > end:
                raise RuntimeError(f"kernel {kernel_id} not idle: {kernel['execution_state']}")
            client.kernel_info(reply=True, timeout=30)
    finally:
        client.stop_channels()


class Sides:
    """The clients of every side, on one server."""

    def __init__(self, server: Server, theirs: Any, ours: Any) -> None:
        self.server = server
        self.theirs = theirs
        self.ours = ours
        self.root = Path(server.tmp.name) / "root"

    async def call(self, client: Any, name: str, arguments: dict[str, Any]) -> Any:
        """One ``tools/call`` through the SDK client; fails on an error result."""
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, text_of(result)[:2000])
        return result

    def rest(self, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], Received]:
        """One REST call of this project over the server's keep-alive connection."""
        conn = self.server.conn
        conn.request("POST", path, body=json.dumps(body), headers=self.server.headers)
        response = conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw[:2000]
        answer = dict(json.loads(raw))
        return answer, Received(len(answer["text"]), len(raw))


def execution_paths(
    sides: Sides, kernels: tuple[str, NbmodelClient], code: str, expect: int
) -> dict[str, Timed]:
    """``code`` run on each side; each answer must account for its ``expect`` output bytes.

    ``kernels``: jupyter-mcp-server's kernel, and nbmodel's client on a kernel of its own.
    """
    theirs_kernel, nbmodel = kernels
    xs = expect // 1024 * 1023  # the printed lines are x's

    async def theirs() -> Received:
        arguments = {"code": code, "kernel_id": theirs_kernel, "timeout": 600}
        result = await sides.call(sides.theirs, "execute_code", arguments)
        assert text_of(result).count("x") >= xs, len(text_of(result))  # all of it, inline
        return received(result)

    async def by_nbmodel() -> Received:
        result = nbmodel.execute(code)
        assert result["status"] == "ok", result
        outputs = result.get("outputs", [])
        outputs = json.loads(outputs) if isinstance(outputs, str) else outputs  # a JSON string
        text = "".join(o.get("text", "") for o in outputs)
        assert text.count("x") == xs, len(text)
        return Received(len(text), len(json.dumps(result)))

    def check_ours(result: dict[str, Any]) -> None:
        # the whole output counted; past the text budget it is kept as an artifact
        assert not result.get("isError"), result["text"][:2000]
        assert result["totalBytes"] == expect, result["totalBytes"]

    async def ours_mcp() -> Received:
        result = await sides.call(sides.ours, "python", {"cells": [{"code": code}]})
        check_ours(result.structured_content)
        return received(result)

    async def ours_rest() -> Received:
        answer, got = sides.rest("/api/xcsh/python", {"cells": [{"code": code}]})
        check_ours(answer)
        return got

    return {
        "jupyter-mcp-server execute_code": Timed(theirs),
        "jupyter-server-nbmodel (POST + GET)": Timed(by_nbmodel),
        OURS: Timed(ours_mcp),
        "xcsh REST": Timed(ours_rest),
    }


@dataclass
class Copy:
    """One side's copy of a notebook, and what its rounds did to it."""

    path: str
    inserted: int = 0
    last_source: str = ""


async def notebook_paths(
    sides: Sides, cells: int
) -> tuple[dict[str, dict[str, Timed]], Callable[[], None]]:
    """Insert, edit and read on each side's copy of a ``cells``-cell notebook.

    Returns the paths by operation, and a check that reads each copy back once they ran.
    """
    text = build_notebook(cells)
    theirs, ours = Copy(f"theirs-{cells}.ipynb"), Copy(f"ours-{cells}.ipynb")
    for copy in (theirs, ours):
        (sides.root / copy.path).write_text(text)
    at = cells // 2  # inserts land here; the edited and the read cell are before it
    edited, read = at - 3, at - 1
    name = f"theirs-{cells}"
    await sides.call(
        sides.theirs, "use_notebook", {"notebook_name": name, "notebook_path": theirs.path}
    )
    counter = iter(range(10**9))

    def source(copy: Copy) -> str:
        copy.last_source = f"value = {next(counter)}\nprint(value)"
        return copy.last_source

    def check_read(text: str) -> None:
        assert f"compute({read})" in text, text[:2000]

    async def theirs_insert() -> Received:
        arguments = {"cell_index": at, "cell_type": "code", "cell_source": "inserted = 1"}
        result = await sides.call(sides.theirs, "insert_cell", {**arguments, "notebook_name": name})
        theirs.inserted += 1
        return received(result)

    async def theirs_edit() -> Received:
        arguments = {"cell_index": edited, "cell_source": source(theirs), "notebook_name": name}
        return received(await sides.call(sides.theirs, "overwrite_cell_source", arguments))

    async def theirs_read() -> Received:
        arguments = {"cell_index": read, "notebook_name": name}
        result = await sides.call(sides.theirs, "read_cell", arguments)
        check_read(text_of(result))
        return received(result)

    def body(action: str) -> dict[str, Any]:
        """Our notebook tool's arguments (the same over MCP and REST, on one copy)."""
        if action == "insert":
            ours.inserted += 1
            where = {"cell_index": at, "content": "inserted = 1"}
        elif action == "edit":
            where = {"cell_index": edited, "content": source(ours)}
        else:
            where = {"cell_index": read, "end_index": read + 1}
        return {"action": action, "notebook_path": ours.path, **where}

    def ours_mcp(action: str) -> Callable[[], Awaitable[Received]]:
        async def call() -> Received:
            result = await sides.call(sides.ours, "notebook", body(action))
            if action == "read":
                check_read(text_of(result))
            return received(result)

        return call

    def ours_rest(action: str) -> Callable[[], Awaitable[Received]]:
        async def call() -> Received:
            answer, got = sides.rest("/api/xcsh/notebook", body(action))
            if action == "read":
                check_read(answer["text"])
            return got

        return call

    tools = {
        "insert": ("insert_cell", theirs_insert),
        "edit": ("overwrite_cell_source", theirs_edit),
        "read": ("read_cell", theirs_read),
    }
    paths = {
        action: {
            f"jupyter-mcp-server {tool}": Timed(call),
            OURS: Timed(ours_mcp(action)),
            "xcsh REST": Timed(ours_rest(action)),
        }
        for action, (tool, call) in tools.items()
    }

    def check() -> None:
        for copy in (theirs, ours):
            nb = json.loads((sides.root / copy.path).read_text())
            assert len(nb["cells"]) == cells + copy.inserted, (copy.path, len(nb["cells"]))
            got = "".join(nb["cells"][edited]["source"])
            assert got == copy.last_source, (copy.path, got, copy.last_source)
            assert "".join(nb["cells"][at]["source"]) == "inserted = 1", copy.path

    return paths, check


async def run(args: argparse.Namespace) -> int:
    """Start the server, run every workload, print the tables."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server = Server(
        options=(
            "--ServerApp.jpserver_extensions=jupyter_mcp_server=True",
            "--ServerApp.jpserver_extensions=jupyter_server_ydoc=False",  # no rooms: files
        )
    )
    out: list[str] = [
        "versions: "
        + ", ".join(
            f"{p} {version(p)}"
            for p in ("jupyter-xcsh", "jupyter-mcp-server", "jupyter-server-nbmodel", "mcp")
        ),
        "columns: p50, p95, each over xcsh MCP's (theirs / ours), the characters of the text "
        "the agent's model reads and of the whole answer (largest of the rounds)",
    ]
    try:
        server.python("pass")  # the python tool's session kernel
        timeout = httpx2.Timeout(60, read=900)
        headers = {"Authorization": f"token {server.token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http_theirs,
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http_ours,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http_theirs)) as theirs,
            Client(
                streamable_http_client(f"{server.url}/api/xcsh/mcp", http_client=http_ours)
            ) as ours,
        ):
            sides = Sides(server, theirs, ours)
            kernels = ready_kernel(server), NbmodelClient(server, ready_kernel(server))
            print_1mb = print_code(1), 1024 * 1024
            workloads: list[tuple[str, dict[str, Timed], Callable[[], None] | None]] = [
                ("pass", execution_paths(sides, kernels, "pass", 0), None),
                ("1 MB print", execution_paths(sides, kernels, *print_1mb), None),
            ]
            for cells in args.cells:
                paths, check = await notebook_paths(sides, cells)
                for action, by_side in paths.items():
                    last = check if action == "read" else None
                    workloads.append((f"{action}, {cells} cells", by_side, last))
            for title, timed, check_ in workloads:
                started = time.monotonic()
                await interleave(timed, args.rounds, args.block, args.warm)
                if check_ is not None:
                    check_()
                lines = table(f"{title} ({time.monotonic() - started:.0f} s)", timed)
                print("\n".join(lines), file=sys.stderr, flush=True)  # progress
                out += lines
    finally:
        server.stop()
    load = os.getloadavg()
    out.append(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("\n".join(out))
    return 0


def main() -> int:
    """Parse the options, check the peers are installed, run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="timed calls per path")
    parser.add_argument("--block", type=int, default=10, help="calls per interleaved block")
    parser.add_argument("--warm", type=int, default=3, help="untimed calls per path first")
    parser.add_argument(
        "--cells",
        type=lambda s: [int(n) for n in s.split(",") if n],
        default=[500, 2000],
        help="sizes of the notebooks (comma-separated cell counts)",
    )
    args = parser.parse_args()
    missing = missing_peers()
    if missing:
        print(f"bench/peers.py needs {', '.join(missing)}: {SETUP}", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

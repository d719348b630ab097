"""Benchmark many agents at once: 8, 16 and 32 concurrent clients of one Jupyter Server.

Each agent is a client thread with its own keep-alive connection, its own python session and
its own notebook (50 cells, ~0.5 MB, its first cell ``pass``), calling back to back for a fixed
time, in turn: a python call, a notebook edit, a read, a find, a run in place of the ``pass``
cell, and an MCP ``tools/call`` of the python tool. Every level first warms its new agents
(their kernels start) and then measures: calls/s, p50/p99 per kind, errors, the server's RSS
(and its growth per agent session), the server's CPU time per call (whether the server's own work
per call grows with the load, or only the waiting) and the loop probe
(``loopprobe.py``: an idle probe of the same run is the floor).

    python bench/agents.py [--levels 8,16,32] [--seconds 60] [--long] [--option=--X.y=z ...]
                           [--stock [KINDS]]

``--long`` measures 5 minutes per level; each ``--option`` is one more server option (e.g.
``--option=--XcshSettings.freeze_startup_heap=False``). ``--stock`` is the baseline of the
server without this project: each agent calls only jupyter_server's own API, in turn: its
notebook read (``GET /api/contents/<path>``), saved back (``PUT``), the sessions listed and the
server's status (or only the kinds named: ``--stock status`` is the cheapest authenticated
request, back to back). The loop probe then shows what the same number of clients costs the
stock server's event loop.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loopprobe import LoopProbe, Summary, percentile
from notebook_edit import SERVERS, rss_mb, serving
from run_in_place import notebook_text

#: What each agent calls, in turn (each agent starts at its own place in the cycle).
KINDS = ("python", "edit", "read", "find", "run", "mcp")
#: What each agent calls with ``--stock``: jupyter_server's own API only.
STOCK_KINDS = ("contents", "save", "sessions", "status")
#: Cells of each agent's notebook.
AGENT_CELLS = 50
#: Server options: a session kernel per agent (the default keeps 4, evicting the others).
OPTIONS = ("--XcshSettings.max_sessions=64",)


@dataclass
class Tally:
    """The calls of one measured period: each call's milliseconds by kind, and the errors."""

    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: What the server answered to the first failed call of each kind.
    first_error: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, ms: float, ok: bool, answer: str = "") -> None:
        """Count one call (``answer``: what the server answered, kept for a first failure)."""
        with self.lock:
            self.times[kind].append(ms)
            if not ok:
                self.errors[kind] += 1
                self.first_error.setdefault(kind, answer)

    @property
    def calls(self) -> int:
        """All the calls counted."""
        return sum(len(t) for t in self.times.values())


class Agent:
    """One client: its connection, session and notebook."""

    def __init__(
        self,
        port: int,
        token: str,
        number: int,
        kinds: tuple[str, ...] = KINDS,
        prefix: str = "",
    ) -> None:
        self.port = port
        #: The server's base URL path before ``/api/...`` (behind a hub: ``/user/<name>``).
        self.prefix = prefix
        self.kinds = kinds
        #: The notebook's model as the contents API last returned it (``--stock``).
        self.model: dict[str, object] | None = None
        self.number = number
        self.notebook = f"agent{number}.ipynb"
        self.session = f"agent{number}"
        self.headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.turn = number % len(kinds)
        self.mcp_id = 0
        #: The status and the start of the body of the last answer (for a failure's report).
        self.last_answer = ""

    def _post(
        self,
        path: str,
        body: object,
        headers: dict[str, str] | None = None,
        method: str = "POST",
    ) -> tuple[int, bytes]:
        try:
            data = None if body is None else json.dumps(body)
            self.conn.request(
                method, self.prefix + path, body=data, headers=headers or self.headers
            )
            response = self.conn.getresponse()
            raw = response.read()
            self.last_answer = f"HTTP {response.status} {raw[:400]!r}"
            return response.status, raw
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()  # reconnects on the next request
            self.last_answer = f"no answer: {e!r}"
            return 0, b""

    def call(self, kind: str) -> bool:
        """Make one call of ``kind``; whether it succeeded."""
        n = self.turn
        if kind in STOCK_KINDS:
            return self.call_stock(kind)
        if kind == "python":
            body = {"cells": [{"code": f"x = sum(range({1000 + n}))\nx"}], "session": self.session}
            status, raw = self._post("/api/xcsh/python", body)
            return status == 200 and not json.loads(raw)["isError"]
        if kind == "run":
            body = {"notebook_path": self.notebook, "cell_id": "pass", "timeout": 120}
            status, raw = self._post("/api/xcsh/notebook/run", body)
            return status == 200 and not json.loads(raw)["isError"]
        if kind == "mcp":
            self.mcp_id += 1
            message = {
                "jsonrpc": "2.0",
                "id": self.mcp_id,
                "method": "tools/call",
                "params": {
                    "name": "python",
                    "arguments": {"cells": [{"code": "y = 2 ** 64"}], "session": self.session},
                },
            }
            headers = {
                **self.headers,
                "Accept": "application/json",
                "MCP-Protocol-Version": "2025-11-25",
            }
            status, raw = self._post("/api/xcsh/mcp", message, headers)
            return status == 200 and not json.loads(raw)["result"].get("isError")
        notebook: dict[str, object] = {"notebook_path": self.notebook}
        if kind == "edit":
            cell = 1 + n % (AGENT_CELLS - 1)
            notebook |= {"action": "edit", "cell_index": cell, "content": f"edited = {n}"}
        elif kind == "read":
            notebook |= {"action": "read", "max_chars": 4000, "cell_index": n % AGENT_CELLS}
        else:
            notebook |= {"action": "find", "pattern": f"line {n % 400:04d} of cell"}
        status, _ = self._post("/api/xcsh/notebook", notebook)
        return status == 200

    def call_stock(self, kind: str) -> bool:
        """Make one call of jupyter_server's own API (``--stock``); whether it succeeded."""
        path = f"/api/contents/{self.notebook}"
        if kind == "contents" or (kind == "save" and self.model is None):
            status, raw = self._post(path + "?content=1", None, method="GET")
            if status == 200:
                self.model = json.loads(raw)
            return status == 200
        if kind == "save":
            assert self.model is not None
            body = {"type": "notebook", "format": "json", "content": self.model["content"]}
            status, _ = self._post(path, body, method="PUT")
            return status == 200
        status, _ = self._post(f"/api/{kind}", None, method="GET")
        return status == 200

    def work(self, until: float, tally: Tally | None) -> None:
        """Call in turn until ``until`` (monotonic seconds); count into ``tally`` when given."""
        while time.monotonic() < until:
            kind = self.kinds[self.turn % len(self.kinds)]
            start = time.perf_counter()
            try:
                ok = self.call(kind)
            except (ValueError, KeyError, TypeError) as e:  # a 200 answer not of the tool's shape
                ok = False
                self.last_answer += f" ({e!r})"
            if tally is not None:
                tally.add(kind, (time.perf_counter() - start) * 1000, ok, self.last_answer)
            self.turn += 1

    def warm(self) -> None:
        """Start the agent's kernels: one call of each kind."""
        for kind in self.kinds:
            if not self.call(kind):
                raise RuntimeError(
                    f"agent {self.number}: the first {kind} call failed: {self.last_answer}"
                )


def write_agent_notebooks(root: str, count: int) -> None:
    """``agent<i>.ipynb`` for each agent: a ``pass`` cell and cells with 8 KiB of output."""
    text = notebook_text(AGENT_CELLS)
    for i in range(count):
        with open(os.path.join(root, f"agent{i}.ipynb"), "w", encoding="utf-8") as f:
            f.write(text)


def run_agents(agents: list[Agent], seconds: float) -> Tally:
    """All ``agents`` calling at once for ``seconds``; what they measured."""
    tally = Tally()
    until = time.monotonic() + seconds
    # Daemons: a run interrupted (Ctrl-C, SIGTERM) ends without waiting for the agents' clock.
    threads = [threading.Thread(target=a.work, args=(until, tally), daemon=True) for a in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def warm_agents(agents: list[Agent], parallel: int = 4) -> None:
    """Warm ``agents``, ``parallel`` at a time (kernel starts are heavy on a small machine)."""
    for i in range(0, len(agents), parallel):
        threads = [threading.Thread(target=a.warm) for a in agents[i : i + parallel]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def children_rss_mb(pid: int) -> float:
    """The resident size of every descendant of ``pid`` (the kernels), in MB."""
    total = 0.0
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children", encoding="ascii") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            total += rss_mb(kid)
            pending.append(kid)
    return total


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used, in seconds (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(
    level: int,
    seconds: float,
    tally: Tally,
    loop: Summary,
    idle: Summary,
    cpu: float,
    kinds: tuple[str, ...] = KINDS,
) -> list[str]:
    """The lines of one level (``cpu``: the server's CPU seconds meanwhile)."""
    errors = sum(tally.errors.values())
    per_call = cpu * 1000 / max(1, tally.calls)
    lines = [
        f"{level} agents: {tally.calls / seconds:6.1f} calls/s, {tally.calls} calls, "
        f"{errors} errors; server CPU {cpu / seconds * 100:3.0f}% of a core, "
        f"{per_call:.1f} ms per call",
        loop.line("  loop probe", idle),
    ]
    for kind in kinds:
        samples = tally.times.get(kind, [])
        lines.append(
            f"  {kind:<7} {len(samples):6d} calls  p50 {percentile(samples, 0.5):7.1f}  "
            f"p99 {percentile(samples, 0.99):7.1f}  max {max(samples, default=0):7.1f} ms"
            f"  errors {tally.errors.get(kind, 0)}"
        )
    for kind, answer in tally.first_error.items():
        lines.append(f"  first failed {kind} call: {answer}")
    return lines


def main() -> None:
    """Run the levels and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="8,16,32")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--long", action="store_true", help="5 minutes per level")
    parser.add_argument("--option", action="append", default=[], help="a server option")
    parser.add_argument(
        "--stock",
        nargs="?",
        const=",".join(STOCK_KINDS),
        help="jupyter_server's own API only (optionally: which of " + ", ".join(STOCK_KINDS) + ")",
    )
    args = parser.parse_args()
    kinds = KINDS
    if args.stock is not None:
        kinds = tuple(k for k in args.stock.split(",") if k)
        if not kinds or not set(kinds) <= set(STOCK_KINDS):
            parser.error(f"--stock takes some of {', '.join(STOCK_KINDS)}, got {args.stock!r}")
    levels = [int(n) for n in args.levels.split(",") if n]
    seconds = 300.0 if args.long else args.seconds

    with tempfile.TemporaryDirectory() as root:
        write_agent_notebooks(root, max(levels))
        with serving(root, (*OPTIONS, *args.option)) as (port, token):
            pid = SERVERS[port]
            idle = LoopProbe.measure_idle(port, token)
            rss_start = rss_mb(pid)
            print(idle.line("idle"), flush=True)
            print(f"server RSS at start {rss_start:.0f} MB", flush=True)
            agents: list[Agent] = []
            for level in levels:
                new = [Agent(port, token, n, kinds) for n in range(len(agents), level)]
                warm_agents(new)
                agents += new
                cpu = cpu_seconds(pid)
                with LoopProbe(port, token) as probe:
                    tally = run_agents(agents, seconds)
                cpu = cpu_seconds(pid) - cpu
                server = rss_mb(pid)
                for line in report(level, seconds, tally, probe.summary(), idle, cpu, kinds):
                    print(line, flush=True)
                print(
                    f"  server RSS {server:.0f} MB (+{(server - rss_start) / level:.1f} MB per "
                    f"agent session), kernels {children_rss_mb(pid):.0f} MB in all",
                    flush=True,
                )
            print(LoopProbe.measure_idle(port, token).line("idle after"), flush=True)


if __name__ == "__main__":
    main()

"""Benchmark many users on one JupyterHub: each user's agents through the hub's proxy at once.

A real JupyterHub on 127.0.0.1 (``tests/support/hubprocess.py``, shared with ``deploy-tests/``: its
proxy ``configurable-http-proxy``, ``SimpleLocalProcessSpawner`` starting each user's
``jupyterhub-singleuser`` with jupyter-xcsh from this environment). Each of ``--users`` users
gets their own server, an API token of their own (the hub's default scopes: their own server
only) and ``--agents`` agents (``agents.py``'s clients: each its keep-alive connection, python
session and 50-cell notebook), calling back to back for ``--seconds`` through the hub's public
URL: a python call, a notebook edit, a read, a find, a run in place of the ``pass`` cell and an
MCP ``tools/call`` of the python tool, in turn.

Before the load, in this order:

- **Isolation**: each user's token against every server, through the proxy and at the server's
  own port (``GET api/status``, ``GET api/contents``, a python call and an MCP ``tools/call``
  whose code would leave a file in that user's home). Its own server must answer 200; another
  user's server, and any server without a token, 403 or a redirect to the hub's login, never
  200; and no file may appear.
- **The proxy's cost per call**: user 1's first agent makes the same call through the proxy and
  directly at the single-user server's own port, alternately (``--pairs`` pairs per kind, the
  first of each pair alternating), the same token, on the quiet hub: each kind's p50 both ways,
  the p50 of the pairs' differences (ms) and the ratio. During the load, a probe repeats the
  pairs with ``GET api/status`` (the proxy's cost while it carries the agents' calls).

Then the load: all the calls counted (0 errors expected; the first failure of each kind shown),
p50/p99 per kind, each user server's RSS (spawned, start of the load, end) and CPU, the hub's and
the proxy's CPU (and RSS at the end), the machine's load average (``os.getloadavg``) before and
after. The figures are printed as markdown tables; ``--json FILE`` writes them as JSON too
(``-``: stdout, then the tables go to stderr). Everything the run started (hub, proxy, servers,
kernels) is stopped when it ends, normally, on Ctrl-C or on SIGTERM; a process still running 30 s
after the hub stopped is stopped by its pid and reported. Exit status: 0 when isolation held, no
call failed and no process was left; 1 otherwise; 2 when the hub cannot start.

Setup, once, at the repository's root (the lab UI is not needed; Node.js for the proxy)::

    python3 -m venv .venv-hub
    SKIP_JUPYTER_BUILDER=1 .venv-hub/bin/python -m pip install -e ".[deploy-test]"
    npm install --silent --no-audit --no-fund --prefix .cache/chp configurable-http-proxy@5

Run (``XCSH_CHP`` names another proxy executable; the hub's and servers' log: ``--log``)::

    .venv-hub/bin/python bench/hub.py [--users 4] [--agents 3] [--seconds 300] [--pairs 50]
                                      [--json FILE] [--log FILE] [--option=--X.y=z ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))  # tests.support.hubprocess, shared with deploy-tests/

from agents import (  # noqa: E402
    KINDS,
    OPTIONS,
    Agent,
    children_rss_mb,
    cpu_seconds,
    run_agents,
    warm_agents,
    write_agent_notebooks,
)
from loopprobe import percentile  # noqa: E402
from notebook_edit import rss_mb  # noqa: E402

from tests.support.hubprocess import CHP, Hub, http, running_hub  # noqa: E402

#: The kinds the proxy's cost is measured on: the cheapest authenticated request, then the tools.
PROXY_KINDS = ("status", *KINDS)
#: The file a refused call would leave in the home of the user whose server it reached.
BREACH = "isolation-breach.txt"
MCP_HEADERS = {"Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"}
#: Seconds between the status pairs the probe makes during the load.
LOAD_PAIR_INTERVAL = 0.2


@dataclass
class User:
    """One user of the hub: their token, server and agents, and what was measured of them."""

    name: str
    token: str
    #: The single-user server's process id and its own ``http://127.0.0.1:<port>``.
    pid: int = 0
    target: str = ""
    spawn_seconds: float = 0.0
    agents: list[Agent] = field(default_factory=list)
    rss: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    kernels_rss: float = 0.0

    @property
    def prefix(self) -> str:
        """The server's base URL path (the same through the proxy and at its own port)."""
        return f"/user/{self.name}"

    @property
    def port(self) -> int:
        """The single-user server's own port."""
        return int(urlsplit(self.target).port or 80)


def isolation_requests(code: str) -> list[tuple[str, str, Any, dict[str, str]]]:
    """The requests of the isolation check (method, path, body, headers); ``code`` is run."""
    mcp = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "python", "arguments": {"cells": [{"code": code}], "session": "agent0"}},
    }
    return [
        ("GET", "api/status", None, {}),
        ("GET", "api/contents", None, {}),
        ("POST", "api/xcsh/python", {"cells": [{"code": code}], "session": "agent0"}, {}),
        ("POST", "api/xcsh/mcp", mcp, MCP_HEADERS),
    ]


def check_isolation(hub: Hub, users: list[User]) -> list[dict[str, Any]]:
    """Each token (and none) against each server, through the proxy and directly: the answers."""
    intrusion = f"open({BREACH!r}, 'w').write('x')"
    results: list[dict[str, Any]] = []
    callers: list[User | None] = [*users, None]
    for caller in callers:
        for owner in users:
            own = caller is owner
            code = "1" if own else intrusion
            bases = {
                "proxy": f"{hub.url.rstrip('/')}{owner.prefix}/",
                "direct": f"{owner.target}{owner.prefix}/",
            }
            for via, base in bases.items():
                for method, path, body, headers in isolation_requests(code):
                    answer = http(
                        method,
                        base + path,
                        token=caller.token if caller else None,
                        body=body,
                        headers=headers,
                        timeout=120,
                    )
                    location = answer.headers.get("Location", "")
                    refused = answer.status == 403 or (
                        300 <= answer.status < 400 and "/hub/" in location
                    )
                    reached = answer.status == 200
                    results.append(
                        {
                            "token_of": caller.name if caller else None,
                            "server_of": owner.name,
                            "via": via,
                            "request": f"{method} {path}",
                            "status": answer.status,
                            "location": location,
                            "answer": str(answer.body)[:200],
                            "expected": "reached" if own else "refused",
                            "ok": reached if own else refused,
                        }
                    )
    for owner in users:
        breach = hub.home(owner.name) / BREACH
        results.append(
            {
                "token_of": "any other",
                "server_of": owner.name,
                "via": "both",
                "request": f"no {BREACH} left in the home",
                "status": None,
                "location": "",
                "answer": "",
                "expected": "absent",
                "ok": not breach.exists(),
            }
        )
    return results


def time_call(agent: Agent, kind: str, turn: int) -> tuple[float, bool]:
    """One call of ``kind`` by ``agent`` (its ``turn`` set, so both sides send the same)."""
    agent.turn = turn
    start = time.perf_counter()
    try:
        ok = agent.call(kind)
    except (ValueError, KeyError, TypeError):
        ok = False
    return (time.perf_counter() - start) * 1000, ok


@dataclass
class Pairs:
    """The same call through the proxy and directly, alternately: both sides' milliseconds."""

    proxy: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""

    def add(self, agents: tuple[Agent, Agent], kind: str, turn: int) -> None:
        """One pair (``agents``: through the proxy, direct); the first of it alternates."""
        proxy, direct = agents
        first_proxy = turn % 2 == 0
        times: dict[str, float] = {}
        for side in ("proxy", "direct") if first_proxy else ("direct", "proxy"):
            agent = proxy if side == "proxy" else direct
            ms, ok = time_call(agent, kind, turn)
            if not ok:
                self.errors += 1
                self.first_error = self.first_error or f"{side}: {agent.last_answer}"
            times[side] = ms
        self.proxy.append(times["proxy"])
        self.direct.append(times["direct"])

    def figures(self) -> dict[str, float]:
        """p50 both ways, the p50 of the pairs' differences (ms) and the ratio of the p50s."""
        differences = [p - d for p, d in zip(self.proxy, self.direct, strict=True)]
        direct = percentile(self.direct, 0.5)
        proxy = percentile(self.proxy, 0.5)
        return {
            "pairs": len(self.proxy),
            "direct_p50_ms": direct,
            "proxy_p50_ms": proxy,
            "added_p50_ms": percentile(differences, 0.5),
            "ratio": proxy / direct if direct else 0.0,
            "errors": self.errors,
        }


def proxy_cost(proxy: Agent, direct: Agent, pairs: int) -> dict[str, Pairs]:
    """Each of ``PROXY_KINDS``, ``pairs`` times through the proxy and directly, alternately."""
    measured = {kind: Pairs() for kind in PROXY_KINDS}
    for kind in PROXY_KINDS:
        for turn in range(pairs):
            measured[kind].add((proxy, direct), kind, turn)
    return measured


def pairs_during_load(agents: tuple[Agent, Agent], stop: threading.Event, into: Pairs) -> None:
    """Status pairs every ``LOAD_PAIR_INTERVAL`` seconds until ``stop`` is set."""
    turn = 0
    while not stop.wait(LOAD_PAIR_INTERVAL):
        into.add(agents, "status", turn)
        turn += 1


def versions() -> dict[str, str]:
    """The versions of the parts measured."""
    from importlib.metadata import version

    found = {name: version(name) for name in ("jupyterhub", "jupyter_server", "jupyter-xcsh")}
    try:
        found["configurable-http-proxy"] = subprocess.run(
            [CHP, "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        found["configurable-http-proxy"] = "?"
    return found


def measure(hub: Hub, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """Run the checks and the load on a running ``hub``; the figures."""
    expires = int(args.seconds) + 3600
    users = [User(f"user{i + 1}", "") for i in range(args.users)]
    for user in users:
        hub.home(user.name).mkdir(parents=True, exist_ok=True)
        write_agent_notebooks(str(hub.home(user.name)), args.agents)
        start = time.monotonic()
        hub.start_server(user.name)
        user.spawn_seconds = time.monotonic() - start
        user.token = hub.token(user.name, expires_in=expires)
        user.pid = hub.server_pid(user.name)
        user.target = hub.server_target(user.name)
        user.rss["spawned"] = rss_mb(user.pid)
        print(f"{user.name}'s server: pid {user.pid} at {user.target}, "
              f"started in {user.spawn_seconds:.1f} s", file=out, flush=True)  # fmt: skip

    isolation = check_isolation(hub, users)
    broken = [r for r in isolation if not r["ok"]]
    print(f"isolation: {len(isolation)} checks, {len(broken)} failed", file=out, flush=True)

    proxy_port = int(urlsplit(hub.url).port or 80)
    for user in users:
        user.agents = [
            Agent(proxy_port, user.token, n, KINDS, prefix=user.prefix) for n in range(args.agents)
        ]
    warm_agents([a for u in users for a in u.agents])
    first = users[0]
    sides = (
        Agent(proxy_port, first.token, 0, PROXY_KINDS, prefix=first.prefix),
        Agent(first.port, first.token, 0, PROXY_KINDS, prefix=first.prefix),
    )
    print("warm; the proxy's cost on the quiet hub", file=out, flush=True)
    quiet = proxy_cost(*sides, args.pairs)

    for user in users:
        user.rss["start"] = rss_mb(user.pid)
        user.cpu = cpu_seconds(user.pid)
    proxy_pid = hub.proxy_pid()
    assert hub.process is not None
    hub_cpu, proxy_cpu = cpu_seconds(hub.process.pid), cpu_seconds(proxy_pid)
    load_before = os.getloadavg()
    print(f"load: {args.users} users x {args.agents} agents, {args.seconds:g} s", file=out,
          flush=True)  # fmt: skip
    under_load, stop = Pairs(), threading.Event()
    prober = threading.Thread(target=pairs_during_load, args=(sides, stop, under_load), daemon=True)
    prober.start()
    turns = {id(a): a.turn for u in users for a in u.agents}
    for user in users:
        for agent in user.agents:
            # Idle since the warm-up, past the proxy's keep-alive timeout (Node's 5 s), their
            # connections are closed at the other end: each agent starts the load on a new one
            # (a client library would retry the request itself; http.client counts a failure).
            agent.conn.close()
    started = time.monotonic()
    tally = run_agents([a for u in users for a in u.agents], args.seconds)
    elapsed = time.monotonic() - started
    stop.set()
    prober.join()
    hub_cpu = cpu_seconds(hub.process.pid) - hub_cpu
    proxy_cpu = cpu_seconds(proxy_pid) - proxy_cpu
    load_after = os.getloadavg()
    hub_rss, proxy_rss = rss_mb(hub.process.pid), rss_mb(proxy_pid)
    for user in users:
        user.cpu = cpu_seconds(user.pid) - user.cpu
        user.rss["end"] = rss_mb(user.pid)
        user.kernels_rss = children_rss_mb(user.pid)

    per_user_calls = {
        u.name: sum(a.turn - turns[id(a)] for a in u.agents) for u in users
    }  # each agent's turn counts its calls
    proxied = tally.calls + len(under_load.proxy)
    kinds = {}
    for kind in KINDS:
        samples = tally.times.get(kind, [])
        kinds[kind] = {
            "calls": len(samples),
            "p50_ms": percentile(samples, 0.5),
            "p99_ms": percentile(samples, 0.99),
            "max_ms": max(samples, default=0.0),
            "errors": tally.errors.get(kind, 0),
            "first_error": tally.first_error.get(kind),
        }
    return {
        "users": args.users,
        "agents_per_user": args.agents,
        "seconds": elapsed,
        "cores": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "versions": versions(),
        "isolation": {"checks": len(isolation), "failed": broken, "all": isolation},
        "calls": tally.calls,
        "calls_per_second": tally.calls / elapsed,
        "errors": sum(tally.errors.values()),
        "kinds": kinds,
        "proxy_cost_quiet": {k: p.figures() for k, p in quiet.items()},
        "proxy_cost_quiet_first_errors": {k: p.first_error for k, p in quiet.items() if p.errors},
        "proxy_cost_under_load": {"status": under_load.figures()},
        "hub_cpu_seconds": hub_cpu,
        "proxy_cpu_seconds": proxy_cpu,
        "proxy_cpu_ms_per_request": proxy_cpu * 1000 / max(1, proxied),
        "hub_rss_mb_end": hub_rss,
        "proxy_rss_mb_end": proxy_rss,
        "servers": [
            {
                "user": u.name,
                "spawn_seconds": u.spawn_seconds,
                "calls": per_user_calls[u.name],
                "rss_mb": u.rss,
                "kernels_rss_mb_end": u.kernels_rss,
                "cpu_seconds": u.cpu,
            }
            for u in users
        ],
    }


def markdown(figures: dict[str, Any]) -> str:
    """The figures as markdown tables."""
    seconds = figures["seconds"]
    before = " ".join(f"{x:.2f}" for x in figures["load_average_before"])
    after = " ".join(f"{x:.2f}" for x in figures["load_average_after"])
    v = figures["versions"]
    lines = [
        f"### {figures['users']} users x {figures['agents_per_user']} agents on one hub, "
        f"{seconds:.0f} s",
        "",
        f"{figures['cores']} cores; load average (1, 5, 15 min) {before} before the load, "
        f"{after} after. jupyterhub {v['jupyterhub']}, configurable-http-proxy "
        f"{v['configurable-http-proxy']}, jupyter_server {v['jupyter_server']}, "
        f"jupyter-xcsh {v['jupyter-xcsh']}.",
        "",
    ]
    iso = figures["isolation"]
    groups: dict[tuple[str, str], dict[int, int]] = {}
    for r in iso["all"]:
        if r["status"] is None:
            continue
        if r["token_of"] is None:
            who = "no token"
        elif r["token_of"] == r["server_of"]:
            who = "the user's own token"
        else:
            who = "another user's token"
        statuses = groups.setdefault((who, r["via"]), {})
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    verdict = "held" if not iso["failed"] else f"FAILED ({len(iso['failed'])} checks)"
    lines += [
        f"Isolation {verdict}: {iso['checks']} checks (each token against each server's status, "
        f"contents, python and MCP; no `{BREACH}` left in any home).",
        "",
        "| token | via | answers |",
        "|---|---|---|",
    ]
    for (who, via), statuses in groups.items():
        answers = ", ".join(f"{n}x {code}" for code, n in sorted(statuses.items()))
        lines.append(f"| {who} | {via} | {answers} |")
    for r in iso["failed"]:
        lines.append(
            f"| FAILED: {r['token_of']} -> {r['server_of']} | {r['via']} | {r['request']}: "
            f"{r['status']} {r['location']} |"
        )
    lines += [
        "",
        f"Load: {figures['calls']} calls ({figures['calls_per_second']:.1f}/s), "
        f"{figures['errors']} errors.",
        "",
        "| kind | calls | p50 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, k in figures["kinds"].items():
        lines.append(
            f"| {kind} | {k['calls']} | {k['p50_ms']:.1f} | {k['p99_ms']:.1f} | "
            f"{k['max_ms']:.1f} | {k['errors']} |"
        )
    for kind, k in figures["kinds"].items():
        if k["first_error"]:
            lines.append(f"\nFirst failed {kind} call: `{k['first_error']}`")
    lines += [
        "",
        "The proxy's cost per call (the same call through the proxy and at the server's own "
        "port, alternately):",
        "",
        "| call | pairs | direct p50 ms | proxy p50 ms | added p50 ms | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    rows = [(f"{k}, quiet hub", p) for k, p in figures["proxy_cost_quiet"].items()]
    rows += [(f"{k}, during the load", p) for k, p in figures["proxy_cost_under_load"].items()]
    for label, p in rows:
        errors = f" ({p['errors']} errors)" if p["errors"] else ""
        lines.append(
            f"| {label}{errors} | {p['pairs']} | {p['direct_p50_ms']:.1f} | "
            f"{p['proxy_p50_ms']:.1f} | {p['added_p50_ms']:+.1f} | {p['ratio']:.2f}x |"
        )
    for kind, answer in figures["proxy_cost_quiet_first_errors"].items():
        lines.append(f"\nFirst failed {kind} pair: `{answer}`")
    lines += [
        "",
        "| user server | started in s | calls | RSS spawned MB | RSS start MB | RSS end MB | "
        "kernels RSS end MB | CPU % of a core |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in figures["servers"]:
        r = s["rss_mb"]
        lines.append(
            f"| {s['user']} | {s['spawn_seconds']:.1f} | {s['calls']} | {r['spawned']:.0f} | "
            f"{r['start']:.0f} | {r['end']:.0f} | {s['kernels_rss_mb_end']:.0f} | "
            f"{s['cpu_seconds'] / seconds * 100:.0f} |"
        )
    lines += [
        "",
        f"Hub CPU {figures['hub_cpu_seconds']:.1f} s "
        f"({figures['hub_cpu_seconds'] / seconds * 100:.1f}% of a core); proxy CPU "
        f"{figures['proxy_cpu_seconds']:.1f} s "
        f"({figures['proxy_cpu_seconds'] / seconds * 100:.0f}% of a core, "
        f"{figures['proxy_cpu_ms_per_request']:.2f} ms per request forwarded). RSS at the "
        f"end: hub {figures['hub_rss_mb_end']:.0f} MB, proxy {figures['proxy_rss_mb_end']:.0f} MB.",
    ]
    return "\n".join(lines)


def main() -> int:
    """Start the hub, measure, stop everything; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--agents", type=int, default=3, help="agents per user")
    parser.add_argument("--seconds", type=float, default=300, help="the load's length")
    parser.add_argument("--pairs", type=int, default=50, help="proxy/direct pairs per kind")
    parser.add_argument("--json", help="write the figures as JSON to this file (-: stdout)")
    parser.add_argument(
        "--log",
        default=str(BENCH / ".data" / "hub.log"),
        help="the hub's and the single-user servers' output (default: %(default)s)",
    )
    parser.add_argument(
        "--option", action="append", default=[], help="one more single-user server option"
    )
    args = parser.parse_args()
    if args.users < 2 or args.agents < 1 or args.seconds <= 0 or args.pairs < 1:
        parser.error("--users at least 2 (isolation), --agents and --pairs at least 1")
    if not os.access(CHP, os.X_OK):
        print(f"configurable-http-proxy not found at {CHP} (set XCSH_CHP)", file=sys.stderr)
        return 2
    out = sys.stderr if args.json == "-" else sys.stdout

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # the with blocks below then stop everything

    signal.signal(signal.SIGTERM, interrupted)
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    names = [f"user{i + 1}" for i in range(args.users)]
    with (
        tempfile.TemporaryDirectory(prefix="xcsh-hub-bench-") as base,
        open(args.log, "w") as log,
    ):
        try:
            with running_hub(
                Path(base),
                names,
                log,
                password=os.urandom(16).hex(),
                spawner_args=(*OPTIONS, *args.option),
            ) as hub:
                print(f"hub at {hub.url} (log: {args.log})", file=out, flush=True)
                figures = measure(hub, args, out)
        except RuntimeError as e:
            print(f"failed: {e} (log: {args.log})", file=sys.stderr)
            return 2
    figures["leftover_processes"] = hub.leftovers
    text = markdown(figures)
    if hub.leftovers:
        text += f"\n\nProcesses still running 30 s after the hub stopped: {hub.leftovers}"
    print(text, file=out, flush=True)
    if args.json == "-":
        json.dump(figures, sys.stdout, indent=1)
        print()
    elif args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    ok = not figures["isolation"]["failed"] and figures["errors"] == 0 and not hub.leftovers
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

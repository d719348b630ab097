"""Benchmark the server's event loop: how long agent operations keep it from answering others.

Starts a Jupyter Server with the extension and, with the loop probe (``loopprobe.py``: a GET of
``/api/status`` every 20 ms from its own process) running, measures in turn:

1. idle: nothing else runs (the floor of this run);
2. edits of one cell of a 2,000-cell, ~21 MB notebook (file, no room open);
3. finds in it: a literal and a regex;
4. batches of 100 edits of it;
5. a python tool call printing 200 MB;
6. 24 concurrent agents (``agents.py``: python, edits, reads, finds, runs in place, MCP);

and prints, for each, the probe's p50/p99/max against the idle probe's (target: p99 <= 20 ms,
max <= 50 ms) and the workload's own p50.

    python bench/loop.py [--cells 2000] [--runs 25] [--output-mb 200] [--agents 24]
                         [--agent-seconds 30] [--only edits,find,...] [--watch FILE]

``--watch FILE`` runs the server under ``loopwatch.py``, which writes to FILE where the loop
thread was while it was blocked (a diagnostic: the watchdog's sampling costs a little).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import notebook_edit
from agents import OPTIONS, Agent, run_agents, warm_agents, write_agent_notebooks
from loopprobe import LoopProbe, Summary
from notebook_edit import post, serving, write_big_notebook

SCENARIOS = ("edits", "find", "batch", "output", "agents")


def timed(runs: int, call: Callable[[int], object]) -> list[float]:
    """Call ``call(i)`` ``runs`` times; each call's milliseconds."""
    samples = []
    for i in range(runs):
        start = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def python_call(port: int, token: str, code: str) -> dict[str, object]:
    """One python tool call (its own connection); the result."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/xcsh/python",
        data=json.dumps({"cells": [{"code": code}], "timeout": 600}).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def print_code(megabytes: int) -> str:
    """Code printing ``megabytes`` MiB in 1 KiB lines."""
    return (
        "import sys\nline = 'x' * 1023 + '\\n'\n"
        f"for _ in range({megabytes * 1024}):\n    sys.stdout.write(line)\n"
    )


def main() -> None:
    """Run the scenarios and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--output-mb", type=int, default=200)
    parser.add_argument("--agents", type=int, default=24)
    parser.add_argument("--agent-seconds", type=float, default=30)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--watch", help="write what blocked the loop to this file (loopwatch.py)")
    args = parser.parse_args()
    if args.watch:
        watch = Path(__file__).resolve().parent / "loopwatch.py"
        notebook_edit.LAUNCHER[:] = [str(watch), f"--out={os.path.abspath(args.watch)}", "--"]
    only = {name for name in args.only.split(",") if name}
    if not only <= set(SCENARIOS):
        parser.error(f"--only: unknown {', '.join(sorted(only - set(SCENARIOS)))}")
    rows: list[tuple[str, Summary, str]] = []

    def p50(samples: list[float]) -> str:
        return f"call p50 {statistics.median(samples):7.1f} ms"

    with tempfile.TemporaryDirectory() as root:
        _, size_mb = write_big_notebook(root, args.cells)
        write_agent_notebooks(root, args.agents)
        with serving(root, OPTIONS) as (port, token):
            nb = "big.ipynb"
            middle = args.cells // 2 + 1
            post(port, token, {"action": "read", "notebook_path": nb, "max_chars": 1000})
            python_call(port, token, "pass")  # the default session's kernel starts
            idle = LoopProbe.measure_idle(port, token)

            def measure(label: str, work: Callable[[], str]) -> None:
                with LoopProbe(port, token) as probe:
                    figures = work()
                rows.append((label, probe.summary(), figures))
                print(probe.summary().line(label, idle), figures, flush=True)

            print(idle.line("idle"), flush=True)
            if "edits" in only:

                def edit(i: int) -> None:
                    body = {"action": "edit", "cell_index": middle, "content": f"e = {i}"}
                    post(port, token, {**body, "notebook_path": nb})

                measure(f"edit, {size_mb:.0f} MB notebook", lambda: p50(timed(args.runs, edit)))
            if "find" in only:
                for label, fields in (
                    ("literal", {"pattern": "plot(result_1999)"}),
                    ("regex", {"pattern": r"^result_\d+7 = compute", "regex": True}),
                ):
                    body = {"action": "find", "notebook_path": nb, **fields}
                    post(port, token, body)  # the regex search process starts

                    def find(_: int, body: dict[str, object] = body) -> None:
                        post(port, token, body)

                    measure(f"find {label}", lambda: p50(timed(args.runs, find)))
            if "batch" in only:

                def batch(i: int) -> None:
                    changes = [
                        {"action": "edit", "cell_index": 1 + k, "content": f"b = {i, k}"}
                        for k in range(100)
                    ]
                    post(port, token, {"notebook_path": nb, "changes": changes})

                measure("batch of 100 edits", lambda: p50(timed(max(5, args.runs // 3), batch)))
            if "output" in only:

                def output() -> str:
                    start = time.perf_counter()
                    result = python_call(port, token, print_code(args.output_mb))
                    assert not result["isError"], result
                    return f"call {time.perf_counter() - start:7.1f} s"

                measure(f"python, {args.output_mb} MB print", output)
            if "agents" in only:
                agents = [Agent(port, token, n) for n in range(args.agents)]
                warm_agents(agents)

                def crowd() -> str:
                    tally = run_agents(agents, args.agent_seconds)
                    errors = sum(tally.errors.values())
                    return f"{tally.calls / args.agent_seconds:.0f} calls/s, {errors} errors"

                measure(f"{args.agents} agents", crowd)
            after = LoopProbe.measure_idle(port, token)
            print(after.line("idle after"), flush=True)

    print(f"\nnotebook {args.cells} cells, {size_mb:.1f} MB; target probe p99 <= 20, max <= 50 ms")


if __name__ == "__main__":
    main()

"""Profile the python tool's ``pass`` call end to end inside the server (cProfile).

Usage: python bench/profile_call.py [--calls 2000] [--top 40]

Starts a Jupyter Server with the extension under ``cProfile`` (127.0.0.1, a free port), makes
``--calls`` ``pass`` calls over one keep-alive connection after a warm-up, stops the server
and prints where a call's time goes: milliseconds per call (cumulative, so stages nest) for
the stages of a call, then the functions with the most time of their own. cProfile slows
small functions down more than large ones: read the figures as shares, not as the
uninstrumented latency (``bench/execute.py`` measures that).
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute import Server

#: (label, pstats function filter): the stages of one call, outermost first.
STAGES = [
    ("whole request (tornado: parse, auth, handler, write)", "web.py", "_execute"),
    ("  auth: token check (get_current_user)", "web.py", "current_user"),
    ("  handler post (body parse -> tool.call -> write)", "handlers/python.py", "post"),
    ("    tool.call (validate, require, run)", "tools/python/tool.py", "call"),
    ("      caller.require (authorizer)", "calls/caller.py", "require"),
    ("      request parsing", "execution/python/request.py", "parse_python_request"),
    ("      execution.run", "execution/python/service.py", "run"),
    ("        session checkout (pool)", "execution/python/pool.py", "checkout"),
    ("        run_cell (kernel round trip, awaited)", "execution/kernel/cell.py", "run_cell"),
    ("        result building", "execution/kernel/result.py", ""),
    ("  activity events (emit)", "activity.py", "emit"),
    ("  jupyter_events emit (validation, listeners)", "jupyter_events/logger.py", "emit"),
    ("  kernel message decode", "execution/kernel/connection.py", "decode_message"),
    ("  kernel message routing (pump)", "execution/kernel/connection.py", "_dispatch"),
    ("  JSON encode (json.dumps)", "json/__init__.py", "dumps"),
    ("  ZMQ send (session.send)", "jupyter_client/session.py", "send"),
    ("  request log line (log_request)", "jupyter_server/log.py", "log_request"),
    ("  prometheus metrics", "prometheus_client", ""),
]


def stage_times(stats: pstats.Stats, calls: int) -> list[tuple[str, float, int]]:
    """(label, ms per call, calls per call) of each stage; summed over matching functions."""
    rows = []
    for label, file_part, name in STAGES:
        total = 0.0
        count = 0
        for (path, _line, func), (_cc, nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            if file_part in path and (not name or func == name):
                total += ct
                count += nc
        rows.append((label, total * 1000 / calls, count // max(calls, 1)))
    return rows


def main() -> int:
    """Profile the server, print the stages and the top functions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    out = os.path.join(tempfile.mkdtemp(), "server.prof")
    server = Server(profile=out)
    try:
        for _ in range(50):
            server.python("pass")
        os.kill(server.process.pid, signal.SIGRTMIN)  # reset: count the timed calls only
        time.sleep(0.5)
        start = time.perf_counter()
        for _ in range(args.calls):
            server.python("pass")
        wall = (time.perf_counter() - start) * 1000 / args.calls
        os.kill(server.process.pid, signal.SIGRTMIN + 1)  # dump
        deadline = time.monotonic() + 60
        while not os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
    finally:
        server.stop()
    stats = pstats.Stats(out)
    print(f"{args.calls} pass calls, {wall:.2f} ms each at the client (profiled)")
    for label, ms, count in stage_times(stats, args.calls):
        print(f"  {label:<58} {ms:7.3f} ms  x{count}")
    print()
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

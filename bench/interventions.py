"""Benchmark the process-wide interventions one by one: each setting on, then off.

Usage: python bench/interventions.py [--runs 15] [--rounds 150] [--megabytes 20]

Each intervention (``XcshSettings``: ``pause_collector``, ``guard_saves``, ``heap_arenas``,
``trim_memory``, ``bound_kernel_streams``, ``take_over_activity_watch``) is measured on the
figure it exists for, on two Jupyter Servers started one after the other (127.0.0.1, free
ports): one with every default, one with only that setting off (``--XcshSettings.<name>=False``,
``heap_arenas=0``). Each server's figure
is printed beside a floor measured in the same stretch of time, and the off/on ratio:

- ``pause_collector`` and ``guard_saves``: an edit of a 2,000-cell, ~21 MB notebook (p50 and
  p95 of ``--runs`` edits; floor: ``json.loads`` + ``json.dumps`` of the file, interleaved);
- ``heap_arenas``: the server's resident size kept after those edits;
- ``trim_memory``: the server's resident size kept once a 20 MB print is done;
- ``bound_kernel_streams``: the server's resident size growth while a 20 MB print runs;
- ``take_over_activity_watch``: a ``pass`` round trip of the python tool (p50 and p95 of
  ``--rounds`` calls; floor: a raw ``jupyter_client`` round trip, interleaved).

The figures are what users pay for turning one off (docs/operators/interventions.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute import (
    MIB,
    RssPeak,
    Server,
    print_code,
    raw_execute,
    settle_rss,
)
from notebook_edit import (
    SERVERS,
    rss_mb,
    serving,
    time_edits,
    time_floor,
    write_big_notebook,
)

#: The interventions, and the figure each is measured on.
INTERVENTIONS = {
    "pause_collector": "edit",
    "guard_saves": "edit",
    "heap_arenas": "edit",
    "trim_memory": "print",
    "bound_kernel_streams": "print",
    "take_over_activity_watch": "pass",
}
#: The value that turns an intervention off, where it is not ``False``.
OFF = {"heap_arenas": "0"}


def ms(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def measure_edits(options: tuple[str, ...], runs: int, cells: int = 2000) -> dict[str, float]:
    """Edits of a big notebook: p50 / p95 ms, the floor's p50 in the same stretch, and the
    server's resident size kept after them (MB, against the server's before the first)."""
    floor: list[float] = []
    with tempfile.TemporaryDirectory() as root:
        path, _ = write_big_notebook(root, cells)
        with serving(root, options) as (port, token):
            before = rss_mb(SERVERS[port])
            middle = cells // 2 + 1
            time_edits(port, token, middle, 2, "file")  # parsed once, caches warm
            ours = time_edits(
                port,
                token,
                middle,
                runs,
                "file",
                between=lambda: floor.extend(time_floor(path, 1, serialise=True)),
            )
            time.sleep(1)  # the last save's memory trim (on a worker thread)
            kept = rss_mb(SERVERS[port]) - before
    return {"p50": ms(ours, 0.5), "p95": ms(ours, 0.95), "floor": ms(floor, 0.5), "kept": kept}


def measure_print(options: tuple[str, ...], megabytes: int) -> dict[str, float]:
    """A large print through the python tool: the server's RSS growth during it, kept after."""
    server = Server(options=options)
    try:
        pid = server.process.pid
        server.python("pass")
        code = print_code(megabytes)
        during, kept = [], []
        for _ in range(2):
            before = settle_rss(pid)
            with RssPeak(pid) as peak:
                peak.start = before
                result = server.python(code)
            assert result["totalBytes"] == megabytes * MIB, result["totalBytes"]
            during.append(peak.growth)
            kept.append(settle_rss(pid) - before)
        return {"during": max(during) / MIB, "kept": max(kept) / MIB}
    finally:
        server.stop()


def measure_pass(options: tuple[str, ...], rounds: int) -> dict[str, float]:
    """``pass`` round trips of the tool, interleaved with raw ``jupyter_client`` ones."""
    server = Server(options=options)
    try:
        server.python("pass")
        raw = server.raw_client()
        raw_execute(raw, "pass")
        ours: list[float] = []
        floor: list[float] = []
        for _ in range(rounds):
            start = time.perf_counter()
            raw_execute(raw, "pass")
            floor.append(time.perf_counter() - start)
            start = time.perf_counter()
            server.python("pass")
            ours.append(time.perf_counter() - start)
        raw.stop_channels()
        return {"p50": ms(ours, 0.5), "p95": ms(ours, 0.95), "floor": ms(floor, 0.5)}
    finally:
        server.stop()


def main() -> int:
    """Measure every intervention on and off; print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="edits of the big notebook")
    parser.add_argument("--rounds", type=int, default=150, help="pass round trips")
    parser.add_argument("--megabytes", type=int, default=20, help="size of the large print")
    parser.add_argument("--only", help="one intervention")
    args = parser.parse_args()
    measures: dict[str, Callable[[tuple[str, ...]], dict[str, float]]] = {
        "edit": lambda options: measure_edits(options, args.runs),
        "print": lambda options: measure_print(options, args.megabytes),
        "pass": lambda options: measure_pass(options, args.rounds),
    }
    print(f"{'intervention':<26} {'figure':<30} {'on':>10} {'off':>10} {'off/on':>7}")
    for name, kind in INTERVENTIONS.items():
        if args.only and name != args.only:
            continue
        on = measures[kind](())
        off = measures[kind]((f"--XcshSettings.{name}={OFF.get(name, 'False')}",))
        figures = {
            "edit": [
                ("edit p50 ms", "p50"),
                ("edit p95 ms", "p95"),
                ("floor p50 ms", "floor"),
                ("RSS kept after edits MB", "kept"),
            ],
            "print": [("RSS growth during MB", "during"), ("RSS kept after MB", "kept")],
            "pass": [("pass p50 ms", "p50"), ("pass p95 ms", "p95"), ("raw floor p50 ms", "floor")],
        }[kind]
        for label, key in figures:
            ratio = off[key] / on[key] if on[key] > 0.05 else float("nan")
            print(f"{name:<26} {label:<30} {on[key]:10.1f} {off[key]:10.1f} {ratio:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: a harmless regex ``find`` while other callers' runaway regexes run (issue 20).

Starts a real Jupyter Server, then for each count N of runaway searches ((a+)+$ against 40 a's
and a "!", which backtracks until the find deadline stops it) sent at once from other threads,
times one harmless regex find sent while they run. The floor is the same find with nothing else
running, measured in the same run; the figure printed is each p50 and its excess over the floor
(the target: a few hundred milliseconds at most, whatever N).

    python bench/regex_contention.py [--runaways 0,2,6,10] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import urllib.error
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_edit import p50, post, serving

RUNAWAY = {"action": "find", "notebook_path": "slow.ipynb", "pattern": "(a+)+$", "regex": True}
HARMLESS = {**RUNAWAY, "pattern": r"^x = \d$"}


def runaway(port: int, token: str) -> None:
    """One search that runs until its deadline and is refused (400)."""
    try:
        post(port, token, RUNAWAY)
    except urllib.error.HTTPError as e:
        assert e.code == 400, e.read()
    else:
        raise AssertionError("the runaway pattern was not stopped")


def time_harmless(port: int, token: str, runaways: int) -> float:
    """Seconds one harmless find takes while ``runaways`` searches backtrack."""
    threads = [threading.Thread(target=runaway, args=(port, token)) for _ in range(runaways)]
    for thread in threads:
        thread.start()
    if threads:
        time.sleep(0.5)  # every runaway is in its search by now
    start = time.perf_counter()
    result = post(port, token, HARMLESS)
    took = time.perf_counter() - start
    assert result["details"]["matchedCells"] == 1, result  # type: ignore[index]
    for thread in threads:
        thread.join()
    return took


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runaways", default="0,2,6,10")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    counts = [int(n) for n in args.runaways.split(",")]

    with tempfile.TemporaryDirectory() as root:
        cells = [new_code_cell("a" * 40 + "!"), new_code_cell("x = 1")]
        Path(root, "slow.ipynb").write_text(nbformat.writes(new_notebook(cells=cells)))
        figures: dict[int, list[float]] = {}
        with serving(root) as (port, token):
            post(port, token, HARMLESS)  # the first search starts its process: not measured
            for _ in range(args.runs):
                for count in counts:  # interleaved: every count sees the same machine load
                    figures.setdefault(count, []).append(time_harmless(port, token, count))

    floor = p50(figures[counts[0]])
    print(f"harmless regex find, p50 of {args.runs} (floor: {counts[0]} runaways)")
    for count in counts:
        ours = p50(figures[count])
        print(f"  behind {count:3d} runaway patterns: {ours:8.1f} ms  (+{ours - floor:.1f} ms)")


if __name__ == "__main__":
    main()

"""Benchmark: ``find`` in a 2,000-cell notebook through POST /api/xcsh/notebook.

Measures, in the same run, the p50 of finds through the endpoint of a real Jupyter Server —
a literal pattern, a regex (searched in a child process with a deadline), a literal limited to
markdown cells — against the floor: a plain ``json.loads`` of the same file (read from disk
included). Prints each p50 and its ratio to the floor (target: a find answers within 100 ms).
Where jupyter-collaboration is installed it also measures finds while a collaboration room has
the notebook open (the search then reads the shared document, not the file).

    python bench/notebook_find.py [--cells 2000] [--runs 25]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_edit import (
    has_collaboration,
    p50,
    post,
    room,
    serving,
    time_floor,
    write_big_notebook,
)

#: What is searched: (label, request fields, cells expected to match in build_notebook's).
FINDS = [
    ("literal", {"pattern": "plot(result_1999)"}, 1),
    ("regex", {"pattern": r"^result_\d+7 = compute", "regex": True}, None),
    ("literal, markdown only", {"pattern": "Section 1990", "cell_type": "markdown"}, 1),
]


def time_finds(
    port: int, token: str, fields: dict[str, object], runs: int, via: str
) -> list[float]:
    """Run one find ``runs`` times; return each call's seconds (every one must go ``via``)."""
    samples = []
    for _ in range(runs):
        body = {"action": "find", "notebook_path": "big.ipynb", **fields}
        start = time.perf_counter()
        result = post(port, token, body)
        samples.append(time.perf_counter() - start)
        details = result["details"]
        assert details["via"] == via, details  # type: ignore[index]
        assert details["matchedCells"] > 0, details  # type: ignore[index]
    return samples


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root:
        path, size_mb = write_big_notebook(root, args.cells)
        floor = time_floor(path, args.runs, serialise=False)
        ours: dict[str, list[float]] = {}
        live: dict[str, list[float]] = {}
        with serving(root) as (port, token):
            # The first regex find starts its search process: not what is measured.
            post(port, token, {"action": "find", "notebook_path": "big.ipynb", "pattern": "x"})
            post(port, token, {**FINDS[1][1], "action": "find", "notebook_path": "big.ipynb"})
            for label, fields, _ in FINDS:
                ours[label] = time_finds(port, token, fields, args.runs, "file")
            if has_collaboration():
                with room(port, token):
                    for label, fields, _ in FINDS:
                        live[label] = time_finds(port, token, fields, args.runs, "document")

    print(f"notebook: {args.cells} cells, {size_mb:.1f} MB, {args.runs} runs")
    print(f"floor json.loads of the file          p50 {p50(floor):8.1f} ms")
    for label, samples in ours.items():
        ratio = p50(samples) / p50(floor)
        print(f"find {label + ', file':<32} p50 {p50(samples):8.1f} ms  {ratio:5.2f}x floor")
    for label, samples in live.items():
        ratio = p50(samples) / p50(floor)
        print(
            f"find {label + ', live document':<32} p50 {p50(samples):8.1f} ms  {ratio:5.2f}x floor"
        )
    if not live:
        print("find, live document: not measured (jupyter-collaboration is not installed)")
    print("target: a find answers within 100 ms")


if __name__ == "__main__":
    main()

"""Benchmark a run in place against the python tool and a raw jupyter_client, in the same run.

Usage: python bench/run_in_place.py [--rounds 200] [--cells 200]

Starts a Jupyter Server (127.0.0.1, a free port) with the extension and measures the round trip
of one ``pass`` cell:

1. a raw ``jupyter_client`` execute (reply and idle) on a kernel of that server;
2. the python tool (POST /api/xcsh/python, warm session, keep-alive connection);
3. a run in place of a ``pass`` cell (POST /api/xcsh/notebook/run, warm notebook session):
   in a 3-cell notebook, then in a notebook of ``--cells`` cells with outputs (a few MB);

then the write-back alone: ``NotebookStore.write_outputs`` into the file (read and parse it
under the server's save lock, patch the cell's outputs, save atomically through the contents
manager) on both notebooks, in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from nbformat.v4 import new_code_cell, new_notebook, new_output

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from execute import Server, percentiles, raw_execute

from jupyter_xcsh.notebook.outputs import SelectedCell
from jupyter_xcsh.notebook.storage.store import NotebookStore


def notebook_text(cells: int) -> str:
    """A notebook whose cell 0 is ``pass``, then ``cells - 1`` cells with 8 KiB of output."""
    made = [new_code_cell("pass", id="pass")]
    for i in range(1, cells):
        text = "".join(f"line {j:04d} of cell {i}\n" for j in range(400))
        made.append(
            new_code_cell(
                f"for j in range(400):\n    print(f'line {{j:04d}} of cell {i}')",
                id=f"c{i}",
                execution_count=i,
                outputs=[new_output("stream", name="stdout", text=text)],
            )
        )
    nb = new_notebook(
        cells=made, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    )
    return nbformat.writes(nb) + "\n"


def run_in_place(server: Server, path: str) -> dict:
    """One run of the notebook's ``pass`` cell over the keep-alive connection."""
    body = json.dumps({"notebook_path": path, "cell_id": "pass", "timeout": 60})
    server.conn.request("POST", "/api/xcsh/notebook/run", body=body, headers=server.headers)
    response = server.conn.getresponse()
    result = json.loads(response.read())
    assert response.status == 200 and not result["isError"], result
    return result


def timed(rounds: int, call) -> list[float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    return times


async def write_back_times(root: Path, name: str, rounds: int) -> list[float]:
    """The per-cell write-back into the file alone, as a run in place does it after each cell."""
    store = NotebookStore(AsyncLargeFileManager(root_dir=str(root)))
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
    cell = SelectedCell(0, "pass", "code", "pass")
    times = []
    for i in range(rounds):
        t = time.perf_counter()
        # A different count each time, so every round really saves.
        outcome = await store.write_outputs(name, cell, outputs, i)
        times.append((time.perf_counter() - t) * 1000)
        assert outcome.value.cell is not None
    return times


def line(label: str, samples: list[float], base: float | None = None) -> str:
    p50, p95 = percentiles(samples)
    ratio = f"  ({p50 / base:.2f}x raw)" if base else ""
    return f"  {label:<34} p50 {p50:7.2f}  p95 {p95:7.2f}{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--cells", type=int, default=200)
    args = parser.parse_args()
    server = Server()
    root = Path(server.tmp.name) / "root"
    (root / "small.ipynb").write_text(notebook_text(3))
    (root / "large.ipynb").write_text(notebook_text(args.cells))
    large_mb = (root / "large.ipynb").stat().st_size / 2**20
    try:
        client = server.raw_client()
        raw_execute(client, "pass")
        raw = timed(args.rounds, lambda: raw_execute(client, "pass"))
        server.python("pass")  # warm the session kernel
        tool = timed(args.rounds, lambda: server.python("pass"))
        run_in_place(server, "small.ipynb")  # creates the notebook's session
        small = timed(args.rounds, lambda: run_in_place(server, "small.ipynb"))
        run_in_place(server, "large.ipynb")
        large = timed(args.rounds, lambda: run_in_place(server, "large.ipynb"))
        client.stop_channels()
    finally:
        server.stop()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "small.ipynb").write_text(notebook_text(3))
        (folder / "large.ipynb").write_text(notebook_text(args.cells))
        patch_small = asyncio.run(write_back_times(folder, "small.ipynb", args.rounds))
        patch_large = asyncio.run(write_back_times(folder, "large.ipynb", args.rounds))

    base = percentiles(raw)[0]
    print(f"pass round trip, {args.rounds} rounds (ms):")
    print(line("raw jupyter_client", raw))
    print(line("python tool", tool, base))
    print(line("run in place, 3 cells", small, base))
    print(line(f"run in place, {args.cells} cells ({large_mb:.1f} MB)", large, base))
    print("write-back alone (read and parse the file, patch one cell, save), ms:")
    print(line("3-cell notebook", patch_small))
    print(line(f"{args.cells}-cell notebook ({large_mb:.1f} MB)", patch_large))
    extra = percentiles(small)[0] - percentiles(tool)[0]
    print(f"run in place minus python tool, p50: {extra:.2f} ms (3 cells)")


if __name__ == "__main__":
    main()

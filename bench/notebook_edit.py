"""Benchmark: edit one cell of a large notebook through POST /api/xcsh/notebook.

Compares, in the same run, the p50 of an edit through the endpoint of a real Jupyter Server
against the floor `json.loads` + `json.dumps` of the same file, and prints the ratio
(target: <= 2x the floor).

    python bench/notebook_edit.py [--cells 2000] [--runs 25]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output


def build_notebook(cells: int) -> str:
    """A notebook of ``cells`` cells with stream, text and image outputs (~10 KB per cell)."""
    image = base64.b64encode(os.urandom(7800)).decode()
    nb = new_notebook()
    for i in range(cells):
        if i % 10 == 0:
            nb.cells.append(new_markdown_cell(f"## Section {i}\nSome prose " * 3))
            continue
        nb.cells.append(
            new_code_cell(
                f"result_{i} = compute({i})\nplot(result_{i})",
                execution_count=i,
                outputs=[
                    new_output("stream", name="stdout", text=f"step {i}\n" * 40),
                    new_output("display_data", data={"image/png": image, "text/plain": "<Figure>"}),
                ],
            )
        )
    return nbformat.writes(nb) + "\n"


def free_port() -> int:
    """Return a free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: str, port: int, token: str) -> subprocess.Popen[bytes]:
    """Start a real Jupyter Server with the extension and wait until it answers."""
    cmd = [
        sys.executable, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--allow-root",
        "--ServerApp.open_browser=False", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.jpserver_extensions=jupyter_xcsh=True",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return proc
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def post(port: int, token: str, body: dict[str, object]) -> dict[str, object]:
    """POST a notebook tool request and return the JSON result."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/xcsh/notebook",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def p50(samples: list[float]) -> float:
    """Median, in milliseconds."""
    return statistics.median(samples) * 1000


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root:
        text = build_notebook(args.cells)
        path = os.path.join(root, "big.ipynb")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        size_mb = len(text.encode()) / 1e6

        floor = []
        for _ in range(args.runs):
            start = time.perf_counter()
            with open(path, encoding="utf-8") as f:
                data = json.loads(f.read())
            json.dumps(data)
            floor.append(time.perf_counter() - start)

        port, token = free_port(), secrets.token_hex(16)
        server = start_server(root, port, token)
        try:
            middle = args.cells // 2 + 1
            post(port, token, {"action": "read", "notebook_path": "big.ipynb", "max_chars": 1000})
            ours = []
            for i in range(args.runs):
                body = {
                    "action": "edit",
                    "notebook_path": "big.ipynb",
                    "cell_index": middle,
                    "content": f"edited = {i}\nprint(edited)",
                }
                start = time.perf_counter()
                post(port, token, body)
                ours.append(time.perf_counter() - start)
        finally:
            server.terminate()
            server.wait(timeout=30)
        with open(path, encoding="utf-8") as f:
            nbformat.validate(nbformat.reads(f.read(), as_version=4))

    print(f"notebook: {args.cells} cells, {size_mb:.1f} MB, {args.runs} runs")
    print(f"floor json.loads+json.dumps  p50 {p50(floor):8.1f} ms")
    print(f"POST /api/xcsh/notebook edit p50 {p50(ours):8.1f} ms")
    print(f"ratio edit/floor             {p50(ours) / p50(floor):8.2f}x  (target <= 2.00x)")


if __name__ == "__main__":
    main()

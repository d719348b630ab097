"""What one call costs the server, in instructions: deterministic where timings are not.

Usage: python bench/call_cost.py [--calls 300] [--kind rest|mcp|status|raw] [--threads]
                                 [--option --XcshSettings.activity_history=False ...]

Starts a Jupyter Server with the extension under valgrind's callgrind (instrumentation off,
127.0.0.1, a free port), makes 30 calls of ``--kind`` to warm it up, then counts the
instructions the server process runs (every thread; ``--threads``: each thread's too) over
``--calls`` more, and prints them per call:

- ``rest``: ``POST /api/xcsh/python`` with ``pass`` on a warm session (keep-alive connection);
- ``mcp``: the same call as an MCP ``tools/call`` answered as JSON;
- ``status``: ``GET /api/status``, what any authenticated request of the server costs;
- ``raw``: a ``jupyter_client`` execute of ``pass`` on a kernel of the server, which costs the
  server only its watch of the kernel's messages.

On a shared machine the wall-clock ratios of ``bench/execute.py`` move with the load by more
than a change of a few percent of a call's work; the count of instructions does not (timers
and the order messages arrive in move it by about 1 %). It counts the server's own work only:
not the time spent in system calls, waiting for the GIL or for other processes. Needs
valgrind; the server runs ~50 times slower under it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute import free_port, raw_execute, server_options, wait_for_server

from tests.support.hubprocess import stop as stop_process  # execute puts the checkout on the path

#: Seconds a server under valgrind may take to answer its first request.
START_TIMEOUT = 900


class CountedServer:
    """A Jupyter Server with the extension, run by callgrind with its instrumentation off."""

    def __init__(self, options: list[str]) -> None:
        self.tmp = tempfile.mkdtemp(prefix="xcsh-call-cost-")
        root = os.path.join(self.tmp, "root")
        os.makedirs(root)
        self.runtime = os.path.join(self.tmp, "runtime")
        self.out = os.path.join(self.tmp, "callgrind.out")
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.headers = {"Authorization": f"token {self.token}", "Content-Type": "application/json"}
        self.log = open(os.path.join(self.tmp, "server.log"), "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                "--separate-threads=yes",
                f"--callgrind-out-file={self.out}.%p",
                sys.executable,
                "-m",
                "jupyter_server",
                *server_options(self.port, self.token, root),
                "--ServerApp.jpserver_extensions=jupyter_xcsh=True",
                *options,
            ],
            env={**os.environ, "JUPYTER_RUNTIME_DIR": self.runtime},
            cwd=self.tmp,  # not a checkout: `-m` would import the package from there
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{self.port}"
        wait_for_server(url, self.token, self.process, START_TIMEOUT, pause=1, answer_within=900)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=900)
        self.mcp_id = 0

    def request(self, method: str, path: str, body: object = None) -> object:
        """One request on a new connection; the JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        url = f"http://127.0.0.1:{self.port}{path}"
        req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        with urllib.request.urlopen(req, timeout=900) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def _post(self, path: str, body: dict[str, object], headers: dict[str, str]) -> None:
        self.conn.request("POST", path, body=json.dumps(body), headers=headers)
        response = self.conn.getresponse()
        answer = response.read()
        assert response.status == 200, answer

    def call(self, kind: str) -> Callable[[], object]:
        """A function making one call of ``kind``."""
        if kind == "rest":
            body = {"cells": [{"code": "pass"}]}
            return lambda: self._post("/api/xcsh/python", body, self.headers)
        if kind == "mcp":
            headers = {
                **self.headers,
                "Accept": "application/json",
                "MCP-Protocol-Version": "2025-11-25",
            }

            def mcp() -> None:
                self.mcp_id += 1
                arguments = {"cells": [{"code": "pass"}]}
                params = {"name": "python", "arguments": arguments}
                message = {"jsonrpc": "2.0", "id": self.mcp_id, "method": "tools/call"}
                self._post("/api/xcsh/mcp", {**message, "params": params}, headers)

            return mcp
        if kind == "status":

            def status() -> None:
                self.conn.request("GET", "/api/status", headers=self.headers)
                self.conn.getresponse().read()

            return status
        from jupyter_client import BlockingKernelClient

        kernel = self.request("POST", "/api/kernels", {"name": "python3"})
        assert isinstance(kernel, dict)
        client = BlockingKernelClient(
            connection_file=os.path.join(self.runtime, f"kernel-{kernel['id']}.json")
        )
        client.load_connection_file()
        client.start_channels(hb=False)
        client.wait_for_ready(timeout=600)
        return lambda: raw_execute(client, "pass")

    def control(self, *args: str) -> None:
        """``callgrind_control`` on the server's process."""
        command = ["callgrind_control", *args, str(self.process.pid)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def counts(self) -> dict[str, int]:
        """Instructions counted, per thread (the dump's files: ``<out>.<pid>.1-<thread>``)."""
        found = {}
        for path in sorted(Path(self.tmp).glob(f"callgrind.out.{self.process.pid}.1-*")):
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("totals:"):
                    found[path.name.rsplit("-", 1)[1]] = int(line.split()[1])
                    break
        return found

    def stop(self) -> None:
        """Stop the server and remove its files."""
        self.conn.close()
        stop_process(self.process, 120)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    """Count, print the instructions per call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--kind", choices=["rest", "mcp", "status", "raw"], default="rest")
    parser.add_argument("--threads", action="store_true", help="each thread's count too")
    parser.add_argument(
        "--option", action="append", default=[], help="a server option (repeatable)"
    )
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    server = CountedServer(args.option)
    try:
        call = server.call(args.kind)
        for _ in range(30):
            call()
        time.sleep(1)
        server.control("-i", "on")
        for _ in range(args.calls):
            call()
        time.sleep(1.5)  # what the calls left to the server's threads (the history's write)
        server.control("-i", "off")
        server.control("-d")
        deadline = time.monotonic() + 60
        while not server.counts() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1)
        counts = server.counts()
    finally:
        server.stop()
    total = sum(counts.values())
    print(
        f"{args.kind}: {total / args.calls / 1e6:.3f} M instructions per call ({args.calls} calls)"
    )
    if args.threads:
        for thread, count in sorted(counts.items(), key=lambda item: -item[1]):
            if count >= args.calls * 1000:  # a thread with work in the calls
                print(f"  thread {thread}: {count / args.calls / 1e6:.3f} M")
    return 0


if __name__ == "__main__":
    sys.exit(main())

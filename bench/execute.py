"""Benchmark the python tool against a raw jupyter_client on a kernel of the same server.

Usage: python bench/execute.py [--rounds 300] [--megabytes 200]

Starts a Jupyter Server (127.0.0.1, a free port) with the extension, then measures, on the same
kernel type:

1. the round trip of ``pass``: POST /api/xcsh/python on a warm session (keep-alive connection)
   vs a raw ``jupyter_client`` execute (reply and idle) on another kernel of that server;
   target: p50 overhead <= max(2 ms, 0.5 x raw p50). The same call as an MCP ``tools/call``
   (POST /api/xcsh/mcp, answered as JSON and as Server-Sent Events, as the official SDK asks)
   runs interleaved with the REST calls; target: MCP p50 - REST p50 <= 1 ms;
2. a large print (200 MB by default): the tool (JSON result) vs a raw client draining the same
   output; targets: time ratio <= 1.5 and server RSS growth <= 32 MB.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from jupyter_client import BlockingKernelClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class RssPeak:
    """Sample a process's RSS every 50 ms; ``growth`` is the peak minus the start."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = self.peak = rss_bytes(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.05)

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    @property
    def growth(self) -> int:
        return self.peak - self.start


class Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.tmp = tempfile.TemporaryDirectory()
        self.runtime = os.path.join(self.tmp.name, "runtime")
        root = os.path.join(self.tmp.name, "root")
        os.makedirs(root)
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": self.runtime}
        self.log = open(os.path.join(self.tmp.name, "server.log"), "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                "--allow-root",
                f"--IdentityProvider.token={self.token}",
                "--ServerApp.open_browser=False",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.jpserver_extensions=jupyter_xcsh=True",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.headers = {"Authorization": f"token {self.token}", "Content-Type": "application/json"}
        end = time.monotonic() + 60
        while True:
            try:
                self.request("GET", "/api/status")
                break
            except OSError:
                if time.monotonic() > end or self.process.poll() is not None:
                    raise
                time.sleep(0.2)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=900)
        self.mcp_id = 0

    def request(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers=self.headers
        )
        with urllib.request.urlopen(req, timeout=900) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def python(self, code: str, timeout: float = 600) -> dict:
        """One tool call over the persistent (keep-alive) connection."""
        body = json.dumps({"cells": [{"code": code}], "timeout": timeout})
        self.conn.request("POST", "/api/xcsh/python", body=body, headers=self.headers)
        response = self.conn.getresponse()
        result = json.loads(response.read())
        assert response.status == 200, result
        return result

    def mcp_python(self, code: str, *, sse: bool, timeout: float = 600) -> dict:
        """The same call as an MCP ``tools/call`` over the keep-alive connection."""
        self.mcp_id += 1
        arguments = {"cells": [{"code": code}], "timeout": timeout}
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.mcp_id,
                "method": "tools/call",
                "params": {"name": "python", "arguments": arguments},
            }
        )
        accept = "application/json, text/event-stream" if sse else "application/json"
        headers = {**self.headers, "Accept": accept, "MCP-Protocol-Version": "2025-11-25"}
        self.conn.request("POST", "/api/xcsh/mcp", body=body, headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw
        if sse:
            assert response.getheader("Content-Type", "").startswith("text/event-stream")
            raw = [line for line in raw.split(b"\n") if line.startswith(b"data:")][-1][5:]
        message = json.loads(raw)
        assert message["id"] == self.mcp_id, message
        result: dict = message["result"]
        return result

    def raw_client(self) -> BlockingKernelClient:
        kernel = self.request("POST", "/api/kernels", {"name": "python3"})
        assert isinstance(kernel, dict)
        client = BlockingKernelClient(
            connection_file=os.path.join(self.runtime, f"kernel-{kernel['id']}.json")
        )
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        return client

    def stop(self) -> None:
        self.conn.close()
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        self.tmp.cleanup()


def raw_execute(client: BlockingKernelClient, code: str) -> int:
    """Execute and drain IOPub until idle, then take the reply; return output chars seen."""
    msg_id = client.execute(code)
    seen = 0
    while True:
        msg = client.get_iopub_msg(timeout=600)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            seen += len(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while client.get_shell_msg(timeout=600)["parent_header"].get("msg_id") != msg_id:
        pass
    return seen


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    server = Server()
    try:
        server.python("pass")  # warm the session kernel
        server.mcp_python("pass", sse=False)
        server.mcp_python("pass", sse=True)
        # Interleaved, so REST and MCP see the same machine load.
        paths = {
            "rest": lambda: server.python("pass"),
            "mcp json": lambda: server.mcp_python("pass", sse=False),
            "mcp sse": lambda: server.mcp_python("pass", sse=True),
        }
        times: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.rounds):
            for name, call in paths.items():
                t = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - t) * 1000)
        client = server.raw_client()
        raw_execute(client, "pass")
        raw_times = []
        for _ in range(args.rounds):
            t = time.perf_counter()
            raw_execute(client, "pass")
            raw_times.append((time.perf_counter() - t) * 1000)
        tool_p50, tool_p95 = percentiles(times["rest"])
        raw_p50, raw_p95 = percentiles(raw_times)
        budget = max(2.0, 0.5 * raw_p50)
        print(f"pass round trip, {args.rounds} rounds (ms):")
        print(f"  tool p50 {tool_p50:.2f}  p95 {tool_p95:.2f}")
        for name in ("mcp json", "mcp sse"):
            p50, p95 = percentiles(times[name])
            print(f"  {name:8} p50 {p50:.2f}  p95 {p95:.2f}")
        print(f"  raw  p50 {raw_p50:.2f}  p95 {raw_p95:.2f}")
        overhead = tool_p50 - raw_p50
        verdict = "OK" if overhead <= budget else "OVER"
        print(f"  overhead p50 {overhead:.2f} ms (budget {budget:.2f} ms) {verdict}")
        for name in ("mcp json", "mcp sse"):
            extra = percentiles(times[name])[0] - tool_p50
            verdict = "OK" if extra <= 1.0 else "OVER"
            print(f"  {name} over REST p50 {extra:+.2f} ms (budget 1.00 ms) {verdict}")

        size = args.megabytes * 1024 * 1024
        code = (
            "import sys\nline = 'x' * 1023 + '\\n'\n"
            f"for _ in range({size // 1024}):\n    sys.stdout.write(line)\n"
        )
        with RssPeak(server.process.pid) as raw_rss:
            t = time.perf_counter()
            seen = raw_execute(client, code)
            raw_seconds = time.perf_counter() - t
        assert seen == size, seen
        with RssPeak(server.process.pid) as tool_rss:
            t = time.perf_counter()
            result = server.python(code)
            tool_seconds = time.perf_counter() - t
        assert result["totalBytes"] == size, result["totalBytes"]
        growth = tool_rss.growth / 2**20
        print(f"  (server RSS growth while the raw client ran: {raw_rss.growth / 2**20:.1f} MB)")
        ratio = tool_seconds / raw_seconds
        print(f"{args.megabytes} MB print:")
        print(
            f"  tool {tool_seconds:.2f} s, raw {raw_seconds:.2f} s, ratio {ratio:.2f} "
            f"({'OK' if ratio <= 1.5 else 'OVER'} <= 1.5)"
        )
        print(f"  server RSS growth {growth:.1f} MB ({'OK' if growth <= 32 else 'OVER'} <= 32)")
        client.stop_channels()
    finally:
        server.stop()


if __name__ == "__main__":
    main()

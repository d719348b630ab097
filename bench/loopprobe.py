"""The loop probe: how long a server's event loop is blocked while a workload runs.

A Jupyter Server answers every request on one event loop: a call that keeps it busy 300 ms
delays every other client by up to 300 ms. The probe asks a cheap endpoint (``/api/status`` by
default) every 20 ms over its own keep-alive connection, from its own process (so the
workload's client threads never delay it), and records each answer's latency: its p50 is the
cost of a cheap request, its p99 and max how long the loop was blocked. Compare them with an
idle probe of the same server in the same run (``Probe.idle``)::

    idle = LoopProbe.measure_idle(port, token, seconds=3)
    with LoopProbe(port, token) as probe:
        workload()
    print(probe.summary().line("edits", idle))

Run alone it probes a running server until interrupted (Ctrl-C prints the figures)::

    python bench/loopprobe.py --port 8888 --token TOKEN [--interval 0.02] [--path /api/status]
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Seconds between two probes (a request that takes longer delays the next one).
INTERVAL = 0.02
#: The endpoint probed: authenticated, answered from memory, a few lines of handler code.
PATH = "/api/status"


def percentile(samples: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``samples`` (nearest rank); 0 when there are none."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Summary:
    """The probe's latencies over a workload, in milliseconds."""

    count: int
    p50: float
    p99: float
    max: float
    #: Probes slower than 20 ms / 50 ms: loop blocks the issue's targets count.
    over_20: int
    over_50: int
    #: Probes the server answered with another status than 200, by status.
    failed: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, samples: list[float], failed: dict[int, int] | None = None) -> Summary:
        """The summary of latencies ``samples`` (milliseconds) and of ``failed`` answers."""
        return cls(
            len(samples),
            percentile(samples, 0.5),
            percentile(samples, 0.99),
            max(samples, default=0.0),
            sum(1 for s in samples if s > 20),
            sum(1 for s in samples if s > 50),
            tuple(sorted((failed or {}).items())),
        )

    def line(self, label: str, idle: Summary | None = None) -> str:
        """One line of figures, with the ratios of p50/p99 to the ``idle`` probe's."""
        text = (
            f"{label:<34} probe p50 {self.p50:6.1f}  p99 {self.p99:7.1f}  max {self.max:7.1f} ms"
            f"  >20ms {self.over_20:4d}/{self.count:<5d}"
        )
        if idle is not None and idle.p50 > 0 and idle.p99 > 0:
            text += f"  ({self.p50 / idle.p50:4.1f}x / {self.p99 / idle.p99:5.1f}x idle)"
        if self.failed:
            text += "  answered " + ", ".join(f"{n}x HTTP {code}" for code, n in self.failed)
        return text


class LoopProbe:
    """Probe a server's loop from a child process while the ``with`` block runs."""

    def __init__(
        self, port: int, token: str, *, interval: float = INTERVAL, path: str = PATH
    ) -> None:
        self.port = port
        self.token = token
        self.interval = interval
        self.path = path
        self.latencies: list[float] = []
        #: Answers other than 200, by status (counted, timed like the others).
        self.failed: dict[int, int] = {}
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start probing (the child process's first request is made before this returns)."""
        self._process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                f"--port={self.port}",
                f"--token={self.token}",
                f"--interval={self.interval}",
                f"--path={self.path}",
                "--child",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != "ready":
            raise RuntimeError("the loop probe did not start")

    def stop(self) -> list[float]:
        """Stop probing; every probe's latency in milliseconds (also kept in ``latencies``)."""
        assert self._process is not None
        out, _ = self._process.communicate("", timeout=120)
        result = json.loads(out)
        self.latencies = [float(t) for t in result["latencies"]]
        self.failed = {int(code): n for code, n in result["failed"].items()}
        self._process = None
        return self.latencies

    def summary(self) -> Summary:
        """The figures of the last probing."""
        return Summary.of(self.latencies, self.failed)

    def __enter__(self) -> LoopProbe:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self.stop()

    @classmethod
    def measure_idle(cls, port: int, token: str, seconds: float = 3.0) -> Summary:
        """The probe's figures while nothing else runs (the floor of the same run)."""
        with cls(port, token) as probe:
            time.sleep(seconds)
        return probe.summary()


def probe(
    port: int,
    token: str,
    interval: float,
    path: str,
    stop: threading.Event,
    ready: Callable[[], None] = lambda: None,
    failed: dict[int, int] | None = None,
) -> list[float]:
    """GET ``path`` every ``interval`` seconds until ``stop``; each latency in milliseconds.

    ``ready`` is called once the first answer came (the connection is open; not counted).
    A server error (5xx) is timed too and counted by status in ``failed`` (the loop did
    answer: e.g. jupyter_server 2.x answers 500 to ``/api/status`` while a kernel it starts
    is in its list without its ``last_activity`` yet, a window of one loop iteration); any
    other answer but 200 (a wrong token or path) stops the probe.
    """
    headers = {"Authorization": f"token {token}"}
    failed = {} if failed is None else failed
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    latencies: list[float] = []
    following = time.monotonic()
    first = True
    while not stop.is_set():
        start = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200 and (first or response.status < 500):
            raise RuntimeError(f"the probe got {response.status} from {path}")
        if first:  # the connection is open: the workload may start
            ready()
            first = False
        else:
            latencies.append((time.perf_counter() - start) * 1000)
            if response.status != 200:
                failed[response.status] = failed.get(response.status, 0) + 1
        following += interval
        pause = following - time.monotonic()
        if pause > 0:
            stop.wait(pause)
        else:
            following = time.monotonic()  # late: the next probe goes now, not a burst
    conn.close()
    return latencies


def main() -> None:
    """Probe a running server (``--child``: as ``LoopProbe``'s process, until stdin closes)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--interval", type=float, default=INTERVAL)
    parser.add_argument("--path", default=PATH)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    stop = threading.Event()
    if args.child:

        def wait_for_eof() -> None:
            sys.stdin.read()
            stop.set()

        threading.Thread(target=wait_for_eof, daemon=True).start()
        ready = functools.partial(print, "ready", flush=True)
        failed: dict[int, int] = {}
        latencies = probe(args.port, args.token, args.interval, args.path, stop, ready, failed)
        rounded = [round(t, 3) for t in latencies]
        print(json.dumps({"latencies": rounded, "failed": failed}), flush=True)
        return
    result: list[float] = []
    failures: dict[int, int] = {}
    worker = threading.Thread(
        target=lambda: result.extend(
            probe(args.port, args.token, args.interval, args.path, stop, failed=failures)
        )
    )
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    except KeyboardInterrupt:
        stop.set()
        worker.join()
    print(Summary.of(result, failures).line(args.path))


if __name__ == "__main__":
    main()

"""Run a Jupyter Server that reports what blocks its event loop (a diagnostic for ``loop.py``).

A watchdog thread in the server's process sees the loop's heartbeat (a callback every 2 ms)
stop: while it is stopped for more than ``--threshold`` ms it samples the loop thread's stack
every millisecond. On SIGTERM (or Ctrl-C) it writes the stalls to ``--out``: each stall's
length and the lines of this package and jupyter_server it spent its samples in, most first.

    python bench/loopwatch.py --out stalls.txt -- [jupyter server options...]

``loop.py --watch FILE`` runs its server this way.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
import threading
import time
import traceback
from typing import Any

#: Seconds between two heartbeats of the loop, and between two samples of a stalled loop.
BEAT = 0.002
SAMPLE = 0.001


class Watchdog:
    """Sample the loop thread's stack while the loop misses its heartbeats."""

    def __init__(self, threshold_ms: float) -> None:
        self.threshold = threshold_ms / 1000
        self.last_beat = time.monotonic()
        self.loop_thread: int | None = None
        #: (stall seconds, Counter of the innermost relevant frames) per stall.
        self.stalls: list[tuple[float, collections.Counter[str]]] = []

    def beat(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop's heartbeat (reschedules itself)."""
        self.last_beat = time.monotonic()
        loop.call_later(BEAT, self.beat, loop)

    def install(self) -> None:
        """Start beating once the server's loop runs (patched into ``ServerApp.start_ioloop``)."""
        from jupyter_server.serverapp import ServerApp

        original = ServerApp.start_ioloop

        def start_ioloop(app: Any) -> None:
            loop = asyncio.get_event_loop()
            self.loop_thread = threading.get_ident()
            loop.call_soon(self.beat, loop)
            threading.Thread(target=self.watch, daemon=True).start()
            original(app)

        ServerApp.start_ioloop = start_ioloop  # type: ignore[method-assign]

    def watch(self) -> None:
        """Sample the loop thread whenever it has not beaten for ``threshold`` seconds."""
        while True:
            time.sleep(SAMPLE)
            late = time.monotonic() - self.last_beat
            if late < self.threshold:
                continue
            start = self.last_beat
            places: collections.Counter[str] = collections.Counter()
            while self.last_beat == start:
                frame = sys._current_frames().get(self.loop_thread or 0)
                if frame is not None:
                    places[where(frame)] += 1
                time.sleep(SAMPLE)
            self.stalls.append((time.monotonic() - start, places))

    def report(self, out: str) -> None:
        """Write the stalls, longest first, to ``out``."""
        with open(out, "w", encoding="utf-8") as f:
            total: collections.Counter[str] = collections.Counter()
            for seconds, places in sorted(self.stalls, key=lambda s: -s[0]):
                f.write(f"stall {seconds * 1000:.0f} ms\n")
                for place, count in places.most_common(4):
                    f.write(f"  {count:5d} samples  {place}\n")
                total.update(places)
            f.write("\nall stalls, by place:\n")
            for place, count in total.most_common(30):
                f.write(f"  {count:5d} samples  {place}\n")


def where(frame: Any) -> str:
    """The stack's innermost frames, down to the first of this package or jupyter_server."""
    stack = traceback.extract_stack(frame)
    parts = []
    for entry in reversed(stack):
        parts.append(f"{entry.filename.rsplit('/', 2)[-1]}:{entry.lineno} {entry.name}")
        if "jupyter_xcsh" in entry.filename or "jupyter_server/" in entry.filename:
            break
        if len(parts) >= 6:
            break
    return " < ".join(parts)


def main() -> None:
    """Start the server under the watchdog."""
    args = sys.argv[1:]
    out = "loopwatch.txt"
    threshold = 10.0
    while args and args[0] != "--":
        option = args.pop(0)
        if option.startswith("--out="):
            out = option.split("=", 1)[1]
        elif option.startswith("--threshold="):
            threshold = float(option.split("=", 1)[1])
    args = args[1:]
    watchdog = Watchdog(threshold)
    watchdog.install()

    def stop(*_: object) -> None:
        watchdog.report(out)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    sys.argv = ["jupyter-server", *args]
    from jupyter_server.serverapp import main as server_main

    try:
        server_main()
    finally:
        watchdog.report(out)


if __name__ == "__main__":
    main()

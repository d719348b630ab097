"""Benchmark the OutputSink: 1 GB of output through a real ArtifactStore.

Reports the peak RSS growth while pushing (target: at most 3 x the limit + a few MB: the sink
keeps twice the limit of the stream's end and at most the limit of its start) and the
throughput against a plain ``file.write`` of the same bytes in the same run (target: at least
0.5x of it), the best of five alternating runs of each: on a shared VM the kernel's side of
the writes (page cache, file system) sometimes takes twice its usual system time for minutes,
while the sink's own, user-space work stays the same. Usage::

    python bench/output_sink.py            # 1 GB in 64 KiB chunks
    python bench/output_sink.py --gb 0.1   # quicker
    python bench/output_sink.py --check    # exit 1 when a target is missed
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# Runs from a source checkout whether or not the package is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.outputs.sink import DEFAULT_MAX_BYTES, OutputSink, format_size

MIB = 1024 * 1024
SLACK = 4 * MIB  # "a few MB" of allowed growth beyond 2 x the limit


def status_kib(field: str) -> int:
    """Read a ``VmHWM``/``VmRSS`` figure (KiB) of this process from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_rss() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so each phase measures its own peak."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def make_chunk(size: int) -> str:
    """About ``size`` bytes of typical output: 100-byte ASCII lines."""
    line = "".join(chr(ord("a") + i % 26) for i in range(99)) + "\n"
    return (line * (size // len(line) + 1))[:size]


def plain_write(path: str, data: bytes, count: int) -> float:
    """Seconds to write ``data`` ``count`` times with a plain buffered file."""
    start = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(count):
            f.write(data)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return elapsed


def sink_write(store: ArtifactStore, chunk: str, count: int, limit: int) -> tuple[float, int, int]:
    """Seconds to push ``chunk`` ``count`` times; the peak RSS growth and the artifact size."""
    delivered = 0

    def on_chunk(text: str) -> None:
        nonlocal delivered
        delivered += len(text)

    reset_peak_rss()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    sink = OutputSink(
        max_bytes=limit, open_artifact=lambda: store.create("python"), on_chunk=on_chunk
    )
    for _ in range(count):
        sink.push(chunk)
    result = sink.dump()
    elapsed = time.perf_counter() - start
    growth = (status_kib("VmHWM") - before) * 1024
    assert result.artifact_id is not None
    path = store.resolve(result.artifact_id)
    size = os.path.getsize(path)
    assert size == result.total_bytes == count * len(chunk), "artifact is not the whole stream"
    assert delivered == count * len(chunk), "live chunks lost text"
    os.unlink(path)
    return elapsed, growth, size


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0, help="GiB to push (default 1)")
    parser.add_argument("--chunk-kib", type=int, default=64, help="chunk size (default 64 KiB)")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_MAX_BYTES, help="sink limit in bytes (default 8192)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs of each; best time kept")
    parser.add_argument("--dir", default=None, help="where to write (default: the temp dir)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    chunk = make_chunk(args.chunk_kib * 1024)
    data = chunk.encode()
    count = max(1, int(args.gb * 1024**3 / len(data)))
    total = count * len(data)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store = ArtifactStore(tmp)
        plain_times, sink_times, growths = [], [], []
        for _ in range(args.repeat):
            # Start each phase with no dirty pages, so neither pays for the other's writeback.
            os.sync()
            plain_times.append(plain_write(os.path.join(tmp, "plain.bin"), data, count))
            os.sync()
            elapsed, growth, _ = sink_write(store, chunk, count, args.limit)
            sink_times.append(elapsed)
            growths.append(growth)

    plain, sink = min(plain_times), min(sink_times)
    growth = max(growths)
    budget = 3 * args.limit + SLACK
    ratio = plain / sink
    print(f"pushed            {format_size(total)} in {count} chunks of {format_size(len(data))}")
    print(f"plain file.write  {total / plain / MIB:8.0f} MiB/s  ({plain:.2f} s)")
    print(f"OutputSink.push   {total / sink / MIB:8.0f} MiB/s  ({sink:.2f} s)")
    print(f"throughput ratio  {ratio:8.2f}x of plain file.write (target >= 0.50x)")
    print(
        f"peak RSS growth   {format_size(growth):>8}  "
        f"(target <= {format_size(budget)} = 3 x {format_size(args.limit)} + {format_size(SLACK)})"
    )
    ok = ratio >= 0.5 and growth <= budget
    print("targets           " + ("met" if ok else "MISSED"))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())

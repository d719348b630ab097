"""Programs the tests start as processes of their own: a port for them, their start, their stop.

A Jupyter Server started this way runs exactly as a user's does (``python -m jupyter_server``),
which pytest-jupyter's in-process servers do not: they never start an extension
(``_start_jupyter_server_extension``), and they share pytest's process.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(root: Path, runtime: Path, port: int, token: str, *options: str) -> list[str]:
    """``python -m jupyter_server`` with the extension, on 127.0.0.1:``port``, and ``options``."""
    return [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.runtime_dir={runtime}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}",
        "--ServerApp.jpserver_extensions={'jupyter_xcsh': True}",
        "--allow-root",
        *options,
    ]


def wait_for_http(url: str, process: subprocess.Popen[Any], timeout: float = 60) -> None:
    """Wait until ``url`` answers (any status), ``process`` serving it; raise if it exits."""
    end = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def stop_process(process: subprocess.Popen[Any]) -> None:
    """Stop a process a test started: SIGTERM, then SIGKILL if it lingers past 30 s."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)

"""Once a server has started, its startup heap is frozen out of full garbage collections.

``XcshSettings.freeze_startup_heap``: the extension collects, then ``gc.freeze``s the objects
the started server holds (``memory.freeze_startup_heap``). It happens when the server's event
loop starts (``_start_jupyter_server_extension``), which pytest-jupyter's in-process servers
never run: these tests start real server processes and read what they log.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .gateway import free_port

pytestmark = pytest.mark.timeout(180)

FROZEN = re.compile(r"jupyter_xcsh: (\d+) objects of the server's startup heap frozen")
INTERVENTIONS = "jupyter_xcsh process-wide interventions on:"


def started_server_log(tmp_path: Path, *options: str) -> str:
    """Start a server with the extension and ``options``; its log once it has answered."""
    port, token = free_port(), "startup-heap-token"
    log = tmp_path / "server.log"
    command = [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--ServerApp.root_dir={tmp_path}",
        f"--ServerApp.runtime_dir={tmp_path / 'runtime'}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}",
        "--ServerApp.jpserver_extensions={'jupyter_xcsh': True}",
        "--allow-root",
        *options,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {token}"}
        )
        deadline = time.monotonic() + 120  # a loaded machine
        while True:
            assert process.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(request, timeout=10):
                    break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        # The freeze runs as the loop starts, before the first answer; a moment for the log.
        time.sleep(0.5)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
    return log.read_text()


def test_a_started_server_freezes_its_startup_heap_once(tmp_path):
    text = started_server_log(tmp_path)

    frozen = [int(n) for n in FROZEN.findall(text)]
    assert len(frozen) == 1, text
    # The server, its configuration and the extensions: far more than a bare interpreter's.
    assert frozen[0] > 20_000
    (interventions,) = [line for line in text.splitlines() if INTERVENTIONS in line]
    assert "startup heap frozen once started" in interventions


def test_the_freeze_can_be_turned_off(tmp_path):
    text = started_server_log(tmp_path, "--XcshSettings.freeze_startup_heap=False")

    assert FROZEN.search(text) is None, text
    (interventions,) = [line for line in text.splitlines() if INTERVENTIONS in line]
    assert "startup heap frozen" not in interventions

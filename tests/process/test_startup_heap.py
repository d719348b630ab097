"""Once a server has started, its startup heap is frozen out of full garbage collections.

``XcshSettings.freeze_startup_heap``: the extension collects, then ``gc.freeze``s the objects
the started server holds (``memory.freeze_startup_heap``). It happens when the server's event
loop starts (``_start_jupyter_server_extension``), which pytest-jupyter's in-process servers
never run: these tests start real server processes and read what they log.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import free_port, server_command, stop_process, wait_for_http

pytestmark = [pytest.mark.timeout(180), pytest.mark.process]

FROZEN = re.compile(r"jupyter_xcsh: (\d+) objects of the server's startup heap frozen")
INTERVENTIONS = "jupyter_xcsh process-wide interventions on:"


def started_server_log(tmp_path: Path, *options: str) -> str:
    """Start a server with the extension and ``options``; its log once it has answered."""
    port = free_port()
    log = tmp_path / "server.log"
    command = server_command(tmp_path, tmp_path / "runtime", port, "startup-heap-token", *options)
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_http(f"http://127.0.0.1:{port}/api", process, timeout=120)  # a loaded machine
        except (RuntimeError, OSError) as e:
            raise AssertionError(log.read_text()) from e
        # The freeze runs as the loop starts, before the first answer; a moment for the log.
        time.sleep(0.5)
    finally:
        stop_process(process)
    return log.read_text()


@pytest.mark.slow
def test_a_started_server_freezes_its_startup_heap_once(tmp_path):
    text = started_server_log(tmp_path)

    frozen = [int(n) for n in FROZEN.findall(text)]
    assert len(frozen) == 1, text
    # The server, its configuration and the extensions: far more than a bare interpreter's.
    assert frozen[0] > 20_000
    (interventions,) = [line for line in text.splitlines() if INTERVENTIONS in line]
    assert "startup heap frozen once started" in interventions


@pytest.mark.slow
def test_the_freeze_can_be_turned_off(tmp_path):
    text = started_server_log(tmp_path, "--XcshSettings.freeze_startup_heap=False")

    assert FROZEN.search(text) is None, text
    (interventions,) = [line for line in text.splitlines() if INTERVENTIONS in line]
    assert "startup heap frozen" not in interventions

"""Fuzz every operation of ``rest-api.yml`` with Schemathesis against a live Jupyter Server.

Usage: ``python -m tests.fuzz.run_fuzz --st .venv-fuzz/bin/st`` (``scripts/fuzz.sh`` sets it up).

The server runs from this interpreter's environment with the extension enabled, in a fresh
root holding a few real notebooks, a folder and an artifact. Schemathesis (its own virtualenv:
it installs pytest plugins we do not want in the test runs) reads the OpenAPI description, so
every operation in it is fuzzed, new endpoints included, and checks each answer against it.
Dictionaries of the real notebook paths, folders, session names and artifact ids let the
generated requests reach the success paths, not only the 404s.

Fails (exit 1) when Schemathesis reports a failure or when the server logged a 5xx or a
traceback; prints the figures (operations, test cases, seconds) either way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_notebook

from tests.support.notebooks import jupyter_text, sample_notebook

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "jupyter_xcsh" / "rest-api.yml"

#: Checks that hold for this API. Left out: ``positive_data_acceptance`` (a schema-valid
#: request may still be a 400 by rest-api.yml, e.g. a cell index past the end or a working directory
#: that does not exist: no schema can know the files) and ``use_after_free`` /
#: ``ensure_resource_availability`` (no create/delete pairs linked in the description) and
#: ``missing_required_header`` (it wants a 401 without credentials; Jupyter Server's APIs answer
#: 403, which ``ignored_auth`` accepts).
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "unsupported_method",
    "allow_header_conformance",
    "ignored_auth",
]

#: What the server log must never show: a 5xx answer or a Python traceback.
SERVER_FAULT = re.compile(r"\] 5\d\d [A-Z]+ |Traceback \(most recent call last\)")


def free_port() -> int:
    """A TCP port nobody listens on now (the server refuses to retry another)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_root(root: Path) -> list[str]:
    """Fill ``root`` with notebooks of every shape the tool meets; return their API paths."""
    legacy = sample_notebook(minor=4)
    notebooks = {
        "analysis.ipynb": sample_notebook(),
        "dir/report.ipynb": sample_notebook(),
        "legacy.ipynb": legacy,
        "empty.ipynb": new_notebook(),
        "dir/100% done.ipynb": sample_notebook(),
    }
    (root / "dir" / "data").mkdir(parents=True)
    for path, nb in notebooks.items():
        nbformat.validate(nb)
        (root / path).write_text(jupyter_text(nb), encoding="utf-8")
    return list(notebooks)


class Server:
    """A Jupyter Server with the extension, started in its own process group."""

    def __init__(self, root: Path, work: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "server.log"
        env = dict(os.environ)
        env["JUPYTER_RUNTIME_DIR"] = str(work / "runtime")
        env["JUPYTER_CONFIG_DIR"] = str(work / "config")  # no user config
        command = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.open_browser=False",
            "--ServerApp.jpserver_extensions={'jupyter_xcsh': True}",
            "--allow-root",
            # A small buffer so outputs spill to artifacts often; few kernels on two cores.
            "--XcshSettings.max_output_bytes=2048",
            "--XcshSettings.max_sessions=2",
        ]
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

    def request(self, method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
        """Call the server (authenticated); return the JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())

    def wait_ready(self, timeout: float = 180) -> None:
        """Wait until the extension answers (the server may take a while on a busy machine)."""
        end = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"server exited early; see {self.log_path}")
            try:
                self.request("GET", "/api/xcsh/sessions", timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > end:
                    message = f"server not ready in {timeout} s; see {self.log_path}"
                    raise SystemExit(message) from None
                time.sleep(0.5)

    def stop(self) -> None:
        """Stop the server (it shuts its kernels down); kill its group if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def make_config(path: Path, server: Server, notebooks: list[str], artifact: str) -> None:
    """Write the Schemathesis configuration: auth, checks, and dictionaries of real values."""
    # Real names, so requests succeed, and names no generator is likely to hit: each of the
    # latter was once a 500 (issue 8) and must stay a 4xx.
    hostile_paths = ["x" * 256 + ".ipynb", "a\x00b.ipynb", "/".join(["d" * 200] * 25), "../out"]
    dictionaries = {
        "notebooks": notebooks + hostile_paths + ["dir", "/etc/hostname", "%s%d.ipynb"],
        "folders": ["", "dir", "dir/data", "analysis.ipynb", *hostile_paths],
        "sessions": ["default", "fuzz"],
        "artifacts": [artifact],
        "modes": ["session"],
    }
    lines = [
        'generation.database = "none"',
        "",
        "[auth.openapi.token]",
        f'api_key = "token {server.token}"',
        "",
        "[checks.positive_data_acceptance]",
        "enabled = false",
        "",
    ]
    for name, values in dictionaries.items():
        lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}", ""]
    lines.append("[parameters]")
    bindings = {
        "body.notebook_path": ("notebooks", 0.8),
        "body.cwd": ("folders", 0.8),
        "body.session": ("sessions", 0.8),
        # Mostly reuse cached kernels: a per-call kernel costs seconds on two cores.
        "body.mode": ("modes", 0.8),
        "path.name": ("sessions", 0.5),
        "path.artifact_id": ("artifacts", 0.8),
        "body.path": ("folders", 0.5),  # the files tool
    }
    for key, (dictionary, probability) in bindings.items():
        lines.append(f'"{key}" = {{ dictionary = "{dictionary}", probability = {probability} }}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    """Run the fuzz session; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--st", default=str(REPO / ".venv-fuzz" / "bin" / "st"))
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="xcsh-fuzz-"))
    root = work / "root"
    root.mkdir()
    notebooks = make_root(root)
    server = Server(root, work)
    started = time.monotonic()
    try:
        server.wait_ready()
        # One call whose output spills, so the artifact endpoint has something to serve.
        result = server.request(
            "POST", "/api/xcsh/python", {"cells": [{"code": "print('x' * 9000)"}]}
        )
        artifact = result["artifactId"]
        config = work / "schemathesis.toml"
        make_config(config, server, notebooks, artifact)
        command = [
            str(Path(args.st).absolute()),
            "--config-file",
            str(config),
            "run",
            str(SPEC),
            "--url",
            server.url,
            "--seed",
            str(args.seed),
            "--max-examples",
            str(args.max_examples),
            "--workers",
            "1",
            "--checks",
            ",".join(CHECKS),
            "--request-timeout",
            "120",
            "--no-color",
            "--report",
            "ndjson",
            "--report-ndjson-path",
            str(work / "events.ndjson"),
        ]
        print("$", " ".join(command), flush=True)
        run = subprocess.run(command, cwd=work, check=False)
    finally:
        server.stop()
    seconds = time.monotonic() - started
    faults = [
        line
        for line in server.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        if SERVER_FAULT.search(line)
    ]
    for line in faults:
        print("server:", line)
    ok = run.returncode == 0 and not faults
    kept = args.keep or not ok
    print(
        f"fuzz: schemathesis exit {run.returncode}, {len(faults)} server faults, {seconds:.0f} s"
        + (f" (server log {server.log_path})" if kept else "")
    )
    if not kept:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Deployment tests: jupyter-xcsh behind a real JupyterHub, reached only through its proxy.

They run in their own environment and pytest process (``scripts/check.sh``: ``.venv-hub`` with
``jupyterhub``, JupyterLab, the official MCP SDK client and Playwright; the proxy,
``configurable-http-proxy``, from npm). The hub is started here on 127.0.0.1 with two users
(``DummyAuthenticator`` with a password) whose single-user servers ``SimpleLocalProcessSpawner``
starts from this environment, where jupyter-xcsh is installed and enabled by its own
configuration file, as a deployment's image has it.

``XCSH_CHP`` names the proxy's executable (default: ``.cache/chp`` in the repository).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the helpers shared with tests/ (tests.browser, tests.threads)

from tests.browser import CHROMIUM_ARGS, chromium_executable  # noqa: E402

CHP = os.environ.get("XCSH_CHP") or str(
    REPO / ".cache" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
)
#: Seconds the hub, and then a single-user server, may take to start on a loaded machine.
STARTUP_TIMEOUT = 120
PASSWORD = "xcsh-hub-test-password"
#: Where screenshots and the hub's log go (XCSH_UI_SCREENSHOTS to choose).
ARTIFACTS = Path(os.environ.get("XCSH_UI_SCREENSHOTS") or REPO / "test-artifacts" / "hub")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Let the process end: stop AnyIO worker threads left behind (``tests.threads``)."""
    from tests.threads import stop_anyio_workers

    stop_anyio_workers()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Response:
    """An HTTP answer: status, headers and body (the body parsed as JSON when it is JSON)."""

    status: int
    headers: dict[str, str]
    body: Any


def http(
    method: str,
    url: str,
    *,
    token: str | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 180,
) -> Response:
    """One HTTP request that never raises for a status (redirects are not followed)."""
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"token {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=sent)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as answer:
            status, got, raw = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as e:
        status, got, raw = e.code, dict(e.headers), e.read()
    text = raw.decode(errors="replace")
    try:
        parsed: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        parsed = text
    return Response(status, got, parsed)


def wait_until_serving(process: subprocess.Popen[bytes], url: str, name: str, log: Any) -> None:
    """Wait until ``url`` answers 200 (within ``STARTUP_TIMEOUT``), failing if ``process`` ends."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        assert process.poll() is None, f"{name} exited with {process.returncode}; see {log.name}"
        try:
            if http("GET", url, timeout=5).status == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{name} did not start; see {log.name}"
        time.sleep(0.25)


def stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM ``process``, then SIGKILL after ``grace`` seconds."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_executable(), args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


class Hub:
    """A running JupyterHub: its public URL, an admin token, and helpers on its REST API."""

    def __init__(self, url: str, admin_token: str, homes: Path) -> None:
        self.url = url
        self.admin_token = admin_token
        self.homes = homes

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the hub's REST API as the test's admin service; the answer must be a 2xx."""
        answer = http(method, f"{self.url}hub/api/{path}", token=self.admin_token, body=body)
        assert 200 <= answer.status < 300, (method, path, answer.status, answer.body)
        return answer.body

    def token(self, user: str, scopes: list[str] | None = None) -> str:
        """A new API token of ``user`` (with ``scopes``, else the user's own)."""
        body: dict[str, Any] = {"note": "xcsh deploy test", "expires_in": 3600}
        if scopes is not None:
            body["scopes"] = scopes
        return str(self.api("POST", f"users/{user}/tokens", body)["token"])

    def start_server(self, user: str) -> str:
        """Start ``user``'s single-user server (if not running); its public URL."""
        model = self.api("GET", f"users/{user}")
        if not model["servers"].get("", {}).get("ready"):
            answer = http("POST", f"{self.url}hub/api/users/{user}/server", token=self.admin_token)
            assert answer.status in (201, 202, 400), answer  # 400: already starting
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while not self.api("GET", f"users/{user}")["servers"].get("", {}).get("ready"):
                assert time.monotonic() < deadline, f"{user}'s server did not start"
                time.sleep(0.5)
        return f"{self.url}user/{user}/"

    def home(self, user: str) -> Path:
        """``user``'s home folder: the root of their single-user server."""
        return self.homes / user


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A JupyterHub on 127.0.0.1 with users alice and bob (each a server to start)."""
    if not os.access(CHP, os.X_OK):
        pytest.exit(f"configurable-http-proxy not found at {CHP} (set XCSH_CHP)", 2)
    base = tmp_path_factory.mktemp("hub")
    homes = base / "home"
    homes.mkdir()
    port, api_port, hub_port = free_port(), free_port(), free_port()
    url = f"http://127.0.0.1:{port}/"
    admin_token = secrets.token_hex(32)
    config = f"""
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.public_url = {url!r}
c.JupyterHub.db_url = {f"sqlite:///{base / 'hub.sqlite'}"!r}
c.JupyterHub.cookie_secret_file = {str(base / "cookie_secret")!r}
c.JupyterHub.pid_file = {str(base / "hub.pid")!r}
c.ConfigurableHTTPProxy.command = [{CHP!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.pid_file = {str(base / "proxy.pid")!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {PASSWORD!r}
c.Authenticator.allow_existing_users = True  # the users the API creates below
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(homes / "{username}")!r}
c.Spawner.args = ["--allow-root", "--ServerApp.port_retries=0"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = {STARTUP_TIMEOUT}
c.Spawner.http_timeout = {STARTUP_TIMEOUT}
c.JupyterHub.services = [{{"name": "xcsh-test-admin", "api_token": {admin_token!r}}}]
c.JupyterHub.load_roles = [
    {{
        "name": "xcsh-test-admin",
        "scopes": ["admin:users", "admin:servers", "tokens", "list:users"],
        "services": ["xcsh-test-admin"],
    }}
]
"""
    (base / "jupyterhub_config.py").write_text(config)
    env = dict(os.environ)
    # The hub spawns jupyterhub-singleuser from this environment (PATH is passed on to it).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = (ARTIFACTS / "hub.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(base / "jupyterhub_config.py")],
        cwd=base,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    hub = Hub(url, admin_token, homes)
    try:
        wait_until_serving(process, f"{url}hub/api/", "jupyterhub", log)
        hub.api("POST", "users", {"usernames": ["alice", "bob"]})
        yield hub
    finally:
        stop(process, 60)  # the hub stops the servers it spawned, and its proxy
        log.close()
        shutil.rmtree(homes, ignore_errors=True)

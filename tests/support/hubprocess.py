"""A real JupyterHub on 127.0.0.1, as a process: its start, its REST API, its stop.

Shared by the deployment tests (``deploy-tests/conftest.py``) and the many-users benchmark
(``bench/hub.py``). The hub runs ``configurable-http-proxy`` (from npm: ``.cache/chp`` in the
repository, or where ``XCSH_CHP`` says) and ``SimpleLocalProcessSpawner``, which starts each
user's ``jupyterhub-singleuser`` from the environment of the Python running this module, where
jupyter-xcsh is installed and enabled by its own configuration file, as a deployment's image
has it. Users log in with ``DummyAuthenticator`` and a password; an admin service's token drives
the hub's REST API.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]
CHP = os.environ.get("XCSH_CHP") or str(
    REPO / ".cache" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
)
#: Seconds the hub, and then a single-user server, may take to start on a loaded machine.
STARTUP_TIMEOUT = 120


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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


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
    opener = urllib.request.build_opener(_NoRedirect)
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
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}; see {log.name}")
        try:
            if http("GET", url, timeout=5).status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start; see {log.name}")
        time.sleep(0.25)


def stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM ``process``, then SIGKILL after ``grace`` seconds."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot; Linux); None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None  # ended, not yet reaped by its parent
    return int(fields[19])


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...; Linux, else none)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children", encoding="ascii") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        found += kids
        pending += kids
    return found


class Hub:
    """A running JupyterHub: its public URL, an admin token, and helpers on its REST API."""

    def __init__(
        self,
        url: str,
        admin_token: str,
        homes: Path,
        *,
        process: subprocess.Popen[bytes] | None = None,
        proxy_api: str = "",
        proxy_token: str = "",
        proxy_pid_file: Path | None = None,
    ) -> None:
        self.url = url
        self.admin_token = admin_token
        self.homes = homes
        #: The hub's own process (its pid: the hub's CPU and memory).
        self.process = process
        self.proxy_api = proxy_api
        self.proxy_token = proxy_token
        self.proxy_pid_file = proxy_pid_file
        #: After the hub stopped: the processes it started that were still running 30 s later,
        #: stopped by their pid (``running_hub``).
        self.leftovers: list[int] = []

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the hub's REST API as the admin service; the answer must be a 2xx."""
        answer = http(method, f"{self.url}hub/api/{path}", token=self.admin_token, body=body)
        if not 200 <= answer.status < 300:
            raise RuntimeError(f"{method} hub/api/{path}: {answer.status} {answer.body!r}")
        return answer.body

    def token(self, user: str, scopes: list[str] | None = None, expires_in: int = 3600) -> str:
        """A new API token of ``user`` (with ``scopes``, else the user's own)."""
        body: dict[str, Any] = {"note": "xcsh deploy test", "expires_in": expires_in}
        if scopes is not None:
            body["scopes"] = scopes
        return str(self.api("POST", f"users/{user}/tokens", body)["token"])

    def start_server(self, user: str) -> str:
        """Start ``user``'s single-user server (if not running); its public URL."""
        model = self.api("GET", f"users/{user}")
        if not model["servers"].get("", {}).get("ready"):
            answer = http("POST", f"{self.url}hub/api/users/{user}/server", token=self.admin_token)
            if answer.status not in (201, 202, 400):  # 400: already starting
                raise RuntimeError(f"{user}'s server did not start: {answer}")
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while not self.api("GET", f"users/{user}")["servers"].get("", {}).get("ready"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{user}'s server did not start")
                time.sleep(0.5)
        return f"{self.url}user/{user}/"

    def home(self, user: str) -> Path:
        """``user``'s home folder: the root of their single-user server."""
        return self.homes / user

    def server_pid(self, user: str) -> int:
        """The process id of ``user``'s running single-user server (the spawner's state)."""
        return int(self.api("GET", f"users/{user}")["servers"][""]["state"]["pid"])

    def server_target(self, user: str) -> str:
        """Where the proxy sends ``user``'s requests: the server's own ``http://host:port``."""
        answer = http("GET", f"{self.proxy_api}/api/routes", token=self.proxy_token, timeout=30)
        if answer.status != 200:
            raise RuntimeError(f"the proxy's routes: {answer.status} {answer.body!r}")
        return str(answer.body[f"/user/{user}"]["target"])

    def proxy_pid(self) -> int:
        """The process id of the proxy the hub started."""
        if self.proxy_pid_file is None:
            raise RuntimeError("no proxy pid file")
        return int(self.proxy_pid_file.read_text().strip())


@contextmanager
def running_hub(
    base: Path,
    users: list[str],
    log: IO[Any],
    *,
    password: str,
    default_url: str = "/lab",
    spawner_args: tuple[str, ...] = (),
    chp: str = CHP,
) -> Iterator[Hub]:
    """A JupyterHub in ``base`` on 127.0.0.1 with ``users`` created (none of their servers yet).

    The hub's output (and its single-user servers') goes to ``log``. On leaving, the hub is
    stopped (it stops the servers it spawned, and its proxy); any process it started that is
    still there 30 s later (a server, a kernel, the proxy) is stopped by its pid.
    """
    homes = base / "home"
    homes.mkdir(exist_ok=True)
    port, api_port, hub_port = free_port(), free_port(), free_port()
    url = f"http://127.0.0.1:{port}/"
    admin_token, proxy_token = secrets.token_hex(32), secrets.token_hex(32)
    args = ["--allow-root", "--ServerApp.port_retries=0", *spawner_args]
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
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.ConfigurableHTTPProxy.pid_file = {str(base / "proxy.pid")!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allow_existing_users = True  # the users the API creates below
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(homes / "{username}")!r}
c.Spawner.args = {args!r}
c.Spawner.default_url = {default_url!r}
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
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(base / "jupyterhub_config.py")],
        cwd=base,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    hub = Hub(
        url,
        admin_token,
        homes,
        process=process,
        proxy_api=f"http://127.0.0.1:{api_port}",
        proxy_token=proxy_token,
        proxy_pid_file=base / "proxy.pid",
    )
    try:
        wait_until_serving(process, f"{url}hub/api/", "jupyterhub", log)
        hub.api("POST", "users", {"usernames": users})
        yield hub
    finally:
        started = [process.pid, *descendants(process.pid)]
        with suppress(OSError, ValueError, RuntimeError):  # the proxy never started
            started.append(hub.proxy_pid())
        since = {pid: _start_time(pid) for pid in started}
        stop(process, 60)  # the hub stops the servers it spawned, and its proxy
        hub.leftovers = stop_leftovers(since, 30)


def stop_leftovers(since: dict[int, int | None], grace: float) -> list[int]:
    """Stop each process of ``since`` (pid: its start time) still running; their pids.

    A pid counts only while its start time is the one recorded (not a new process that reused
    it). SIGTERM, then SIGKILL to those left after ``grace`` seconds.
    """

    def alive() -> list[int]:
        return [p for p, t in since.items() if t is not None and _start_time(p) == t]

    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)  # the hub's own shutdown stopping them
    left = alive()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive():
            with suppress(OSError):  # it ended meanwhile
                os.kill(pid, sig)
        end = time.monotonic() + 10
        while alive() and time.monotonic() < end:
            time.sleep(0.2)
    return left

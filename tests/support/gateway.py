"""A real Jupyter Kernel Gateway for the tests, and a proxy that makes it fail on purpose.

``kernel_gateway`` (session scope) starts ``jupyter kernelgateway`` on 127.0.0.1 and a free
port: Enterprise Gateway when ``XCSH_ENTERPRISE_GATEWAY`` names its executable, else Kernel
Gateway (the program named by ``XCSH_KERNEL_GATEWAY``, else the one beside this Python).
``use_kernels(request, config)`` configures a test server to run its kernels locally or on
that gateway (through ``GatewayClient.url``), so one test module runs against both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.support.processes import free_port, stop_process, wait_for_http

#: The kernel runners every execution test module is parametrized over.
KERNELS = ["local", "gateway"]
#: Names the ``jupyter-kernelgateway`` program to run (default: the one beside this Python),
#: so an environment whose packages the gateway cannot share runs one installed elsewhere.
GATEWAY_VARIABLE = "XCSH_KERNEL_GATEWAY"


#: The gateway's kernel spec whose kernels cannot see the test servers' files (a remote kernel).
HIDDEN_ROOT_KERNEL = "xcsh-hidden-root"
#: Gateway URL -> the hidden-root kernel spec's name, or why the machine cannot provide it.
_HIDDEN_ROOT: dict[str, tuple[bool, str]] = {}


def _private_mount_prefix(hidden: str) -> list[str] | None:
    """A command prefix running a program in a private mount namespace, if this machine allows.

    The probe mounts an empty tmpfs over ``hidden`` there, as the kernel spec will.
    """
    probe = 'mount -t tmpfs xcsh-hidden "$0" && test -z "$(ls -A "$0")"'
    for prefix in (["unshare", "-m"], ["unshare", "-Urm"]):  # as root; else a user namespace
        try:
            done = subprocess.run(
                [*prefix, "--propagation", "private", "sh", "-c", probe, hidden],
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return [*prefix, "--propagation", "private"]
    return None


def _write_hidden_root_spec(share: str, hidden: str) -> tuple[bool, str]:
    """Write a kernel spec whose kernels see an empty directory over ``hidden``.

    ``hidden`` holds every test server's root: such a kernel is what a gateway on another
    machine (Enterprise Gateway on Kubernetes) gives, a kernel that cannot see the server's
    files. Returns (whether the spec exists, the spec name or why not).
    """
    prefix = _private_mount_prefix(hidden)
    if prefix is None:
        return False, "this machine allows no private mount namespace (unshare -m / -Urm)"
    launch = 'mount -t tmpfs xcsh-hidden "$0" && exec "$1" -m ipykernel_launcher -f "$2"'
    spec = {
        "argv": [*prefix, "sh", "-c", launch, hidden, sys.executable, "{connection_file}"],
        "display_name": "Python 3 (server files hidden)",
        "language": "python",
    }
    folder = os.path.join(share, "kernels", HIDDEN_ROOT_KERNEL)
    os.makedirs(folder)
    with open(os.path.join(folder, "kernel.json"), "w") as f:
        json.dump(spec, f)
    return True, HIDDEN_ROOT_KERNEL


@pytest.fixture(name="hidden_root_kernel")
def hidden_root_kernel_fixture(kernel_gateway: str) -> str:
    """The gateway's kernel spec whose kernels cannot see the server's root (or a skip)."""
    available, name_or_reason = _HIDDEN_ROOT[kernel_gateway]
    if not available:
        pytest.skip(name_or_reason)
    return name_or_reason


#: ``jupyter-enterprisegateway`` of an environment of its own (it pins older Jupyter packages):
#: when set, the gateway of the tests is Enterprise Gateway instead of Kernel Gateway.
ENTERPRISE_GATEWAY = os.environ.get("XCSH_ENTERPRISE_GATEWAY")


def gateway_command(port: int) -> list[str]:
    """The command line of the tests' gateway on 127.0.0.1:``port``."""
    if ENTERPRISE_GATEWAY:
        return [
            ENTERPRISE_GATEWAY,
            "--EnterpriseGatewayApp.ip=127.0.0.1",
            f"--EnterpriseGatewayApp.port={port}",
            "--EnterpriseGatewayApp.port_retries=0",
            # It refuses kernels for root unless told otherwise; the tests may run as root.
            "--EnterpriseGatewayApp.unauthorized_users=nobody",
            # The server lists kernels through the gateway (GET /api/kernels).
            "--EnterpriseGatewayApp.list_kernels=True",
        ]
    executable = os.environ.get(GATEWAY_VARIABLE) or os.path.join(
        os.path.dirname(sys.executable), "jupyter-kernelgateway"
    )
    if not os.path.exists(executable):
        # An environment that runs the gateway half of the suites must have a gateway.
        pytest.fail(f"no Kernel Gateway at {executable} (set {GATEWAY_VARIABLE})")
    return [
        executable,
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0",
        # The server lists kernels through the gateway (GET /api/kernels).
        "--JupyterWebsocketPersonality.list_kernels=True",
    ]


@pytest.fixture(scope="session")
def kernel_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start a real Kernel Gateway for the test session; yield its base URL.

    Its files live outside pytest's temporary directory (which holds every test server's
    root), so the hidden-root kernel spec can hide that directory and still read its
    connection file.
    """
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="xcsh-gateway-"))
    share, runtime = workdir / "share", workdir / "runtime"
    hidden_root = _write_hidden_root_spec(str(share), str(tmp_path_factory.getbasetemp()))
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(share), env.get("JUPYTER_PATH")) if p)
    log = open(workdir / "gateway.log", "wb")  # noqa: SIM115 - closed after the process
    process = subprocess.Popen(
        gateway_command(port),
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    _HIDDEN_ROOT[url] = hidden_root
    try:
        wait_for_http(f"{url}/api", process)
        yield url
    finally:
        stop_process(process)
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _reset_gateway_singletons() -> None:
    from jupyter_server.gateway.gateway_client import GatewayClient
    from jupyter_server.gateway.managers import GatewayMappingKernelManager

    # Both are process-wide: a later test's server must not inherit this one's gateway.
    GatewayClient.clear_instance()
    GatewayMappingKernelManager._kernels.clear()


@pytest.fixture
def xcsh_settings() -> dict[str, Any]:
    """XcshSettings for the test server; tests override it with ``parametrize``."""
    return {}


@pytest.fixture(params=KERNELS, name="jp_server_config")
def config_on_both_kernels(
    request: pytest.FixtureRequest, jp_server_config: Config, xcsh_settings: dict[str, Any]
) -> Config:
    """The test server's config (as ``jp_server_config``): each kernel runner, ``xcsh_settings``.

    A module imports it with ``xcsh_settings`` to run every test locally and on the gateway.
    """
    config = use_kernels(request, jp_server_config)
    for name, value in xcsh_settings.items():
        config.XcshSettings[name] = value
    return config


def use_kernels(
    request: pytest.FixtureRequest,
    config: Config,
    where: str | None = None,
    url: str | None = None,
    ws_url: str | None = None,
) -> Config:
    """Return ``config`` running kernels ``where`` (``local``/``gateway``; default the param).

    ``url`` overrides the gateway's REST URL (a proxy in front of it), ``ws_url`` its kernel
    websockets' (by default both go straight to the gateway).
    """
    config = Config(config)
    if (where or getattr(request, "param", "local")) != "gateway":
        return config
    gateway: str = request.getfixturevalue("kernel_gateway")
    _reset_gateway_singletons()
    request.addfinalizer(_reset_gateway_singletons)
    config.GatewayClient.url = url or gateway
    config.GatewayClient.ws_url = ws_url or gateway.replace("http://", "ws://")
    config.GatewayClient.request_timeout = 120.0
    return config


class LoopbackProxy:
    """A loopback TCP proxy to the gateway, which a subclass makes misbehave (``_serve``).

    It runs its own event loop in a thread, so a synchronous fixture can start it before the
    test server exists.
    """

    def __init__(self, target: str) -> None:
        host, _, port = target.removeprefix("http://").partition(":")
        self.target = (host, int(port))
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> str:
        """Listen on a free port of 127.0.0.1; return the proxy's URL."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        )
        self._server = future.result(10)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        """Stop listening, end the connections still open, and end the thread."""

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            # Connections still served (a websocket held open on purpose) end here, closed by
            # their own cleanup, rather than with the loop.
            serving = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in serving:
                task.cancel()
            await asyncio.gather(*serving, return_exceptions=True)
            await asyncio.sleep(0.1)  # the closed transports' last callbacks

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class FailingProxy(LoopbackProxy):
    """A loopback HTTP proxy to the gateway that answers 503 to the first kernel creations."""

    def __init__(self, target: str, failures: int = 1) -> None:
        super().__init__(target)
        self.failures_left = failures
        self.failed = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            creating = method == "POST" and path.rstrip("/").endswith("/api/kernels")
            if creating and self.failures_left > 0:
                self.failures_left -= 1
                self.failed += 1
                body = b'{"message": "injected failure", "reason": "test"}'
                writer.write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                return
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
            upstream_writer.write(head)
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


class SlowWebsocketProxy(LoopbackProxy):
    """A loopback proxy to the gateway's kernel websockets, slow on purpose.

    As a gateway on another machine, or a loaded one, can be: ``accept_delay`` (seconds) delays
    every websocket opened from then on before the gateway sees its request (so its accept);
    with ``hold_after`` (seconds), what the gateway sends on a websocket opened from then on
    stops reaching the client that long after it opened — a close is never answered.
    """

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.accept_delay = 0.0
        self.hold_after: float | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accept_delay, hold_after = self.accept_delay, self.hold_after
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(accept_delay)
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
            upstream_writer.write(head)
            until = None if hold_after is None else time.monotonic() + hold_after
            await asyncio.gather(
                _pipe(reader, upstream_writer), _pipe(upstream_reader, writer, until)
            )
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, until: float | None = None
) -> None:
    """Copy ``reader`` to ``writer``; past ``until`` (monotonic), drop all and never close."""
    try:
        while data := await reader.read(65536):
            if until is not None and time.monotonic() > until:
                continue
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        if until is None or time.monotonic() <= until:
            with contextlib.suppress(Exception):
                writer.close()

"""The only code that talks to the server's kernel manager (local or gateway-backed)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable
from typing import Any

import zmq.asyncio
from jupyter_core.utils import ensure_async

from jupyter_xcsh.execution.kernel.listing import SessionListing
from jupyter_xcsh.fast_paths import FastPaths

__all__ = [
    "KernelLauncher",
    "is_fd_exhaustion",
    "is_kernel_gone",
    "is_server_error",
    "probe_activity_watch",
    "probe_restarter",
]


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_fd_exhaustion(error: BaseException) -> bool:
    """Whether ``error`` (or its cause) is EMFILE/ENFILE, "Too many open files"."""
    for e in _chain(error):
        if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
            return True
        if "Too many open files" in str(e):
            return True
    return False


def is_server_error(error: BaseException) -> bool:
    """Whether ``error`` is an HTTP 5xx answer (a gateway failing to create a kernel)."""
    for e in _chain(error):
        status = getattr(e, "status_code", None) or getattr(e, "code", None)
        if isinstance(status, int) and 500 <= status <= 599:
            return True
    return False


def is_kernel_gone(error: BaseException) -> bool:
    """Whether ``error`` says the kernel does not exist (any more): a KeyError or an HTTP 404.

    jupyter_server's ``MappingKernelManager`` answers an unknown id with ``HTTPError(404)``
    (not ``KeyError``), and a gateway answers 404 for a kernel it no longer has.
    """
    for e in _chain(error):
        if isinstance(e, KeyError):
            return True
        status = getattr(e, "status_code", None) or getattr(e, "code", None)
        if status == 404:
            return True
    return False


def _forgotten_remotely(kernel: Any) -> bool:
    # A gateway's kernel manager keeps the kernel's model; after a refresh found the kernel
    # gone (404 on the gateway) the model is None and every later request is a silent no-op.
    return hasattr(kernel, "refresh_model") and getattr(kernel, "kernel", True) is None


class KernelLauncher:
    """Start, connect, interrupt, restart and stop kernels through the server's kernel manager.

    Parameters
    ----------
    kernel_manager
        ``ServerApp.kernel_manager`` (a ``MappingKernelManager``, or a
        ``GatewayMappingKernelManager`` when the server uses a gateway).
    on_fd_exhaustion
        Called before retrying a kernel start that failed with EMFILE/ENFILE, to release what
        can be released.
    listing
        Where the python tool's sessions record their kernels for the lab (none by default).
    fast_paths
        The fast paths its connections and recoveries may use (default: all).

    """

    def __init__(
        self,
        kernel_manager: Any,
        *,
        log: logging.Logger,
        on_fd_exhaustion: Callable[[], None] | None = None,
        listing: SessionListing | None = None,
        fast_paths: FastPaths | None = None,
    ) -> None:
        self.km = kernel_manager
        self.log = log
        self.on_fd_exhaustion = on_fd_exhaustion
        # One ZMQ context for every client the tools open. A client left to make its own
        # terminates it when its channels stop, which blocks the event loop (0.3-0.5 s for a
        # kernel that stopped reading, e.g. one frozen by SIGSTOP) and costs an I/O thread per
        # connection; closing a socket of a shared context returns at once.
        self._context: zmq.asyncio.Context | None = None
        self.listing = listing or SessionListing(None, log=log)
        self.fast_paths = fast_paths or FastPaths()

    @property
    def default_kernel_name(self) -> str:
        """The server's default kernel name."""
        return str(getattr(self.km, "default_kernel_name", "") or "python3")

    async def has_kernel_spec(self, kernel_name: str) -> bool:
        """Whether the server knows a kernel spec ``kernel_name`` (the gateway's, on a gateway).

        A spec manager that cannot answer (a gateway down) is not a "no": the start will say.
        """
        specs = getattr(self.km, "kernel_spec_manager", None)
        if specs is None:
            return True
        try:
            await ensure_async(specs.get_kernel_spec(kernel_name))
        except KeyError:  # NoSuchKernel locally, KeyError for a gateway's 404
            return False
        except Exception as e:
            self.log.warning("xcsh: could not look up kernel spec %s: %s", kernel_name, e)
        return True

    async def kernel_spec(self, kernel_name: str) -> dict[str, str] | None:
        """``{name, display_name, language}`` of kernel spec ``kernel_name``; None if unknown.

        A spec manager that cannot answer (a gateway down) gives the name alone (display name
        the name, language unknown): a new notebook still names its kernel.
        """
        found = {"name": kernel_name, "display_name": kernel_name, "language": ""}
        specs = getattr(self.km, "kernel_spec_manager", None)
        if specs is None:
            return found
        try:
            spec = await ensure_async(specs.get_kernel_spec(kernel_name))
        except KeyError:  # NoSuchKernel locally, KeyError for a gateway's 404
            return None
        except Exception as e:
            self.log.warning("xcsh: could not look up kernel spec %s: %s", kernel_name, e)
            return found
        if isinstance(spec, dict):  # a gateway's model: {name, spec: {display_name, ...}}
            inner = spec["spec"] if isinstance(spec.get("spec"), dict) else spec
            display, language = inner.get("display_name"), inner.get("language")
        else:
            display = getattr(spec, "display_name", None)
            language = getattr(spec, "language", None)
        if isinstance(display, str) and display:
            found["display_name"] = display
        if isinstance(language, str):
            found["language"] = language
        return found

    async def start(self, kernel_name: str, path: str) -> str:
        """Start a kernel in API ``path``; retry once on an HTTP 5xx and once on EMFILE."""
        retried_5xx = retried_fd = False
        while True:
            try:
                kernel_id = await self.km.start_kernel(kernel_name=kernel_name, path=path)
                return str(kernel_id)
            except Exception as e:
                if is_fd_exhaustion(e) and not retried_fd:
                    retried_fd = True
                    self.log.warning("xcsh: kernel start hit %s; releasing clients, retrying", e)
                    if self.on_fd_exhaustion is not None:
                        self.on_fd_exhaustion()
                    continue
                if is_server_error(e) and not retried_5xx:
                    retried_5xx = True
                    self.log.warning("xcsh: kernel start failed with %s; retrying once", e)
                    continue
                raise

    def _lookup(self, kernel_id: str) -> Any | None:
        """The kernel manager's kernel ``kernel_id``, or None once it is gone (never raises)."""
        try:
            kernel = self.km.get_kernel(kernel_id)
        except Exception as e:
            if not is_kernel_gone(e):
                self.log.warning("xcsh: looking up kernel %s failed: %s", kernel_id, e)
            return None
        return None if _forgotten_remotely(kernel) else kernel

    def client(self, kernel_id: str) -> Any:
        """Return a new client of the kernel (ZMQ locally, websocket on a gateway).

        Every client gets the launcher's one ZMQ context (released by ``close``): a client
        left to make its own would terminate it on the event loop when its channels stop, and
        jupyter_client before 8.1 even left it open until garbage collection (an I/O thread
        and its sockets' files per closed connection meanwhile). Raises ``KeyError`` when the
        kernel is gone.
        """
        kernel = self._lookup(kernel_id)
        if kernel is None:
            raise KeyError(kernel_id)
        if self._context is None:
            self._context = zmq.asyncio.Context()
        return kernel.client(context=self._context)

    def working_dir(self, api_path: str) -> str | None:
        """The folder a kernel for the file ``api_path`` works in, as the server starts it."""
        cwd_for_path = getattr(self.km, "cwd_for_path", None)
        if cwd_for_path is None:
            return None
        try:
            return str(cwd_for_path(api_path))
        except Exception as e:  # a path the manager refuses: the kernel stays where it is
            self.log.debug("xcsh: no working folder for %s: %s", api_path, e)
            return None

    def close(self) -> None:
        """Release the clients' ZMQ context (their sockets are closed by then)."""
        context, self._context = self._context, None
        if context is not None:
            context.destroy(linger=0)

    def exists(self, kernel_id: str) -> bool:
        """Whether the kernel manager still has the kernel (shut down elsewhere: no)."""
        return self._lookup(kernel_id) is not None

    async def is_alive(self, kernel_id: str) -> bool:
        """Whether the kernel is alive; a kernel the manager (or its gateway) forgot is dead.

        Never raises: a transient failure to ask (a gateway hiccup) is not a death.
        """
        kernel = self._lookup(kernel_id)
        if kernel is None:
            return False
        try:
            alive = bool(await ensure_async(kernel.is_alive()))
        except Exception as e:
            if is_kernel_gone(e):
                return False
            self.log.debug("xcsh: liveness check of %s failed: %s", kernel_id, e)
            return True
        return alive and not _forgotten_remotely(kernel)

    def has_restarter(self, kernel_id: str) -> bool:
        """Whether the server's auto-restarter watches this (local) kernel.

        Without the ``restarter_wait`` fast path, never: the tool restarts a dead kernel itself.
        """
        kernel = self._lookup(kernel_id)
        return (
            self.fast_paths.uses("restarter_wait")
            and kernel is not None
            and bool(getattr(kernel, "autorestart", False))
            and getattr(kernel, "_restarter", None) is not None
        )

    def watch_restarts(self, kernel_id: str, callback: Callable[[str], None]) -> None:
        """Call ``callback("restart"|"dead")`` when the server's auto-restarter acts."""
        kernel = self._lookup(kernel_id)
        if kernel is not None and hasattr(kernel, "add_restart_callback"):
            kernel.add_restart_callback(lambda: callback("restart"), "restart")
            kernel.add_restart_callback(lambda: callback("dead"), "dead")

    async def interrupt(self, kernel_id: str) -> None:
        """Interrupt through the kernel manager (a signal, or REST on a gateway); never raises."""
        try:
            await ensure_async(self.km.interrupt_kernel(kernel_id))
        except Exception as e:
            self.log.warning("xcsh: interrupting kernel %s failed: %s", kernel_id, e)

    async def restart(self, kernel_id: str) -> None:
        """Restart the kernel, keeping its id; not abandoned halfway if the caller is cancelled.

        Raises ``KeyError`` when the kernel is gone (shut down elsewhere, forgotten by its
        gateway), so the caller starts a new one instead.
        """
        if self._lookup(kernel_id) is None:
            raise KeyError(kernel_id)
        try:
            await asyncio.shield(ensure_async(self.km.restart_kernel(kernel_id, now=True)))
        except Exception as e:
            if is_kernel_gone(e):
                raise KeyError(kernel_id) from e
            raise

    async def shutdown(self, kernel_id: str) -> None:
        """Shut the kernel down now; never raises (a kernel already gone is not an error).

        The kernel is forgotten by the kernel manager even if its shutdown failed, so it is not
        listed as running any more.
        """
        try:
            if self.km.get_kernel(kernel_id) is None:
                return
        except Exception:
            return  # gone already
        try:
            await asyncio.shield(ensure_async(self.km.shutdown_kernel(kernel_id, now=True)))
        except Exception as e:
            if not is_kernel_gone(e):
                self.log.warning("xcsh: shutting down kernel %s failed: %s", kernel_id, e)
        with contextlib.suppress(Exception):
            self.km.remove_kernel(kernel_id)


def probe_restarter(kernel_manager: Any) -> str | None:
    """Whether local kernels keep their auto-restarter where ``has_restarter`` looks."""
    kernel_class = getattr(kernel_manager, "kernel_manager_class", None)
    if isinstance(kernel_class, str):
        from traitlets.utils.importstring import import_item

        kernel_class = import_item(kernel_class)
    traits = getattr(kernel_class, "class_traits", None)
    if traits is None or "_restarter" not in traits():
        return "the server's kernel managers have no _restarter trait"
    return None


def probe_activity_watch(kernel_manager: Any) -> str | None:
    """Whether the server watches kernels' activity as a session's ``take_over_watch`` expects."""
    for name in ("start_watching_activity", "track_message_type", "get_kernel"):
        if not callable(getattr(kernel_manager, name, None)):
            return f"the kernel manager has no {name}"
    return None

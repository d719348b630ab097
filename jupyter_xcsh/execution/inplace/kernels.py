"""The kernel a notebook runs in: its server session's, found as JupyterLab finds it, or a new one.

A run in place must use the kernel the person sees in the lab, so the session is looked up in
the server's session manager, by the notebook's path. JupyterLab's ``SessionContext`` briefly
creates its session at ``<dir>/<uuid>`` (``PathExt.join(PathExt.dirname(path),
UUID.uuid4())``, type ``notebook``, name = the file name) and only then PATCHes the real path;
such a session is matched too. Without a session, one is created exactly as the lab would create
it (path = the notebook, type ``notebook``, name = its file name), so the lab adopts its kernel
when it opens the notebook, and the kernel starts in the notebook's folder, with the server's
own environment (no prelude, nothing injected: it is the person's namespace).

The kernel is not ours: a connection to it is kept per kernel and reused, and it never restarts,
replaces or shuts down a kernel.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import re
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from jupyter_core.utils import ensure_async
from tornado import web

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.execution.inplace.executed import ExecutionLog
from jupyter_xcsh.execution.kernel.connection import KernelConnection
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.execution.kernel.messages import string_expression

__all__ = ["KernelActivity", "NotebookKernel", "NotebookKernels", "NotebookSession"]

#: ``UUID.uuid4()`` of ``@lumino/coreutils``: the last part of a lab session's placeholder path.
_UUID = re.compile(r"\A[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")


@dataclass(frozen=True)
class NotebookSession:
    """The kernel a run uses, as the result reports it."""

    kernel_id: str
    kernel_name: str
    session_id: str
    started: bool

    def to_json(self) -> dict[str, Any]:
        """``{id, name, sessionId, started}``."""
        return {
            "id": self.kernel_id,
            "name": self.kernel_name,
            "sessionId": self.session_id,
            "started": self.started,
        }


def is_placeholder(session: dict[str, Any], api_path: str) -> bool:
    """Whether ``session`` is the lab's not-yet-renamed session of notebook ``api_path``."""
    path = str(session.get("path") or "")
    return (
        session.get("type") == "notebook"
        and session.get("name") == posixpath.basename(api_path)
        and posixpath.dirname(path) == posixpath.dirname(api_path)
        and _UUID.match(posixpath.basename(path)) is not None
    )


def _has_kernel(session: dict[str, Any]) -> bool:
    """Whether a server session's model names its kernel (a pending one has none yet)."""
    return bool((session.get("kernel") or {}).get("id"))


class KernelActivity:
    """Whether the kernel is executing someone else's request, from its IOPub status messages.

    Only ``execute_request`` parents count (a completion or an inspection is not someone's
    work); requests sent by the run itself are ``own`` and do not count either.
    """

    def __init__(self) -> None:
        self.own: set[str] = set()
        self._others: set[str] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def busy(self) -> bool:
        """Whether someone else's execution is running now."""
        return bool(self._others)

    def on_status(self, msg: dict[str, Any]) -> None:
        """Follow one IOPub ``status`` message."""
        parent = msg.get("parent_header") or {}
        msg_id = parent.get("msg_id")
        if parent.get("msg_type") != "execute_request" or not msg_id or msg_id in self.own:
            return
        state = (msg.get("content") or {}).get("execution_state")
        if state == "busy":
            self._others.add(msg_id)
        elif state == "idle":
            self._others.discard(msg_id)
        if self._others:
            self._idle.clear()
        else:
            self._idle.set()

    def reset(self) -> None:
        """Forget every execution (the kernel restarted: nothing runs any more)."""
        self._others.clear()
        self._idle.set()

    async def wait_idle(self, deadline: float) -> bool:
        """Wait until nobody else's execution runs; False if that did not happen by ``deadline``."""
        while self._others:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._idle.wait(), remaining)
            except TimeoutError:
                return False
        return True


class NotebookKernel:
    """One kernel used by runs in place: its connection, its activity and its run lock."""

    def __init__(
        self, kernel_id: str, connection: KernelConnection, executed: ExecutionLog | None = None
    ) -> None:
        self.kernel_id = kernel_id
        self.connection = connection
        self.activity = KernelActivity()
        #: What the kernel executed while this server read it (``connection``'s ``on_iopub``).
        self.executed = executed or ExecutionLog()
        connection.status_listener = self._on_status
        #: Runs on one kernel take turns (two notebooks may share a kernel).
        self.lock = asyncio.Lock()

    def _on_status(self, msg: dict[str, Any]) -> None:
        state = (msg.get("content") or {}).get("execution_state")
        if state in ("starting", "restarting", "dead"):
            self.activity.reset()
        else:
            self.activity.on_status(msg)

    @property
    def usable(self) -> bool:
        """Whether the connection still reaches the same kernel process."""
        return not self.connection.closed and self.connection.lost is None


class NotebookKernels:
    """Find, start and connect to the kernels of notebooks' server sessions.

    Parameters
    ----------
    launcher
        The kernel manager's wrapper (client, liveness, interrupt).
    session_manager
        ``ServerApp.session_manager`` (local or gateway).

    """

    def __init__(
        self, launcher: KernelLauncher, session_manager: Any, *, log: logging.Logger
    ) -> None:
        self.launcher = launcher
        self.session_manager = session_manager
        self.log = log
        self._kernels: dict[str, NotebookKernel] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        # Kept across reconnections to one kernel; forgotten when the server is done with it.
        self._executed: dict[str, ExecutionLog] = {}
        #: The kernels whose auto-restarts are watched (``_on_restarter``), once each.
        self._watched: set[str] = set()

    def executed(self, kernel_id: str) -> ExecutionLog | None:
        """What kernel ``kernel_id`` executed while this server read it (None: never read)."""
        return self._executed.get(kernel_id)

    def connected(self, kernel_id: str) -> NotebookKernel | None:
        """The open connection to ``kernel_id``, if there is a usable one (none is opened)."""
        kernel = self._kernels.get(kernel_id)
        return kernel if kernel is not None and kernel.usable else None

    async def find_session(self, api_path: str) -> dict[str, Any] | None:
        """The server session of notebook ``api_path``, the lab's placeholder included.

        The session at the path is one query of the session manager (``get_session``): with
        two at one path, the first, the one jupyter_server's own ``POST /api/sessions`` and the
        lab's ``findByPath`` (the first of the listed sessions at the path) take too. Only
        without one are all the sessions listed (``list_sessions`` builds every session's
        model: a cost that grew with the number of sessions, on every run and read) to find
        the lab's placeholder, the newest first.
        """
        try:
            found = await ensure_async(self.session_manager.get_session(path=api_path))
        except web.HTTPError as e:
            if e.status_code != 404:
                raise
            found = None  # none at that path (or its kernel is gone: the row was dropped)
        if found is not None and _has_kernel(found):
            return dict(found)
        sessions = await ensure_async(self.session_manager.list_sessions())
        with_kernel = [s for s in sessions if _has_kernel(s)]
        for session in reversed(with_kernel):  # the newest first
            if session.get("path") == api_path:
                return session
        for session in reversed(with_kernel):
            if is_placeholder(session, api_path):
                return session
        return None

    async def session_for(
        self, api_path: str, kernel_name: str | None, deadline: float
    ) -> NotebookSession:
        """The notebook's session, created (with ``kernel_name``) when there is none.

        Raises ``InvalidRequestError`` for an unknown kernel name and ``TimeoutError`` when
        the kernel does not start by ``deadline``.
        """
        session = await self.find_session(api_path)
        if session is not None:
            kernel = session["kernel"]
            return NotebookSession(kernel["id"], kernel.get("name", ""), session["id"], False)
        name = kernel_name or self.launcher.default_kernel_name
        if not await self.launcher.has_kernel_spec(name):
            raise InvalidRequestError(f"No such kernel: {name}")
        create = asyncio.ensure_future(
            ensure_async(
                self.session_manager.create_session(
                    path=api_path,
                    name=posixpath.basename(api_path),
                    type="notebook",
                    kernel_name=name,
                )
            )
        )
        try:
            # Shielded: a start that outlives the deadline still ends as a session the lab
            # (and the next run) adopts, rather than as an orphaned kernel.
            created: dict[str, Any] = await asyncio.wait_for(
                asyncio.shield(create), max(0.0, deadline - time.monotonic())
            )
        except TimeoutError:
            raise TimeoutError("Kernel start timed out") from None
        kernel = created["kernel"]
        return NotebookSession(kernel["id"], kernel.get("name", name), created["id"], True)

    async def connect(self, kernel_id: str, deadline: float) -> NotebookKernel:
        """A ready connection to ``kernel_id``, opened (or reopened) when needed.

        Opening waits for the kernel to answer, which it does only between two executions:
        ``TimeoutError`` past ``deadline``; ``KernelLostError`` when it is dead.
        """
        lock = self._opening.setdefault(kernel_id, asyncio.Lock())
        async with lock:
            kernel = self._kernels.get(kernel_id)
            if kernel is not None and kernel.usable:
                return kernel
            self.drop(kernel_id)
            executed = self._executed.setdefault(kernel_id, ExecutionLog())
            connection = KernelConnection(
                self.launcher.client(kernel_id),
                log=self.log,
                fast_paths=self.launcher.fast_paths,
                on_iopub=executed.on_iopub,
            )
            kernel = NotebookKernel(kernel_id, connection, executed)
            if kernel_id not in self._watched:
                self._watched.add(kernel_id)
                self.launcher.watch_restarts(kernel_id, partial(self._on_restarter, kernel_id))
            try:
                await connection.open(deadline, lambda: self.launcher.is_alive(kernel_id))
            except BaseException:
                connection.close()
                raise
            executed.running = None  # it answered: nothing runs (one seen before may have ended)
            self._kernels[kernel_id] = kernel
            return kernel

    async def enter_folder(self, kernel: NotebookKernel, api_path: str, deadline: float) -> str:
        """Move a kernel just started for ``api_path`` into the notebook's folder.

        A local kernel starts there already. A kernel on a gateway starts in the gateway's
        own folder (the server's request names the notebook's folder, which Kernel Gateway
        ignores and Enterprise Gateway honours only when configured to); where the gateway
        shares this server's disk the kernel moves there, else the returned notice says where
        it works ("" when it is in the folder).
        """
        folder = self.launcher.working_dir(api_path)
        if folder is None:
            return ""
        code = f"try:\n    __import__('os').chdir({folder!r})\nexcept OSError:\n    pass"
        reply = await kernel.connection.run_silently(
            code, deadline, user_expressions={"cwd": "__import__('os').getcwd()"}
        )
        cwd = string_expression(reply, "cwd")
        if cwd is None or os.path.realpath(cwd) == os.path.realpath(folder):
            return ""
        return (
            "The notebook's kernel cannot see this server's files (a gateway on another "
            f"machine): it works in {cwd}, not in the notebook's folder"
        )

    def _on_restarter(self, kernel_id: str, what: str) -> None:
        """The server's auto-restarter restarted (or gave up on) a kernel runs in place use.

        A kernel that died is often back before a liveness check sees it dead, on new ports
        or before this connection's IOPub socket hears the new process's first status: the
        connection is marked lost here, so a running cell ends as lost, not at its deadline.
        """
        kernel = self._kernels.get(kernel_id)
        if kernel is not None:
            kernel.connection.mark_lost("kernel restarting" if what == "restart" else "kernel dead")
        executed = self._executed.get(kernel_id)
        if executed is not None:
            executed.reset()

    def drop(self, kernel_id: str) -> None:
        """Close and forget the connection to ``kernel_id`` (the kernel itself is untouched)."""
        kernel = self._kernels.pop(kernel_id, None)
        if kernel is not None:
            kernel.connection.close()

    def forget(self, kernel_id: str) -> None:
        """Drop the connection to ``kernel_id`` and what it executed (shut down, replaced)."""
        self.drop(kernel_id)
        self._executed.pop(kernel_id, None)
        self._watched.discard(kernel_id)

    def close(self) -> None:
        """Close every connection (kernels keep running: they belong to their sessions)."""
        for kernel_id in list(self._kernels):
            self.drop(kernel_id)
        self._opening.clear()
        self._executed.clear()

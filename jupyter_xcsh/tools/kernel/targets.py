"""The kernels the kernel tool acts on: a python tool session's, or a notebook's session kernel.

A notebook's kernel is a person's: the tool inspects it only between two executions (waiting up
to the request's ``timeout`` for a running cell to end, then answering busy), takes turns with
runs in place (their lock), and restarts or replaces it while a cell runs only when told to
(``force``). A python session is taken through its pool like a call, so a probe never runs
beside one.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import time
from collections.abc import AsyncIterator
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_xcsh.calls.control import CallCancelledError, CallControl
from jupyter_xcsh.errors import ConflictError, InvalidRequestError, NotFoundError
from jupyter_xcsh.execution.inplace.kernels import NotebookKernel, NotebookKernels
from jupyter_xcsh.execution.kernel.connection import (
    ConnectionClosedError,
    KernelConnection,
    KernelLostError,
)
from jupyter_xcsh.execution.python.failures import SessionDisposedError
from jupyter_xcsh.execution.python.service import PythonService
from jupyter_xcsh.execution.python.session import KernelSession
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.tools.kernel.request import KernelRequest

__all__ = ["NotebookTarget", "SessionTarget", "busy_error", "normal_cwd"]

#: Least seconds given to open a connection to a notebook's kernel (one round trip).
OPEN_WAIT = 1.0


def normal_cwd(cwd: str | None) -> str | None:
    """A session ``cwd`` as the sessions API lists it (``""`` for the root)."""
    if cwd is None:
        return None
    normal = posixpath.normpath(cwd.strip("/") or ".")
    return "" if normal == "." else normal


def busy_error(what: str, timeout: float) -> ConflictError:
    """The 409 of a kernel that stayed busy with someone's execution past the request's wait."""
    return ConflictError(
        f"Kernel busy: a cell is running in {what}; nothing was done within {timeout:g} seconds "
        "(try again later, or give a longer timeout)",
        reason="kernel_busy",
    )


class SessionTarget:
    """A python tool session's kernel, found by name (and cwd) in the execution service."""

    def __init__(self, execution: PythonService, request: KernelRequest) -> None:
        assert request.session is not None
        self.execution = execution
        self.name = request.session
        cwd = normal_cwd(request.cwd)
        sessions = execution.pool.find(self.name, cwd)
        if not sessions:
            where = "" if cwd is None else f" with cwd '{cwd}'"
            raise NotFoundError(f"No python session named {self.name}{where}")
        if len(sessions) > 1:
            cwds = ", ".join(repr(s.key.cwd) for s in sessions)
            raise InvalidRequestError(
                f"Several python sessions are named {self.name} (cwd {cwds}): give cwd"
            )
        self.session: KernelSession = sessions[0]
        self.what = f"python session {self.name}"

    def describe(self) -> dict[str, Any]:
        """The session as the sessions API lists it."""
        key = self.session.key
        for entry in self.execution.list_sessions():
            if entry["name"] == key.name and entry["cwd"] == key.cwd:
                return entry
        return self.session.describe()

    @contextlib.asynccontextmanager
    async def quiet(self, timeout: float) -> AsyncIterator[KernelConnection]:
        """The session's connection, its turn taken as a call takes it (409 when busy)."""
        session = self.session
        deadline = time.monotonic() + timeout
        checkout = self.execution.pool.checkout(
            session.key, session.kernel_name, deadline=deadline, control=CallControl()
        )
        entered = False
        try:
            async with checkout as taken:
                entered = True
                connection = taken.connection
                if not taken.ready or connection is None:
                    raise ConflictError(
                        f"The kernel of {self.what} is not running (it died, or was restarted "
                        "or shut down elsewhere): its next python call starts it again",
                        reason="kernel_not_running",
                    )
                yield connection
        except TimeoutError:
            if entered:
                raise
            raise busy_error(self.what, timeout) from None
        except (SessionDisposedError, CallCancelledError):
            if entered:
                raise
            raise NotFoundError(f"No python session named {self.name}") from None


class NotebookTarget:
    """The kernel of a notebook's server session (the one its JupyterLab tab uses)."""

    def __init__(
        self, kernels: NotebookKernels, store: NotebookStore, path: str, api_path: str
    ) -> None:
        self.kernels = kernels
        self.store = store
        self.path = path
        self.api_path = api_path
        self.session: dict[str, Any] = {}
        self.what = f"the kernel of {path}"

    @classmethod
    async def find(
        cls, kernels: NotebookKernels, store: NotebookStore, path: str
    ) -> NotebookTarget:
        """The notebook's kernel; 404 for a missing notebook or one without a kernel."""
        api_path, _ = await store.resolve(path)
        target = cls(kernels, store, path, api_path)
        session = await kernels.find_session(api_path)
        if session is None:
            cm = store.contents_manager
            if not await ensure_async(cm.file_exists(api_path)):
                raise NotFoundError(f"Notebook not found: {path}")
            raise NotFoundError(
                f"Notebook {path} has no running kernel (run one of its cells, or open it in "
                "JupyterLab, to start one)"
            )
        target.session = session
        return target

    @property
    def kernel_id(self) -> str:
        """The id of the notebook's kernel."""
        return str(self.session["kernel"]["id"])

    @property
    def kernel_name(self) -> str:
        """The kernel spec name of the notebook's kernel."""
        return str(self.session["kernel"].get("name") or "")

    def describe(self) -> dict[str, Any]:
        """``{id, name, sessionId}`` of the notebook's kernel."""
        return {"id": self.kernel_id, "name": self.kernel_name, "sessionId": self.session["id"]}

    async def connect(self, timeout: float) -> NotebookKernel:
        """A connection to the kernel (it answers only between executions: 409 past timeout)."""
        kernel = self.kernels.connected(self.kernel_id)
        if kernel is not None:
            return kernel
        try:
            # Opening takes a round trip even to an idle kernel: never less than OPEN_WAIT.
            deadline = time.monotonic() + max(timeout, OPEN_WAIT)
            return await self.kernels.connect(self.kernel_id, deadline)
        except TimeoutError:
            raise busy_error(self.what, timeout) from None
        except (KernelLostError, ConnectionClosedError, KeyError) as e:
            raise ConflictError(
                f"The kernel of {self.path} is not running ({e})", reason="kernel_not_running"
            ) from None

    @contextlib.asynccontextmanager
    async def quiet(self, timeout: float) -> AsyncIterator[KernelConnection]:
        """The kernel's connection once nobody's cell runs, its turn held against runs in place."""
        deadline = time.monotonic() + timeout
        kernel = await self.connect(timeout)
        if kernel.lock.locked():  # a run in place (or another probe) holds the kernel
            try:
                remaining = max(0.0, deadline - time.monotonic())
                await asyncio.wait_for(kernel.lock.acquire(), remaining)
            except TimeoutError:
                raise busy_error(self.what, timeout) from None
        else:
            await kernel.lock.acquire()  # free: taken at once, whatever the timeout
        try:
            if not await kernel.activity.wait_idle(deadline):
                raise busy_error(self.what, timeout)
            yield kernel.connection
        finally:
            kernel.lock.release()

    def busy(self, kernel: NotebookKernel) -> bool:
        """Whether someone's cell, or a run in place, runs on the kernel now."""
        return kernel.activity.busy or kernel.lock.locked() or kernel.executed.running is not None

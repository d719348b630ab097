"""The kernel tool's one call path, shared by REST and MCP: look into and control kernels.

``variables`` and ``inspect`` read a kernel's namespace through one silent execution (no
execution count, no history, nothing added to the notebook or the namespace); ``status``,
``interrupt``, ``restart`` and ``change`` act on a notebook's kernel (``interrupt`` and
``status`` on a python session's too); ``sessions`` lists the python tool's sessions.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, ClassVar

from jupyter_core.utils import ensure_async

from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.errors import ConflictError, InvalidRequestError, NotFoundError, XcshError
from jupyter_xcsh.execution.inplace.kernels import NotebookKernel, NotebookKernels
from jupyter_xcsh.execution.kernel.connection import (
    ConnectionClosedError,
    KernelConnection,
    KernelLostError,
    NotBegunError,
)
from jupyter_xcsh.execution.kernel.messages import string_expression
from jupyter_xcsh.execution.python.service import PythonService
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.runs.registry import BackgroundRun, RunRegistry
from jupyter_xcsh.tools.base import Permission
from jupyter_xcsh.tools.classify import kernel_action
from jupyter_xcsh.tools.kernel.probe import probe_expression, render_inspection, render_variables
from jupyter_xcsh.tools.kernel.request import KernelRequest, parse_kernel_request
from jupyter_xcsh.tools.kernel.targets import NotebookTarget, SessionTarget, busy_error

__all__ = ["KernelTool"]

#: The authorizer action each of the kernel tool's actions needs (on ``KernelTool.permission``'s
#: resource).
PERMISSION = {
    "variables": "execute",
    "inspect": "execute",
    "status": "read",
    "sessions": "read",
    "interrupt": "write",
    "restart": "write",
    "change": "write",
}
#: Seconds a probe may run in the kernel once sent (a slow ``repr``), before it is interrupted.
PROBE_SECONDS = 30.0
#: Characters of one variable's repr in a listing, and of the one variable ``inspect`` shows.
LIST_REPR_CHARS, INSPECT_REPR_CHARS = 200, 5000
#: Least seconds a probe of a notebook's kernel is given to begin once sent: a kernel that runs
#: nobody's cell begins it at once; one that does (a person's cell began just before, its
#: ``busy`` not read yet) makes the call busy, as a cell seen running does.
BEGIN_WAIT = 1.0
#: Seconds ``status`` waits for a kernel it has no connection to (it answers between cells).
STATUS_WAIT = 2.0
#: Seconds after a ``change`` before the old kernel's connection is closed.
LOST_CLOSE_DELAY = 10.0


class KernelTool:
    """Inspect and control the kernels of python sessions and notebooks."""

    name: ClassVar[str] = "kernel"
    route: ClassVar[str] = "/api/xcsh/kernel"
    #: Every call reads the kernels; an action asks its own right (``PERMISSION``) too.
    permission: ClassVar[Permission] = Permission("read", "kernels")

    def __init__(
        self,
        execution: PythonService,
        kernels: NotebookKernels,
        store: NotebookStore,
        runs: RunRegistry | None = None,
    ) -> None:
        self.execution = execution
        self.kernels = kernels
        self.store = store
        #: The runs, for ``status`` to name one waiting for input on the kernel.
        self.runs = runs if runs is not None else RunRegistry()

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may, act; return ``{text, details}``.

        Raises domain errors: 400 for a bad body, 404 for an unknown session or notebook (or a
        notebook without a kernel), 409 for a kernel busy past ``timeout``, a refused restart
        or change, a kernel not running.
        """
        request = parse_kernel_request(body)
        await caller.require(PERMISSION[request.action], self.permission.resource)
        await caller.permit(kernel_action(request))
        if request.action == "sessions":
            return self._sessions()
        target = await self._target(request)
        if request.action in ("variables", "inspect"):
            return await self._probe(request, target)
        if request.action == "status":
            return await self._status(target)
        if request.action == "interrupt":
            return await self._interrupt(target)
        assert isinstance(target, NotebookTarget)
        if request.action == "restart":
            return await self._restart(request, target)
        return await self._change(request, target)

    async def _target(self, request: KernelRequest) -> SessionTarget | NotebookTarget:
        if request.session is not None:
            return SessionTarget(self.execution, request)
        assert request.notebook_path is not None
        return await NotebookTarget.find(self.kernels, self.store, request.notebook_path)

    # -- sessions ------------------------------------------------------------------------
    def _sessions(self) -> dict[str, Any]:
        sessions = self.execution.list_sessions()
        lines = [f"Python sessions: {len(sessions)}"]
        for s in sessions:
            state = "dead" if s["dead"] else ("busy" if s["busy"] else "idle")
            cwd = s["cwd"] or "(root)"
            lines.append(
                f"{s['name']} · cwd {cwd} · {s['kernelName']} · {state} · "
                f"restarts {s['restartCount']}"
            )
        return {"text": "\n".join(lines), "details": {"action": "sessions", "sessions": sessions}}

    # -- variables and inspect -----------------------------------------------------------
    async def _probe(
        self, request: KernelRequest, target: SessionTarget | NotebookTarget
    ) -> dict[str, Any]:
        if request.action == "inspect":
            args = {"mode": "inspect", "name": request.name, "repr_chars": INSPECT_REPR_CHARS}
        else:
            args = {
                "mode": "list",
                "max_variables": request.max_variables,
                "repr_chars": LIST_REPR_CHARS,
            }
        deadline = time.monotonic() + request.timeout
        async with target.quiet(request.timeout) as connection:
            found = await self._run_probe(connection, target, args, deadline, request.timeout)
        if request.action == "variables":
            result = render_variables(found, target.what, request.max_chars)
        else:
            if not found.get("found"):
                raise NotFoundError(f"No variable named {request.name} in {target.what}")
            result = render_inspection(found)
            if len(result["text"]) > request.max_chars:
                result["text"] = result["text"][: request.max_chars - 1] + "…"
        result["details"]["target"] = _target_details(target)
        return result

    async def _run_probe(
        self,
        connection: KernelConnection,
        target: SessionTarget | NotebookTarget,
        args: dict[str, Any],
        deadline: float,
        timeout: float,
    ) -> dict[str, Any]:
        """Run the probe; a notebook's kernel must begin it by ``deadline`` (else busy).

        A probe left queued behind someone's cell is never interrupted (that would interrupt
        their cell): the call answers busy, and the probe runs, unseen, once the cell ends.
        """
        expression = probe_expression(args)
        begin_by = None
        if isinstance(target, NotebookTarget):
            begin_by = max(deadline, time.monotonic() + BEGIN_WAIT)
        try:
            reply = await connection.run_silently(
                "",
                time.monotonic() + PROBE_SECONDS,
                user_expressions={"xcsh": expression},
                begin_by=begin_by,
            )
        except NotBegunError:
            raise busy_error(target.what, timeout) from None
        except TimeoutError:
            kernel_id = _kernel_id(target)
            if kernel_id is not None:
                await self.execution.launcher.interrupt(kernel_id)
            raise ConflictError(
                f"Reading the namespace of {target.what} took longer than "
                f"{PROBE_SECONDS:g} seconds (a slow repr?); it was interrupted",
                reason="probe_timeout",
            ) from None
        except (KernelLostError, ConnectionClosedError) as e:
            raise ConflictError(
                f"The kernel of {target.what} stopped while it was read ({e})",
                reason="kernel_not_running",
            ) from None
        text = string_expression(reply, "xcsh")
        if text is None:
            failure = (reply.get("user_expressions") or {}).get("xcsh") or {}
            why = f"{failure.get('ename', 'no answer')}: {failure.get('evalue', '')}".rstrip(": ")
            raise ConflictError(
                f"Could not read the namespace of {target.what} (is it a Python kernel? {why})",
                reason="probe_failed",
            )
        found: dict[str, Any] = json.loads(text)
        return found

    # -- status --------------------------------------------------------------------------
    async def _status(self, target: SessionTarget | NotebookTarget) -> dict[str, Any]:
        if isinstance(target, SessionTarget):
            return await self._session_status(target)
        return await self._notebook_status(target)

    async def _session_status(self, target: SessionTarget) -> dict[str, Any]:
        entry = target.describe()
        state = "dead" if entry["dead"] else ("busy" if entry["busy"] else "idle")
        count = None
        if state == "idle":
            try:
                async with target.quiet(STATUS_WAIT) as connection:
                    count = await _execution_count(connection)
            except ConflictError as e:
                state = "busy" if e.reason == "kernel_busy" else "dead"
        details = {
            "action": "status",
            "state": state,
            "executionCount": count,
            "running": {"by": "python call"} if state == "busy" else None,
            "target": _target_details(target),
        }
        key = target.session.key
        self._note_waiting(details, self.runs.waiting_on(key.name, key.cwd))
        return {"text": _status_text(target.what, details), "details": details}

    async def _notebook_status(self, target: NotebookTarget) -> dict[str, Any]:
        running: dict[str, Any] | None = None
        count: int | None = None
        try:
            kernel = await target.connect(STATUS_WAIT)
        except ConflictError as e:
            state = "busy" if e.reason == "kernel_busy" else "dead"
            if state == "busy":
                running = {"by": "unknown"}
        else:
            executed = kernel.executed
            state = "busy" if target.busy(kernel) else "idle"
            if state == "idle" and not kernel.lock.locked():
                await kernel.lock.acquire()
                try:
                    count = await _execution_count(kernel.connection)
                except (TimeoutError, KernelLostError, ConnectionClosedError):
                    count = executed.last_count
                finally:
                    kernel.lock.release()
            else:
                count = executed.last_count
            now = executed.running
            if state == "busy":
                by = "agent" if kernel.lock.locked() else "person"
                running = {"by": by}
                if now is not None and now.msg_id in kernel.activity.own:
                    running["by"] = "agent"
                if now is not None:
                    running["executionCount"] = now.execution_count
                    running.update(await self._locate(target, now.code))
        details = {
            "action": "status",
            "state": state,
            "executionCount": count,
            "running": running,
            "target": _target_details(target),
        }
        self._note_waiting(details, self.runs.waiting_in(target.api_path))
        return {"text": _status_text(target.what, details), "details": details}

    @staticmethod
    def _note_waiting(details: dict[str, Any], run: BackgroundRun | None) -> None:
        """Say in a status that the kernel's cell waits for an answer, and which run asked.

        A kernel waiting on a prompt looks busy, and nothing else would tell the agent that
        its own forgotten ``stdin: "ask"`` call holds it (until end of file, 300 s later).
        """
        waiting = run.stdin.waiting if run is not None else None
        if run is None or waiting is None:
            return
        details["state"] = "busy"
        running = details.get("running") or {"by": "python call"}
        running["awaitingInput"] = waiting.describe(run.id)
        details["running"] = running

    async def _locate(self, target: NotebookTarget, code: str) -> dict[str, Any]:
        """The index and id of the notebook's code cell whose source is ``code``, if one is."""

        def look(document: Any) -> dict[str, Any]:
            for index, cell in enumerate(document.cells):
                if isinstance(cell, dict) and cell.get("cell_type") == "code":
                    source = cell.get("source")
                    text = "".join(source) if isinstance(source, list) else source
                    if text == code:
                        return {"cellIndex": index, "cellId": cell.get("id")}
            return {}

        try:
            outcome = await self.store.view(target.path, look)
        except XcshError:
            return {}
        located: dict[str, Any] = outcome.value
        return located

    # -- interrupt, restart, change ------------------------------------------------------
    async def _interrupt(self, target: SessionTarget | NotebookTarget) -> dict[str, Any]:
        if isinstance(target, SessionTarget):
            key = target.session.key
            interrupted = self.execution.interrupt_session(key.name, key.cwd)
        else:
            kernel = self.kernels.connected(target.kernel_id)
            if kernel is not None:
                interrupted = await _busy_now(target, kernel, STATUS_WAIT)
            else:  # not read by this server: the server's own record of the kernel
                interrupted = self._server_state(target.kernel_id) == "busy"
            waiting = self.runs.waiting_in(target.api_path)
            if waiting is not None:
                # Cancelled as its call would be, the run ends its prompt's wait at once and
                # interrupts its own cell (a signal alone left the prompt waiting until the
                # kernel's reply came back, and a call made meanwhile was still refused).
                waiting.control.cancel()
                interrupted = True
            else:
                await self.execution.launcher.interrupt(target.kernel_id)
        text = f"Interrupted {target.what}" + ("" if interrupted else " (nothing was running)")
        details = {
            "action": "interrupt",
            "interrupted": interrupted,
            "target": _target_details(target),
        }
        return {"text": text, "details": details}

    def _server_state(self, kernel_id: str) -> str | None:
        """The kernel's ``execution_state`` as the server's kernel manager records it."""
        try:
            kernel = self.execution.launcher.km.get_kernel(kernel_id)
        except Exception:
            return None
        state = getattr(kernel, "execution_state", None)
        return state if isinstance(state, str) else None

    def _lose(self, kernel_id: str, why: str) -> None:
        """Tell whoever uses the kernel (a run in place) that its state is gone.

        The connection is marked lost, not closed: a run on it then stops as after a kernel
        death (``stateLost``), and the next user reconnects. What it executed is forgotten.
        """
        kernel = self.kernels.connected(kernel_id)
        if kernel is not None:
            kernel.connection.mark_lost(why)
        log = self.kernels.executed(kernel_id)
        if log is not None:
            log.reset()

    async def _refuse_if_busy(self, request: KernelRequest, target: NotebookTarget) -> bool:
        """Whether a cell runs on the kernel; 409 unless ``force`` (which skips the check)."""
        if request.force:
            kernel = self.kernels.connected(target.kernel_id)
            return kernel is not None and target.busy(kernel)
        try:
            kernel = await target.connect(request.timeout)
        except ConflictError as e:
            if e.reason != "kernel_busy":
                return False  # not running: nothing to lose
            busy = True
        else:
            busy = await _busy_now(target, kernel, request.timeout)
        if busy:
            raise ConflictError(
                f"A cell is running in {target.what}: not {_verb(request.action)} (its state "
                "would be lost). Wait for it, interrupt it, or give force: true",
                reason="kernel_busy",
            )
        return False

    async def _restart(self, request: KernelRequest, target: NotebookTarget) -> dict[str, Any]:
        was_busy = await self._refuse_if_busy(request, target)
        launcher = self.execution.launcher
        self._lose(target.kernel_id, "the kernel was restarted through the kernel tool")
        try:
            await launcher.restart(target.kernel_id)
        except KeyError:
            raise NotFoundError(f"The kernel of {target.path} is gone") from None
        details = {
            "action": "restart",
            "stateLost": True,
            "wasBusy": was_busy,
            "target": _target_details(target),
        }
        text = f"Restarted {target.what} ({target.kernel_name}): its variables are gone"
        return {"text": text, "details": details}

    async def _change(self, request: KernelRequest, target: NotebookTarget) -> dict[str, Any]:
        name = request.kernel_name
        assert name is not None
        launcher = self.execution.launcher
        if not await launcher.has_kernel_spec(name):
            raise InvalidRequestError(f"No such kernel: {name}")
        was_busy = await self._refuse_if_busy(request, target)
        sm = self.kernels.session_manager
        before = dict(target.session)
        old_id = target.kernel_id
        try:
            new_id = await ensure_async(
                sm.start_kernel_for_session(
                    before["id"],
                    path=before["path"],
                    name=before["name"],
                    type=before["type"],
                    kernel_name=name,
                )
            )
        except Exception as e:
            raise ConflictError(f"The {name} kernel could not be started: {e}") from None
        await ensure_async(sm.update_session(before["id"], kernel_id=new_id))
        self._lose(old_id, f"the notebook's kernel was changed to {name} through the kernel tool")
        await asyncio.shield(launcher.shutdown(old_id))
        # Closed once the runs it served have seen the loss (a close now would hide it).
        asyncio.get_running_loop().call_later(LOST_CLOSE_DELAY, self.kernels.forget, old_id)
        target.session = await ensure_async(sm.get_session(session_id=before["id"]))
        old_name = str(before["kernel"].get("name") or "")
        details = {
            "action": "change",
            "stateLost": True,
            "wasBusy": was_busy,
            "previousKernel": {"id": old_id, "name": old_name},
            "target": _target_details(target),
        }
        text = (
            f"{target.path} now uses a new {name} kernel (the {old_name} kernel was shut down: "
            "its variables are gone)"
        )
        return {"text": text, "details": details}


def _verb(action: str) -> str:
    return "restarted" if action == "restart" else "changed"


def _kernel_id(target: SessionTarget | NotebookTarget) -> str | None:
    if isinstance(target, SessionTarget):
        return target.session.kernel_id
    return target.kernel_id


async def _busy_now(target: NotebookTarget, kernel: NotebookKernel, timeout: float) -> bool:
    """Whether someone's cell runs on the kernel now, counting one that has just begun.

    A person's cell that just began may not have reached this server's view of the kernel yet
    (its busy status still on its way over IOPub): the barrier brings what the kernel published
    before now, so a restart never takes that cell for idle, nor an interrupt for nothing.
    """
    await kernel.connection.iopub_barrier(min(max(timeout, 1.0), 5.0))
    return target.busy(kernel)


def _target_details(target: SessionTarget | NotebookTarget) -> dict[str, Any]:
    if isinstance(target, SessionTarget):
        s = target.session
        return {
            "session": s.key.name,
            "cwd": s.key.cwd,
            "kernelId": s.kernel_id,
            "kernelName": s.kernel_name,
        }
    return {
        "notebookPath": target.path,
        "kernelId": target.kernel_id,
        "kernelName": target.kernel_name,
        "sessionId": str(target.session.get("id", "")),
    }


async def _execution_count(connection: KernelConnection) -> int | None:
    """The kernel's last execution count, from the reply to a silent empty execution."""
    reply = await connection.run_silently("", time.monotonic() + STATUS_WAIT)
    count = reply.get("execution_count")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def _status_text(what: str, details: dict[str, Any]) -> str:
    text = f"{what}: {details['state']}"
    if details["executionCount"] is not None:
        text += f" · execution count {details['executionCount']}"
    running = details.get("running")
    if running:
        where = ""
        if "cellIndex" in running:
            where = f" cell {running['cellIndex']}"
        if running.get("executionCount") is not None:
            where += f" [{running['executionCount']}]"
        waiting = running.get("awaitingInput")
        if waiting is not None:
            run_id = waiting["runId"]
            text += (
                f" · waiting for input{' at' + where if where else ''} (run {run_id}, prompt "
                f"{waiting['prompt']!r}): "
                f'answer with the python tool\'s {{"run_id": "{run_id}", "answer": "..."}}, or '
                "interrupt it"
            )
        else:
            text += f" · running{where} ({running['by']})"
    return text

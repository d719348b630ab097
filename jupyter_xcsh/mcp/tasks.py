"""The Tasks extension of MCP 2026-07-28 (``io.modelcontextprotocol/tasks``): long runs as tasks.

A ``tools/call`` that starts a run (``python``, ``notebook`` ``run`` or ``run: true``, a
``run_id`` follow-up) from a client declaring the extension in its request's capabilities, and
still running ``XcshSettings.mcp_task_after`` seconds later (2 by default), answers with a task
(``resultType: "task"``) instead of holding its request: the task is the run, its id the run's
id, kept by the run registry (``runs/registry.py``) as any run is. Then:

- ``tasks/get``: ``working`` (with the last line printed), ``input_required`` (the code's prompt
  as one form question, ``inputRequests``), ``completed`` (``result``: the ``CallToolResult``
  the call would have answered, an error of the code included) or ``cancelled``;
- ``tasks/update``: ``inputResponses`` answer the prompt (*accept* sends the answer, *decline* /
  *cancel* end of file), as ``run_id`` + ``answer`` would;
- ``tasks/cancel``: interrupts the run (the client's explicit wish to stop the work, unlike a
  request it stops waiting for); its result so far stays readable (``run_id`` + ``wait``).

Each asks what following a run by its id asks (``execute`` on ``kernels``), so a task is
reached only as its run is. Nothing is kept here but each task's creation time.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from jupyter_xcsh.errors import ConflictError, NotFoundError, XcshError
from jupyter_xcsh.mcp.elicitation import DECLINED, PASSWORD, accepted_answer, form
from jupyter_xcsh.mcp.protocol import INVALID_PARAMS, Envelope, ProtocolError
from jupyter_xcsh.mcp.tools import call_result, error_result
from jupyter_xcsh.runs.registry import BackgroundRun, RunInputTool
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools import Caller

__all__ = ["EXTENSION", "TaskWatch", "Tasks", "offers_tasks"]

EXTENSION = "io.modelcontextprotocol/tasks"
#: What a client is told to poll at, in milliseconds.
POLL_INTERVAL_MS = 1000
#: Tasks whose creation time is remembered, at most (the oldest forgotten first).
MAX_TASKS = 1000
#: The key of a task's question in ``inputRequests`` (and of its answer in ``inputResponses``).
QUESTION = "stdin"


def offers_tasks(envelope: Envelope | None) -> bool:
    """Whether a 2026 request's client declared the Tasks extension."""
    if envelope is None:
        return False
    extensions = envelope.capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Tasks:
    """The tasks of this server: its runs, followed by their ids."""

    def __init__(self, services: XcshServices) -> None:
        self.services = services
        self._created: dict[str, str] = {}

    def created(self, run_id: str) -> dict[str, Any]:
        """The ``CreateTaskResult`` of a call whose run goes on as the task ``run_id``.

        From now on a password prompt of the run gets end-of-file as soon as it waits (as the
        call's own request would have given it: MCP never asks for a secret), whether or not
        the task is polled: a poll only reports.
        """
        now = _now()
        with suppress(NotFoundError):  # ended and forgotten meanwhile: nothing to watch
            _refuse_passwords(self.services.runs.get(run_id))
        self._created[run_id] = now
        while len(self._created) > MAX_TASKS:
            del self._created[next(iter(self._created))]
        return {
            "resultType": "task",
            **self._task(run_id, "working", now),
            "statusMessage": f"run {run_id} is running: poll it with tasks/get",
        }

    def _task(self, task_id: str, status: str, now: str) -> dict[str, Any]:
        return {
            "taskId": task_id,
            "status": status,
            "createdAt": self._created.get(task_id, now),
            "lastUpdatedAt": now,
            "ttlMs": None,  # while it runs; its result is kept 10 minutes after its end
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    async def get(self, params: Mapping[str, Any], caller: Caller, version: str) -> dict[str, Any]:
        """``tasks/get``: the task's state, its result once ended (as protocol ``version``).

        Only reports: nothing about the run changes (a password prompt is the run's own
        business, ``created``).
        """
        return await self.state(await self._run(params, caller), version)

    async def state(self, run: BackgroundRun, version: str) -> dict[str, Any]:
        """The task ``run`` is, as ``tasks/get`` answers it (``DetailedTask``)."""
        task_id = run.id
        now = _now()
        waiting = run.stdin.waiting
        if waiting is not None and waiting.password:
            waiting = None  # never asked of the client (``created``): it is working
        if run.running and waiting is not None:
            prompt = waiting.describe(task_id).get("prompt", "")
            question = {"method": "elicitation/create", "params": form(str(prompt))}
            return {
                **self._task(task_id, "input_required", now),
                "inputRequests": {QUESTION: question},
            }
        if run.running:
            return {**self._task(task_id, "working", now), "statusMessage": _working_message(run)}
        try:
            body = await run.next_stop()
        except XcshError as e:
            # The call ended refused (a kernel that could not start, ...): the error result
            # its tools/call would have answered, as REST answers its 4xx.
            done = error_result(e, version)
            return {**self._task(task_id, "completed", now), "result": _complete(done)}
        if body.get("cancelled") and not body.get("timedOut"):
            message = (
                f"run {task_id} was cancelled; its output so far: call the tool with "
                f'{{"run_id": "{task_id}", "wait": 0}}'
            )
            return {**self._task(task_id, "cancelled", now), "statusMessage": message}
        done = call_result(body, version)
        return {**self._task(task_id, "completed", now), "result": _complete(done)}

    async def update(self, params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        """``tasks/update``: the client's answer to the task's prompt (others are ignored)."""
        run = await self._run(params, caller)
        responses = params.get("inputResponses")
        response = responses.get(QUESTION) if isinstance(responses, dict) else None
        if isinstance(response, dict) and run.stdin.waiting is not None:
            answer = accepted_answer(response)
            try:
                if answer is None:
                    run.stdin.refuse(DECLINED)
                else:
                    run.stdin.answer(answer)
            except ConflictError:  # answered meanwhile (the lab, a follow-up): ignored
                pass
        return {}

    async def cancel(self, params: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        """``tasks/cancel``: interrupt the run (its result so far is kept for its id)."""
        run = await self._run(params, caller)
        if run.running:
            run.control.cancel()
        return {}

    async def _run(self, params: Mapping[str, Any], caller: Caller) -> Any:
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: taskId must be a string")
        await caller.require(*RunInputTool.permission)
        try:
            return self.services.runs.get(task_id)
        except NotFoundError:
            raise ProtocolError(INVALID_PARAMS, f"Unknown task: {task_id}") from None


#: Task ids one ``subscriptions/listen`` stream follows at most (a client's subscriptions').
MAX_WATCHED = 100
#: The statuses after which a task never changes.
TERMINAL = frozenset({"completed", "failed", "cancelled"})


class TaskWatch:
    """The tasks one ``subscriptions/listen`` stream follows (``notifications.taskIds``).

    Each followed task's status is told at once, then at each change, as ``notifications/tasks``
    whose params are the task as ``tasks/get`` answers it (a terminal one with its ``result``),
    until it ends. Looked at as the stream's other subscriptions are (``changed``, every
    ``POLL_INTERVAL`` of the stream): what changes the status is the run, never this.
    """

    def __init__(self, tasks: Tasks, version: str) -> None:
        self.tasks = tasks
        self.version = version
        self._told: dict[str, str | None] = {}  # task id -> the status last told

    async def follow(self, task_ids: object, caller: Caller) -> list[str]:
        """Follow the tasks named that exist and that the caller may follow; those honored."""
        if not isinstance(task_ids, list):
            return []
        try:
            await caller.require(*RunInputTool.permission)
        except XcshError:  # may follow no run: no task is honored
            return []
        honored: list[str] = []
        for task_id in task_ids[:MAX_WATCHED]:
            if not isinstance(task_id, str) or task_id in self._told:
                continue
            try:
                self.tasks.services.runs.get(task_id)
            except NotFoundError:
                continue  # no such task (or forgotten): left out of the acknowledgment
            self._told[task_id] = None
            honored.append(task_id)
        return honored

    def __bool__(self) -> bool:
        return bool(self._told)

    async def changed(self) -> list[dict[str, Any]]:
        """The ``notifications/tasks`` of the followed tasks whose status changed since told."""
        notes = []
        for task_id, told in list(self._told.items()):
            try:
                run = self.tasks.services.runs.get(task_id)
            except NotFoundError:  # forgotten (10 minutes after its end): nothing more to tell
                del self._told[task_id]
                continue
            # tasks/get's own answer, so the two never disagree (cheap while the run goes on;
            # a result is made once, at the end, after which the task is no longer looked at).
            state = await self.tasks.state(run, self.version)
            status = state["status"]
            if status == told:
                continue
            self._told[task_id] = status
            if status in TERMINAL:
                del self._told[task_id]
            notes.append({"jsonrpc": "2.0", "method": "notifications/tasks", "params": state})
        return notes


def _complete(result: dict[str, Any]) -> dict[str, Any]:
    """A task's ``CallToolResult`` as a 2026-07-28 result (its ``resultType``)."""
    return {"resultType": "complete", **result}


def _refuse_passwords(run: BackgroundRun) -> None:
    """End-of-file for each password prompt of ``run`` as soon as it waits (``PASSWORD``)."""

    def refuse() -> None:
        waiting = run.stdin.waiting
        if waiting is not None and waiting.password:
            with suppress(ConflictError):  # answered meanwhile
                run.stdin.refuse(PASSWORD)

    if run.running:
        run.on_prompt(refuse)
        refuse()  # one waiting already


def _working_message(run: Any) -> str:
    """A ``working`` task's ``statusMessage``: the approval it waits for, else its last line."""
    events, _ = run.events.after(max(0, run.events.next - 50))
    waiting = _approval_wait(events)
    if waiting is not None:
        return f"run {run.id} is {waiting}"
    line = _last_line(events)
    return f"run {run.id} is running: {line}" if line else f"run {run.id} is running"


def _approval_wait(events: list[Any]) -> str | None:
    """What a run whose latest ``events`` these are waits for, if the person's approval.

    Such a run (an ``ask-before-run`` cell, a policy that asks) says so instead of its last
    line: the wait is the person's, not the client's, so the task stays ``working``
    (``input_required`` would ask the client for an answer it cannot give).
    """
    for event in reversed(events):
        if not isinstance(event, dict) or event.get("type") == "cell":
            if isinstance(event, dict):
                break  # a cell began or ended after any approval: it was answered
            continue
        status = event.get("event") if event.get("type") == "status" else None
        if isinstance(status, dict) and status.get("op") == "approval":
            if status.get("state") == "waiting":
                return str(status.get("message", "waiting for approval"))
            break
    return None


def _last_line(events: list[Any]) -> str:
    """The last line a run whose latest ``events`` these are printed ("" if none)."""
    for event in reversed(events):
        text = event.get("text") if isinstance(event, dict) else None
        if isinstance(text, str) and text.strip():
            return text.strip().splitlines()[-1][:200]
    return ""

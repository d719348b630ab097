"""The approvals agents wait for: asked, answered in the lab (first answer counts), or expired.

An agent's call whose policy says ``ask`` (or whose run reaches an ``ask-before-run`` cell)
becomes a pending ``Approval``; the lab lists them (``GET /api/xcsh/approvals``, which also
marks a lab as open for ``presence_window`` seconds) and answers one (``POST``). The list has a
``version``, bumped on every ask, answer and expiry: the lab's long poll (``wait``) is held
until it changes, and a lab counts as open while one is held, so a lab in a background tab
(whose timers the browser slows to once a minute) stays open. With no lab open the call is
refused at once; past its timeout, too. Every ask, answer, expiry and refusal
is an event on the server's bus (``approval/v1``), kept in the activity history.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.errors import ConflictError, InvalidRequestError, NotFoundError, RefusedError

__all__ = [
    "ANSWERS",
    "APPROVAL_SCHEMA",
    "Approval",
    "ApprovalRegistry",
    "EventSink",
    "parse_wait",
]

#: The schema of approval events (``events/schemas/approval.v1.yaml``).
APPROVAL_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/approval/v1"
#: The person's answers.
ANSWERS = ("allow-once", "allow-notebook", "deny")
#: Longest reason a person may give with a deny.
MAX_REASON = 500
#: Answered or expired approvals remembered (to answer a late answer 409, not 404).
MAX_FINISHED = 1000
#: Seconds between two progress reports of a call waiting for an answer.
PROGRESS_INTERVAL = 10.0
#: Longest a lab's long poll is held (``GET /api/xcsh/approvals?wait=``), in seconds.
MAX_WAIT = 30
#: Largest version a client may give back (``since``): the largest integer a browser's JSON
#: number holds exactly.
MAX_VERSION = 2**53 - 1


class EventSink(Protocol):
    """Where approval events go (``ActivityEvents``)."""

    def emit(self, schema_id: str, data: dict[str, Any]) -> None:
        """Emit one event of ``schema_id``."""


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Approval:
    """One question to the person: may this agent do this action, now."""

    id: str
    agent: str  # the agent's name, as the activity panel shows it
    agent_key: str  # who the agent is across its requests (``Caller.agent``)
    tool: str
    cls: str
    summary: str
    path: str
    cell_ids: list[str]
    detail: dict[str, str]
    asked_at: float
    expires_at: float
    #: The answer: ``(decision, reason)``; set once (None until asked).
    answer: asyncio.Future[tuple[str, str | None]] | None = field(repr=False, default=None)
    state: str = "pending"  # pending, answered, expired
    #: Where a run's progress reports the wait: the run's cell index (-1: the call itself).
    index: int = -1
    #: What "allow-notebook" allows for the server's life: the class, or the tag's runs.
    grants: str = ""

    def to_json(self) -> dict[str, Any]:
        """The approval as the REST API and the events show it."""
        return {
            "id": self.id,
            "agent": self.agent,
            "tool": self.tool,
            "class": self.cls,
            "summary": self.summary,
            "path": self.path,
            "cellIds": list(self.cell_ids),
            "detail": dict(self.detail),
            "askedAt": _iso(self.asked_at),
            "expiresAt": _iso(self.expires_at),
        }


class ApprovalRegistry:
    """The pending approvals of one server, the lab's presence and the grants for a session."""

    def __init__(
        self,
        events: EventSink | None = None,
        *,
        presence_window: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.events = events
        self.presence_window = presence_window
        self.clock = clock
        self._lab_seen: float | None = None
        # The lab's long polls held now: a lab is open while any is.
        self._held = 0
        # Starts from the clock (ms), so a restarted server's versions are not an earlier
        # server's: a lab's ``since`` from before a restart never matches by chance.
        self._version = int(clock() * 1000)
        self._changed = asyncio.Event()
        self._pending: dict[str, Approval] = {}
        self._finished: OrderedDict[str, Approval] = OrderedDict()
        # (agent key, API path, class): allowed for the server's life ("allow-notebook").
        self._granted: set[tuple[str, str, str]] = set()

    # -- the lab ------------------------------------------------------------------------------
    def mark_lab_open(self) -> None:
        """A lab asked for the approvals: it is open, and will answer, for a while."""
        self._lab_seen = self.clock()

    def lab_open(self) -> bool:
        """Whether a lab waits for a change now, or asked within ``presence_window`` seconds."""
        if self._held:
            return True
        seen = self._lab_seen
        return seen is not None and self.clock() - seen <= self.presence_window

    @property
    def version(self) -> int:
        """The version of the pending list, bumped on every ask, answer and expiry."""
        return self._version

    @property
    def held(self) -> int:
        """How many long polls wait for a change now."""
        return self._held

    async def wait_change(self, since: int | None, wait: float) -> None:
        """Wait up to ``wait`` seconds for the version to change from ``since``.

        Returns at once when it already differs (or ``since`` is None). The lab counts as open
        while this waits, and for ``presence_window`` seconds after. Cancelled (the client
        hung up), it lets go of the wait at once.
        """
        self.mark_lab_open()
        if since is None or since != self._version or wait <= 0:
            return
        changed = self._changed
        self._held += 1
        try:
            await asyncio.wait_for(changed.wait(), wait)
        except TimeoutError:
            pass
        finally:
            self._held -= 1
            self.mark_lab_open()

    def pending(self) -> list[Approval]:
        """The approvals waiting for an answer, oldest first."""
        return sorted(self._pending.values(), key=lambda a: a.asked_at)

    def answer(self, approval_id: str, decision: Any, reason: Any = None) -> Approval:
        """The person's answer to ``approval_id``: the first counts; 409 after, 404 unknown."""
        if decision not in ANSWERS:
            raise InvalidRequestError(f"decision must be one of {', '.join(ANSWERS)}")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
            raise InvalidRequestError(f"reason must be a string of at most {MAX_REASON} characters")
        approval = self._pending.get(approval_id)
        if approval is None:
            finished = self._finished.get(approval_id)
            if finished is None:
                raise NotFoundError(f"No approval {approval_id}")
            raise ConflictError(
                f"Approval {approval_id} was already {finished.state}: the first answer counts",
                reason="approval_" + finished.state,
            )
        self._finish(approval, "answered")
        if decision == "allow-notebook":
            self.grant(approval.agent_key, approval.path, approval.grants or approval.cls)
        assert approval.answer is not None  # pending: asked
        approval.answer.set_result((decision, reason or None))
        self._emit("answered", approval, decision=decision, reason=reason or None)
        return approval

    # -- the agents' calls --------------------------------------------------------------------
    def grant(self, agent_key: str, path: str, cls: str) -> None:
        """Allow this agent ``cls`` on ``path`` for the server's life (``allow-notebook``)."""
        self._granted.add((agent_key, path, cls))

    def granted(self, agent_key: str, path: str, cls: str) -> bool:
        """Whether the person allowed this agent ``cls`` on ``path`` for the server's life."""
        return (agent_key, path, cls) in self._granted

    async def ask(
        self,
        approval: Approval,
        *,
        progress: Callable[[Approval], None] | None = None,
        control: CallControl | None = None,
    ) -> str:
        """Ask the person and wait for the answer: ``allow-once`` or ``allow-notebook``.

        Raises ``approval_required`` (403) at once with no lab open, or at ``expires_at``;
        ``approval_denied`` (403) with the person's reason. A cancelled call withdraws it.
        """
        if not self.lab_open():
            self.refuse(approval, "approval_required")
            raise approval_required(approval, "no JupyterLab is open to ask")
        approval.answer = asyncio.get_running_loop().create_future()
        self._pending[approval.id] = approval
        self._bump()
        self._emit("asked", approval)
        try:
            decision, reason = await self._wait(approval, progress, control)
        except TimeoutError:
            self._finish(approval, "expired")
            self._emit("expired", approval)
            raise approval_required(approval, "nobody answered in time") from None
        except BaseException:
            if approval.state == "pending":
                self._finish(approval, "expired")
                self._emit("expired", approval, reason="the call was cancelled")
            raise
        if decision == "deny":
            raise approval_denied(approval, reason)
        return decision

    async def _wait(
        self,
        approval: Approval,
        progress: Callable[[Approval], None] | None,
        control: CallControl | None,
    ) -> tuple[str, str | None]:
        """The answer, reporting progress every ``PROGRESS_INTERVAL`` seconds meanwhile."""
        while True:
            if progress is not None:
                progress(approval)
            left = approval.expires_at - self.clock()
            if left <= 0:
                raise TimeoutError()
            step = min(left, PROGRESS_INTERVAL)
            assert approval.answer is not None
            waiting = asyncio.shield(approval.answer)
            try:
                if control is not None:
                    return await control.guard(waiting, time.monotonic() + step)
                return await asyncio.wait_for(waiting, step)
            except TimeoutError:
                continue

    def refuse(self, approval: Approval, reason: str) -> None:
        """Report a refusal without a question (a ``deny`` policy, no lab open, the policy file)."""
        self._emit("refused", approval, reason=reason)

    def _finish(self, approval: Approval, state: str) -> None:
        approval.state = state
        self._pending.pop(approval.id, None)
        self._finished[approval.id] = approval
        while len(self._finished) > MAX_FINISHED:
            self._finished.popitem(last=False)
        self._bump()

    def _bump(self) -> None:
        """A new version of the pending list: every held long poll answers now."""
        self._version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    def _emit(self, kind: str, approval: Approval, **extra: Any) -> None:
        if self.events is None:
            return
        data: dict[str, Any] = {
            "callId": approval.id,
            "kind": kind,
            "path": approval.path,
            "approval": approval.to_json(),
        }
        data.update((k, v) for k, v in extra.items() if v is not None)
        self.events.emit(APPROVAL_SCHEMA, data)


def parse_wait(wait: str | None, since: str | None) -> tuple[int, int | None]:
    """The query of a long poll: ``wait`` seconds (0 to ``MAX_WAIT``, default 0) and ``since``.

    Raises ``InvalidRequestError`` (400) for anything but decimal integers in range.
    """
    seconds = 0
    if wait is not None:
        seconds = _whole(wait, MAX_WAIT)
        if seconds < 0:
            raise InvalidRequestError(f"wait must be whole seconds from 0 to {MAX_WAIT}")
    version = None
    if since is not None:
        version = _whole(since, MAX_VERSION)
        if version < 0:
            raise InvalidRequestError(
                "since must be a version the server answered (a whole number from 0 to 2^53-1)"
            )
    return seconds, version


def _whole(text: str, most: int) -> int:
    """``text`` as a decimal integer from 0 to ``most``, else -1 (digits only, no sign)."""
    if not text or len(text) > len(str(most)) or not (text.isascii() and text.isdigit()):
        return -1
    value = int(text)
    return value if value <= most else -1


def new_approval_id() -> str:
    """A fresh approval id (32 lowercase hex digits, as a call id)."""
    return uuid.uuid4().hex


def _how_to_allow(approval: Approval) -> str:
    return (
        f"The person can allow it in JupyterLab when asked (keep the lab open), or change the "
        f"agent access of {approval.path or 'the folder'} (the notebook's or folder's Agent "
        "access menu). Nothing was changed."
    )


def approval_required(approval: Approval, why: str) -> RefusedError:
    """The refusal of a call that needed the person's approval and did not get it."""
    return RefusedError(
        f"Approval required to {approval.summary}: {why}. {_how_to_allow(approval)}",
        reason="approval_required",
        details={"approval": approval.to_json()},
    )


def approval_denied(approval: Approval, reason: str | None) -> RefusedError:
    """The refusal of a call the person denied, with their reason."""
    said = f": {reason}" if reason else " (no reason given)"
    return RefusedError(
        f"The person denied this request to {approval.summary}{said}. Nothing was changed.",
        reason="approval_denied",
        details={"approval": approval.to_json(), "reason": reason},
    )

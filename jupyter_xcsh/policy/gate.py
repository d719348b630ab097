"""Where every agent tool asks before it acts: the effective policy, then allow, ask or deny.

Each tool classifies its call (``AgentAction``: the class, the path it touches, a summary
and what would change) in its one call path and hands it to ``PolicyGate.check`` through its
``Caller`` (``Caller.permit``), so REST and MCP share every decision. A run in place asks
again at each ``ask-before-run`` cell it reaches (``check_cell``), whatever the policy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import InvalidRequestError, NotFoundError, RefusedError
from jupyter_xcsh.paths import real_path
from jupyter_xcsh.policy.approvals import Approval, ApprovalRegistry, new_approval_id
from jupyter_xcsh.policy.rules import (
    DECISIONS,
    KINDS,
    Rule,
    effective,
    normalize_path,
    parse_rule,
    preset_of,
)
from jupyter_xcsh.policy.store import PolicyStore
from jupyter_xcsh.policy.tags import ASK_BEFORE_RUN, protected

__all__ = ["AgentAction", "PolicyGate"]

#: Characters of a diff, code or file kept in an approval's detail.
MAX_DETAIL_CHARS = 20000


@dataclass(frozen=True)
class AgentAction:
    """One action of an agent's call, as a policy judges it."""

    tool: str
    cls: str  # read, edit, run, python, destructive
    path: str  # the API path it touches ("" for the root)
    summary: str  # one line: "run cell 3 (id ab12) of analysis.ipynb"
    cell_ids: tuple[str, ...] = ()
    detail: dict[str, str] = field(default_factory=dict)
    #: Seconds the call waits for an answer (its own timeout); None: the server's default.
    timeout: float | None = None
    #: The cell index of a run's progress a wait is reported at (-1: the call).
    index: int = -1
    #: Other paths it touches (a rename's new path): judged too, the strictest counts.
    others: tuple[str, ...] = ()


class PolicyGate:
    """The policies of one server (operator's and person's) and the approvals they ask for."""

    def __init__(
        self,
        operator: Iterable[Rule],
        store: PolicyStore | None,
        approvals: ApprovalRegistry,
        *,
        timeout: float = 120.0,
        root: str | None = None,
    ) -> None:
        """``root``: the contents root, to refuse any tool reaching the store's file there."""
        self.root = root
        self.operator = list(operator)
        self.store = store
        self.approvals = approvals
        self.timeout = timeout

    @property
    def store_file(self) -> str | None:
        """The person's rules' file (no agent tool may reach it)."""
        return None if self.store is None else self.store.path

    def describe(self, path: str) -> dict[str, Any]:
        """``GET /api/xcsh/policies``: the effective decisions of ``path`` and their rules."""
        path = normalize_path(path)
        decisions, rules = effective(self.operator, self._person(), path)
        return {
            "path": path,
            "effective": decisions,
            "preset": preset_of(decisions),
            "rules": [rule.to_json() for rule in rules],
        }

    def set_rule(self, body: Any) -> dict[str, Any]:
        """``PUT /api/xcsh/policies``: set the person's rule of a path; the path's policy now.

        ``body``: ``{path, kind, preset}`` or ``{path, kind, classes}`` (400 otherwise).
        """
        if isinstance(body, dict) and "source" in body:
            raise InvalidRequestError("source is not accepted: the lab's rules are the person's")
        rule = parse_rule(body, "person", where="policy")
        if self.store is None:
            raise InvalidRequestError("This server keeps no person's policies")
        self.store.set(rule)
        return self.describe(rule.path)

    def remove_rule(self, path: str | None, kind: str | None) -> None:
        """``DELETE /api/xcsh/policies``: remove the person's rule of ``path`` and ``kind``."""
        if path is None:
            raise InvalidRequestError("path is required")
        if kind not in KINDS:
            raise InvalidRequestError(f"kind must be one of {', '.join(KINDS)}")
        if self.store is None or not self.store.remove(normalize_path(path), kind):
            raise NotFoundError(f"No policy of the person for the {kind} {path or '(the root)'}")

    def _person(self) -> list[Rule]:
        return [] if self.store is None else self.store.rules

    async def check(
        self,
        caller: Any,
        action: AgentAction,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> None:
        """Let ``action`` go on, ask the person, or raise ``policy_denied``/``approval_*``."""
        path = normalize_path(action.path)
        try:
            self._protect(action.cls, path, *action.others)
        except RefusedError:
            self.approvals.refuse(self._approval(caller, action, path), "policy_protected")
            raise
        decisions, rules = effective(self.operator, self._person(), path)
        for other in action.others:
            more, matched = effective(self.operator, self._person(), normalize_path(other))
            if DECISIONS.index(more[action.cls]) > DECISIONS.index(decisions[action.cls]):
                decisions, rules = more, matched
        decision = decisions[action.cls]
        if decision == "allow":
            return
        approval = self._approval(caller, action, path)
        if decision == "deny":
            self.approvals.refuse(approval, "policy_denied")
            rule = next(r for r in rules if r.classes.get(action.cls) == "deny")
            where = f"{rule.kind} {rule.path or '(the root)'}"
            raise RefusedError(
                f"Refused by policy: agents may not {action.cls} in {path or 'the root'} "
                f"(the {rule.source}'s rule for the {where} says deny: {action.summary}). "
                "Nothing was changed.",
                reason="policy_denied",
                details={"class": action.cls, "path": path, "rule": rule.to_json()},
            )
        if self.approvals.granted(caller.agent, path, action.cls):
            return
        await self._ask(approval, observer, control)

    async def check_cell(
        self,
        caller: Any,
        action: AgentAction,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> None:
        """An ``ask-before-run`` cell reached by a run: ask, even where ``run`` is allowed."""
        path = normalize_path(action.path)
        if self.approvals.granted(caller.agent, path, ASK_BEFORE_RUN):
            return
        approval = self._approval(caller, action, path)
        approval.grants = ASK_BEFORE_RUN
        await self._ask(approval, observer, control)

    def _protect(self, cls: str, *paths: str) -> None:
        """Refuse an action reaching the policy store's file (``policy_protected``).

        Only where the file lies under the contents root (it should not: by default it is in
        the Jupyter data directory), a tool could name it; a destructive action on a folder
        holding it is refused too.
        """
        store, root = self.store_file, self.root
        if store is None or root is None:
            return
        for path in paths:
            if "\0" in path:  # no such file; the tool refuses the path itself
                continue
            real = real_path(os.path.join(root, *path.split("/")))
            inside = store.startswith(real.rstrip(os.sep) + os.sep)
            if real == store or (cls == "destructive" and inside):
                raise protected(
                    f"Refused: {path or 'the root'} holds the person's agent policies; no agent "
                    "tool may reach them."
                )

    async def _ask(
        self, approval: Approval, observer: ExecutionObserver | None, control: CallControl | None
    ) -> str:
        def progress(asked: Approval) -> None:
            if observer is None:
                return
            left = max(0, round(asked.expires_at - self.approvals.clock()))
            message = f"waiting for the person's approval ({left} s left): {asked.summary}"
            event = {"op": "approval", "state": "waiting", "message": message}
            observer.status_event(asked.index, {**event, "approval": asked.to_json()})

        return await self.approvals.ask(approval, progress=progress, control=control)

    def _approval(self, caller: Any, action: AgentAction, path: str) -> Approval:
        now = self.approvals.clock()
        timeout = self.timeout if action.timeout is None else action.timeout
        detail = {k: v[:MAX_DETAIL_CHARS] for k, v in action.detail.items() if v}
        approval = Approval(
            id=new_approval_id(),
            agent=caller.name or "Agent",
            agent_key=caller.agent,
            tool=action.tool,
            cls=action.cls,
            summary=action.summary,
            path=path,
            cell_ids=list(action.cell_ids),
            detail=detail,
            asked_at=now,
            expires_at=now + timeout,
            index=action.index,
        )
        return approval

"""Who calls a tool: the user and a way to ask the server's authorizer about them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from jupyter_xcsh.errors import forbidden

if TYPE_CHECKING:
    from jupyter_xcsh.calls.control import CallControl
    from jupyter_xcsh.calls.observer import ExecutionObserver
    from jupyter_xcsh.policy.gate import AgentAction, PolicyGate

__all__ = ["Caller", "Permission"]


class Permission(NamedTuple):
    """What a call asks the server's authorizer: an action on a resource."""

    action: str  # "read" | "write" | "execute"
    resource: str  # "contents" | "kernels" (as the server's own APIs)


@dataclass(frozen=True)
class Caller:
    """The identity behind a tool call, whatever the transport (REST, MCP, the lab).

    ``authorize(action, resource)`` asks the server's authorizer (``jupyter_server``'s
    ``Authorizer.is_authorized``) on the caller's behalf, as the transport's handler would.
    ``agent`` tells one agent from another across its requests (its credential, and over MCP
    its session): the notebook tool's ``changes`` says ``you`` for the caller's own changes.
    ``name``: what the agent calls itself (MCP's ``clientInfo.name``, REST's ``X-Agent-Name``
    header), shown to the people of a collaboration room; "" when it said nothing.
    ``persona``: the Jupyter AI persona and chat the agent is, from the headers Jupyter AI
    stamps on its personas' requests ("" otherwise); ``name`` and ``agent`` then say so, and
    what the client says of itself (MCP's ``clientInfo``) does not rename it.
    ``gate``: the server's policies (``policy/gate.py``), which every agent tool asks before
    it acts (``permit``); None: everything allowed (the server itself, tests of the core).
    """

    user: Any
    authorize: Callable[[str, str], Awaitable[bool]]
    agent: str = ""
    name: str = ""
    persona: str = ""
    gate: PolicyGate | None = None

    async def require(self, action: str, resource: str) -> None:
        """Raise ``ForbiddenError`` unless the caller may do ``action`` on ``resource``."""
        if not await self.authorize(action, resource):
            raise forbidden(action, resource)

    async def permit(
        self,
        action: AgentAction,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> None:
        """Let the policies judge ``action``: return to go on, or raise why not.

        ``policy_denied``, ``approval_required`` or ``approval_denied`` (403); an ``ask``
        waits for the person's answer, reporting the wait to ``observer``.
        """
        if self.gate is not None:
            await self.gate.check(self, action, observer, control)

    @classmethod
    def trusted(cls, user: Any = None) -> Caller:
        """A caller every action is allowed to (the server itself, tests of the core)."""

        async def allow(action: str, resource: str) -> bool:
            return True

        return cls(user=user, authorize=allow)

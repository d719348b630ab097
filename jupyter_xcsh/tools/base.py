"""The Tool interface: what each tool declares once, and what REST and MCP are made from.

A tool class declares its ``name`` (its MCP name, or the MCP action that serves it), its REST
``route`` (its path in ``rest-api.yml``, whose request is the MCP tool's input schema) and the
``permission`` every call needs before its body is read. The REST handler's ``@authorized``
(``handlers.base.tool_authorized``) and MCP's admission (``mcp.tools.Operation``) both ask
that declaration; the tool itself asks only what an action needs beyond it (a change:
``write``), from the same resource. The server's authorizer is asked the same questions, in
the same order, as when each layer wrote its own.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, ClassVar, Protocol

from jupyter_xcsh.calls.caller import Caller, Permission

__all__ = ["Permission", "Tool"]


class Tool(Protocol):
    """One tool: its name, its REST route, its permission and its one call path."""

    name: ClassVar[str]
    route: ClassVar[str]
    permission: ClassVar[Permission]

    def call(self, body: dict[str, Any], caller: Caller, /) -> Awaitable[dict[str, Any]]:
        """Validate ``body``, check the caller may, act; return the answer's body."""
        ...

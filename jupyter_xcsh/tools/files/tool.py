"""The files tool's one call path, shared by REST and MCP."""

from __future__ import annotations

from typing import Any, ClassVar

from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.tools.base import Permission
from jupyter_xcsh.tools.classify import files_action
from jupyter_xcsh.tools.files.request import parse_request
from jupyter_xcsh.tools.files.search import FileSearch
from jupyter_xcsh.tools.files.workspace import Workspace

__all__ = ["FilesTool"]


class FilesTool:
    """List, read, write, create, rename, delete and search files of the contents root."""

    name: ClassVar[str] = "files"
    route: ClassVar[str] = "/api/xcsh/files"
    #: Every call reads; a change also needs ``write`` on the same resource.
    permission: ClassVar[Permission] = Permission("read", "contents")

    def __init__(self, workspace: Workspace, search: FileSearch | None = None) -> None:
        """Work on ``workspace``; ``search`` shares the notebook tool's regex processes."""
        self.workspace = workspace
        self.finder = search or FileSearch(workspace)

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may, run it; return ``{text, details}``.

        ``list``, ``read`` and ``search`` need ``read`` on ``contents``, the other actions
        ``write``. Raises the domain errors of ``jupyter_xcsh.errors``.
        """
        request = parse_request(body)
        await caller.require("write" if request.changes else "read", self.permission.resource)
        await caller.permit(files_action(request))
        if request.action == "search":
            return await self.finder.search(request)
        action = getattr(self.workspace, request.action)
        result: dict[str, Any] = await action(request)
        return result

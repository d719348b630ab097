"""``POST /api/xcsh/kernel``: the kernel tool."""

from __future__ import annotations

import json

from tornado import web

from jupyter_xcsh.handlers.base import XcshAPIHandler, tool_authorized
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.kernel.tool import KernelTool


class KernelHandler(XcshAPIHandler):
    """Inspect or control a python session's or a notebook's kernel (see ``rest-api.yml``).

    Answers 200 with ``{"text", "details"}``; 400 for a malformed body; 403 for a caller without
    the action's right on ``kernels``; 404 for an unknown session, notebook or variable, or a
    notebook without a kernel; 409 for a kernel busy past ``timeout``, a restart or change
    refused while a cell runs, or a kernel that is not running.
    """

    auth_resource = KernelTool.permission.resource

    @web.authenticated
    @tool_authorized(KernelTool)
    async def post(self) -> None:
        """Run one kernel tool request; the action's own right is asked by the tool."""
        with self.domain_errors():
            result = await self.services.kernel.call(self.json_body(), self.caller)
        self.finish(json.dumps(result))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the kernel tool's URL routes."""
    return [(KernelTool.route, KernelHandler, {"services": services})]

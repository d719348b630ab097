"""``/api/xcsh/sessions``: list, shut down and interrupt python tool sessions."""

from __future__ import annotations

import json
import re

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.handlers.base import XcshAPIHandler
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.python.tool import PythonTool

#: C0 control characters and DEL: no working directory a session is keyed by contains one.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _SessionsBase(XcshAPIHandler):
    auth_resource = "kernels"

    @property
    def service(self) -> PythonTool:
        """The python tool, whose sessions these are."""
        return self.services.python

    def cwd_argument(self) -> str | None:
        """The ``?cwd=`` query argument exactly as sent (None when absent).

        Tornado's ``get_query_argument`` turns control characters into spaces and strips
        white space, so ``?cwd=%00`` would address the root's session (``""``): the value is
        read as sent instead, and one with a control character is refused (400).
        """
        values = self.request.query_arguments.get("cwd")
        if not values:
            return None
        cwd = self.decode_argument(values[-1], name="cwd")
        if _CONTROL.search(cwd):
            raise InvalidRequestError(f"cwd must not contain control characters: {cwd!r}")
        return cwd


class SessionsHandler(_SessionsBase):
    """``GET``: the cached sessions, most recently used first (200 ``{"sessions": [...]}``)."""

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """List the sessions."""
        self.finish(json.dumps({"sessions": self.service.list_sessions()}))


class SessionHandler(_SessionsBase):
    """``DELETE``: shut down the sessions with this name (204; 404 if there is none).

    ``?cwd=<dir>`` addresses the one session of that working directory (sessions are keyed
    by name and cwd); without it, every session of the name goes.
    """

    @web.authenticated
    @authorized("write")
    async def delete(self, name: str) -> None:
        """Shut the session's kernel down."""
        with self.domain_errors():
            await self.service.delete_session(name, self.cwd_argument())
        self.set_status(204)
        self.finish()


class SessionInterruptHandler(_SessionsBase):
    """``POST``: cancel the running call of the session (200 ``{"interrupted"}``; 404).

    ``?cwd=<dir>`` as for ``DELETE``.
    """

    @web.authenticated
    @authorized("execute")
    async def post(self, name: str) -> None:
        """Interrupt the session's running call; its result says ``cancelled``."""
        with self.domain_errors():
            interrupted = self.service.interrupt_session(name, self.cwd_argument())
        self.finish(json.dumps({"interrupted": interrupted}))


class CallInterruptHandler(_SessionsBase):
    """``POST /api/xcsh/calls/<callId>/interrupt``: cancel one running call (200; 404)."""

    @web.authenticated
    @authorized("execute")
    async def post(self, call_id: str) -> None:
        """Cancel the call; its result says ``cancelled`` (other calls are untouched)."""
        with self.domain_errors():
            self.services.runs.interrupt(call_id)
        self.finish(json.dumps({"interrupted": True}))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the sessions and calls URL routes."""
    given = {"services": services}
    return [
        (r"/api/xcsh/sessions", SessionsHandler, given),
        (r"/api/xcsh/sessions/(?P<name>[^/]+)", SessionHandler, given),
        (r"/api/xcsh/sessions/(?P<name>[^/]+)/interrupt", SessionInterruptHandler, given),
        (r"/api/xcsh/calls/(?P<call_id>[0-9a-f]{32})/interrupt", CallInterruptHandler, given),
    ]

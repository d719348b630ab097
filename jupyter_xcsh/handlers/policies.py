"""``/api/xcsh/policies`` and ``/api/xcsh/approvals``: the person's side of agent policies.

These are the lab's endpoints, not an agent tool: the person sets a notebook's or folder's
agent access, lists the approvals agents wait for and answers them (docs/users/policies.md).
"""

from __future__ import annotations

import asyncio
import json

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_xcsh.handlers.base import XcshAPIHandler
from jupyter_xcsh.policy.approvals import parse_wait
from jupyter_xcsh.services import XcshServices


class PoliciesHandler(XcshAPIHandler):
    """Read, set or remove the agent policy of a notebook or folder.

    ``GET ?path=``: 200 ``{path, effective, preset, rules}``. ``PUT`` body ``{path, kind,
    preset}`` or ``{path, kind, classes}``: 200 with the GET shape of that path; 400 for a bad
    body. ``DELETE ?path=&kind=``: 204; 404 when the person has no such rule. 403 for a caller
    without ``read`` (GET) or ``write`` (PUT, DELETE) on ``contents``.
    """

    auth_resource = "contents"

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """The effective policy of ``path`` (default: the root) and the rules it comes from."""
        with self.domain_errors():
            result = self.services.policies.describe(self.query_argument("path") or "")
        self.finish(json.dumps(result))

    @web.authenticated
    @authorized("write")
    async def put(self) -> None:
        """Set the person's rule of a path."""
        with self.domain_errors():
            result = self.services.policies.set_rule(self.json_body())
        self.finish(json.dumps(result))

    @web.authenticated
    @authorized("write")
    async def delete(self) -> None:
        """Remove the person's rule of a path and kind."""
        with self.domain_errors():
            self.services.policies.remove_rule(
                self.query_argument("path"), self.query_argument("kind")
            )
        self.set_status(204)
        self.finish()


class ApprovalsHandler(XcshAPIHandler):
    """``GET ?wait=&since=``: 200 ``{approvals: [...], version}``; marks a lab open.

    With ``wait`` (seconds) and ``since`` (the version the lab has), a long poll: held until
    the version differs from ``since`` or ``wait`` has passed; a lab is open while it is held.
    A client that hangs up lets go of its wait. 400 for a bad ``wait`` or ``since``.
    """

    auth_resource = "contents"
    _waiting: asyncio.Task[None] | None = None

    @web.authenticated
    @authorized("write")
    async def get(self) -> None:
        """List the pending approvals, at once or when they change; the caller is a lab."""
        with self.domain_errors():
            wait, since = parse_wait(self.query_argument("wait"), self.query_argument("since"))
        approvals = self.services.policies.approvals
        self._waiting = asyncio.ensure_future(approvals.wait_change(since, wait))
        await asyncio.wait({self._waiting})
        if self._waiting.cancelled():
            return  # the client hung up: nobody to answer
        self._waiting.result()
        pending = [a.to_json() for a in approvals.pending()]
        self.finish(json.dumps({"approvals": pending, "version": approvals.version}))

    def on_connection_close(self) -> None:
        """The client hung up: stop holding its request."""
        if self._waiting is not None:
            self._waiting.cancel()
        super().on_connection_close()


class ApprovalHandler(XcshAPIHandler):
    """``POST /api/xcsh/approvals/<id>`` body ``{decision, reason?}``: the person's answer.

    200 ``{approval, decision}``; 400 for a bad body; 404 for an unknown id; 409 when it was
    already answered or has expired (the first answer counts).
    """

    auth_resource = "contents"

    @web.authenticated
    @authorized("write")
    async def post(self, approval_id: str) -> None:
        """Answer one approval: ``allow-once``, ``allow-notebook`` or ``deny``."""
        with self.domain_errors():
            body = self.json_body()
            unknown = sorted(set(body) - {"decision", "reason"})
            if unknown:
                raise web.HTTPError(400, "%s", f"Unknown field: {unknown[0]}")
            approval = self.services.policies.approvals.answer(
                approval_id, body.get("decision"), body.get("reason")
            )
        self.finish(json.dumps({"approval": approval.to_json(), "decision": body["decision"]}))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the policy and approval URL routes."""
    given = {"services": services}
    return [
        (r"/api/xcsh/policies", PoliciesHandler, given),
        (r"/api/xcsh/approvals", ApprovalsHandler, given),
        (r"/api/xcsh/approvals/([0-9a-f]{32})", ApprovalHandler, given),
    ]

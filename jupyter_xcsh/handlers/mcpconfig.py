"""``GET /api/xcsh/mcp-config``: each agent's MCP configuration, for the lab's dialog.

The lab's "Connect an agent" dialog shows them (docs/developers/contract.md §10.4).

The configurations are rendered by the code that prints them for ``jupyter xcsh mcp-config``
(``mcp/client_config.py``): one source for the command and the dialog. The URL is the server's
as the request reached it (its scheme, host and base URL, a JupyterHub prefix included), the
token the server's own, hidden unless ``show_token=true`` is asked by a caller who may
``write`` on ``server``.
"""

from __future__ import annotations

import dataclasses
import json

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.handlers.base import XcshAPIHandler
from jupyter_xcsh.mcp.client_config import CLIENTS, HIDDEN_TOKEN, McpEndpoint, configurations
from jupyter_xcsh.mcp.jupyter_ai import server_token
from jupyter_xcsh.services import XcshServices

#: The values ``show_token`` takes.
_BOOLEANS = {"true": True, "false": False}


class McpConfigHandler(XcshAPIHandler):
    """``GET``: ``{url, tokenShown, hub, clients: [{client, title, where, text}]}`` (200)."""

    auth_resource = "server"

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """Answer the configurations (``?client=`` one of them; ``?show_token=true``)."""
        with self.domain_errors():
            client = self.query_argument("client")
            if client is not None and client not in CLIENTS:
                raise InvalidRequestError(f"client must be one of {', '.join(CLIENTS)}: {client!r}")
            show = self.query_argument("show_token") or "false"
            if show not in _BOOLEANS:
                raise InvalidRequestError(f"show_token must be true or false: {show!r}")
            if _BOOLEANS[show]:
                # The token opens the whole server: who may see it may do what it does.
                await self.caller.require("write", "server")
            base = f"{self.request.protocol}://{self.request.host}{self.base_url}"
            info = {
                "url": base,
                "token": server_token(self.serverapp),
                "root_dir": self.settings.get("server_root_dir", ""),
            }
            endpoint = McpEndpoint.of(info)
            # Behind JupyterHub the token is a placeholder saying how to get one: nothing hides.
            hidden = endpoint.hub is None and bool(endpoint.token) and not _BOOLEANS[show]
            if hidden:
                endpoint = dataclasses.replace(endpoint, token=HIDDEN_TOKEN)
            body = {
                "url": endpoint.url,
                "tokenShown": not hidden,
                "hub": endpoint.hub is not None,
                "clients": configurations(endpoint, clients=None if client is None else [client]),
            }
        self.finish(json.dumps(body))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """The handler of ``/api/xcsh/mcp-config``."""
    return [(r"/api/xcsh/mcp-config", McpConfigHandler, {"services": services})]

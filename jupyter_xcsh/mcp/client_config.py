"""Ready-made MCP client configuration for a running Jupyter Server (``jupyter xcsh mcp-config``).

The server is found the way ``jupyter server list`` finds it: its ``jpserver-<pid>.json`` file
in the runtime directory holds its URL (with ``base_url``), token and root.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CLIENTS", "McpEndpoint", "choose_server", "render"]

#: The endpoint's path under the server's URL.
MCP_PATH = "api/xcsh/mcp"


@dataclass(frozen=True)
class McpEndpoint:
    """Where an MCP client connects, and the header that authenticates it."""

    url: str
    token: str
    root_dir: str

    @classmethod
    def of(cls, info: dict[str, Any]) -> McpEndpoint:
        """The endpoint of a server described by its runtime info."""
        base = str(info["url"])
        url = base + ("" if base.endswith("/") else "/") + MCP_PATH
        return cls(url, str(info.get("token") or ""), str(info.get("root_dir", "")))

    @property
    def headers(self) -> dict[str, str]:
        """The HTTP headers every request needs (none for a server without a token)."""
        return {"Authorization": f"token {self.token}"} if self.token else {}


def choose_server(
    servers: Iterable[dict[str, Any]], *, cwd: str, url: str | None = None
) -> dict[str, Any] | None:
    """Pick a server: the one at ``url``, else the one whose root holds ``cwd``, else the newest.

    Among roots holding ``cwd`` the deepest wins; "newest" is the highest ``started`` stamp.
    """
    servers = list(servers)
    if url is not None:
        # As `jupyter server list` prints it, ?token=... included.
        wanted = urlsplit(url)._replace(query="", fragment="").geturl().rstrip("/")
        matches = [s for s in servers if str(s.get("url", "")).rstrip("/") == wanted]
        return matches[0] if matches else None
    here = os.path.realpath(cwd)

    def holds_cwd(server: dict[str, Any]) -> bool:
        root = os.path.realpath(str(server.get("root_dir", "/")))
        return here == root or here.startswith(root.rstrip(os.sep) + os.sep)

    holding = [s for s in servers if holds_cwd(s)]
    if holding:
        return max(holding, key=lambda s: len(str(s.get("root_dir", ""))))
    return max(servers, key=lambda s: float(s.get("started", 0)), default=None)


def claude_code(endpoint: McpEndpoint, name: str) -> str:
    """A ``claude mcp add`` command line."""
    words = ["claude", "mcp", "add", "--transport", "http", name, endpoint.url]
    for header, value in endpoint.headers.items():
        words += ["--header", f"{header}: {value}"]
    return " ".join(shlex.quote(word) for word in words)


def vscode(endpoint: McpEndpoint, name: str) -> str:
    """A ``.vscode/mcp.json`` (VS Code / GitHub Copilot agent mode)."""
    server = {"type": "http", "url": endpoint.url, "headers": endpoint.headers}
    return json.dumps({"servers": {name: server}}, indent=2)


def cursor(endpoint: McpEndpoint, name: str) -> str:
    """A ``.cursor/mcp.json`` (or ``~/.cursor/mcp.json``)."""
    server = {"url": endpoint.url, "headers": endpoint.headers}
    return json.dumps({"mcpServers": {name: server}}, indent=2)


def generic(endpoint: McpEndpoint, name: str) -> str:
    """What any streamable-HTTP MCP client needs."""
    server = {"type": "streamable-http", "url": endpoint.url, "headers": endpoint.headers}
    return json.dumps({"mcpServers": {name: server}}, indent=2)


#: Client name -> (title, where it goes, renderer).
CLIENTS: dict[str, tuple[str, str, Callable[[McpEndpoint, str], str]]] = {
    "claude": ("Claude Code", "run in a shell", claude_code),
    "vscode": ("VS Code", ".vscode/mcp.json", vscode),
    "cursor": ("Cursor", ".cursor/mcp.json or ~/.cursor/mcp.json", cursor),
    "generic": ("Any streamable-HTTP client", "its MCP configuration", generic),
}


def render(endpoint: McpEndpoint, *, client: str | None = None, name: str = "jupyter") -> str:
    """The configuration for ``client`` alone, or a commented overview for every client."""
    if client is not None:
        return CLIENTS[client][2](endpoint, name)
    lines = [
        f"# MCP endpoint of the Jupyter Server with root {endpoint.root_dir}",
        f"# URL:    {endpoint.url}",
    ]
    for header, value in endpoint.headers.items():
        lines.append(f"# Header: {header}: {value}")
    if not endpoint.headers:
        lines.append("# This server has no token: requests need no Authorization header.")
    for title, where, make in CLIENTS.values():
        lines += ["", f"## {title} ({where})", make(endpoint, name)]
    return "\n".join(lines)

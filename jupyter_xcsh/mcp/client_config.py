"""Ready-made MCP client configuration for a running Jupyter Server (``jupyter xcsh mcp-config``).

The server is found the way ``jupyter server list`` finds it: its ``jpserver-<pid>.json`` file
in the runtime directory holds its URL (with ``base_url``), token and root.

Inside a JupyterHub single-user server (its environment has ``JUPYTERHUB_SERVICE_PREFIX``), the
server's own URL and token are not what an agent uses: the agent goes through the hub's public
URL with a token of the user's, scoped to the server. The configuration then names that URL and
says how to get such a token (:class:`HubAccess`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "CLIENTS",
    "HIDDEN_TOKEN",
    "HubAccess",
    "McpEndpoint",
    "choose_server",
    "configurations",
    "render",
]

#: The endpoint's path under the server's URL.
MCP_PATH = "api/xcsh/mcp"

#: What stands for the token in a configuration shown with the token hidden (the lab's dialog
#: until the person asks to see it).
HIDDEN_TOKEN = "<token hidden: choose Show token>"


@dataclass(frozen=True)
class HubAccess:
    """How an agent reaches a JupyterHub user's server: the public URL and a scoped token."""

    user: str
    #: The server's public URL (``JUPYTERHUB_PUBLIC_URL``), "" when the hub does not know it.
    public_url: str
    #: The hub's public URL (``.../hub/``), "" when the hub does not know it.
    public_hub_url: str
    #: The server's path on the hub (``/user/<name>/``).
    prefix: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> HubAccess | None:
        """The hub of a single-user server's environment; None outside JupyterHub."""
        prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX")
        user = environ.get("JUPYTERHUB_USER")
        if not prefix or not user:
            return None
        return cls(
            user,
            environ.get("JUPYTERHUB_PUBLIC_URL", ""),
            environ.get("JUPYTERHUB_PUBLIC_HUB_URL", ""),
            prefix,
        )

    @property
    def scope(self) -> str:
        """The one scope an agent's token needs: access to this user's servers."""
        return f"access:servers!user={self.user}"

    @property
    def token_placeholder(self) -> str:
        """What stands for the token in the printed configuration."""
        return f"<a token of {self.user} with the scope {self.scope}>"

    def instructions(self) -> list[str]:
        """Comment lines saying where the URL comes from and how to get the token."""
        hub = self.public_hub_url or "https://<your hub>/hub/"
        lines = [
            f"# Behind JupyterHub: the agent connects through the hub as {self.user}.",
            f"# Token: create one with the scope {self.scope}, either on the hub's token page",
            f"#   {hub}token",
            "# or through the hub's API with a token of yours that may create tokens:",
            f"#   POST {hub}api/users/{self.user}/tokens",
            f'#   {{"scopes": ["{self.scope}"], "note": "MCP agent"}}',
        ]
        if not self.public_url:
            lines.insert(
                1,
                "# The hub does not know its public URL (c.JupyterHub.public_url): replace "
                f"the host below with your hub's, keeping {self.prefix}.",
            )
        return lines


@dataclass(frozen=True)
class McpEndpoint:
    """Where an MCP client connects, and the header that authenticates it."""

    url: str
    token: str
    root_dir: str
    hub: HubAccess | None = None

    @classmethod
    def of(cls, info: dict[str, Any], environ: Mapping[str, str] | None = None) -> McpEndpoint:
        """The endpoint of a server described by its runtime info (``environ``: its hub's)."""
        hub = HubAccess.from_environ(os.environ if environ is None else environ)
        root = str(info.get("root_dir", ""))
        if hub is not None:
            base = hub.public_url or str(info["url"])
            url = base + ("" if base.endswith("/") else "/") + MCP_PATH
            return cls(url, hub.token_placeholder, root, hub)
        base = str(info["url"])
        url = base + ("" if base.endswith("/") else "/") + MCP_PATH
        return cls(url, str(info.get("token") or ""), root)

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


def claude_code_file(endpoint: McpEndpoint, name: str) -> str:
    """A project's ``.mcp.json`` (Claude Code reads it from the project's root)."""
    server = {"type": "http", "url": endpoint.url, "headers": endpoint.headers}
    return json.dumps({"mcpServers": {name: server}}, indent=2)


def codex(endpoint: McpEndpoint, name: str) -> str:
    """A ``[mcp_servers.<name>]`` table of Codex's ``~/.codex/config.toml``.

    Codex connects to a table with a ``url`` over streamable HTTP, sending ``http_headers``
    as they are (its ``headers`` key would be ignored; ``bearer_token_env_var`` would need the
    token in an environment variable, which a pasted configuration cannot set).
    """
    lines = [f"[mcp_servers.{_toml_key(name)}]", f"url = {_toml_string(endpoint.url)}"]
    if endpoint.headers:
        pairs = ", ".join(
            f"{_toml_key(header)} = {_toml_string(value)}"
            for header, value in endpoint.headers.items()
        )
        lines.append(f"http_headers = {{ {pairs} }}")
    return "\n".join(lines)


def gemini(endpoint: McpEndpoint, name: str) -> str:
    """``mcpServers`` of Gemini CLI's ``settings.json`` (``httpUrl``: streamable HTTP)."""
    server = {"httpUrl": endpoint.url, "headers": endpoint.headers}
    return json.dumps({"mcpServers": {name: server}}, indent=2)


def _toml_string(value: str) -> str:
    # A TOML basic string takes JSON's escapes (\", \\, \n, \uXXXX), and json.dumps writes
    # no other (ASCII only, so no raw control character either).
    return json.dumps(value)


def _toml_key(key: str) -> str:
    """A bare TOML key when it may be one, else a quoted key."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else _toml_string(key)


def jupyter_ai(endpoint: McpEndpoint, name: str) -> str:
    """A chat's ``.jupyter/mcp_settings.json`` for Jupyter AI 3's personas.

    The extension offers itself to the personas at start-up (``mcp/jupyter_ai.py``); this is
    for an operator who turned that off, or a server other than the personas' own.
    """
    headers = [{"name": key, "value": value} for key, value in endpoint.headers.items()]
    server = {"type": "http", "name": name, "url": endpoint.url, "headers": headers}
    return json.dumps({"mcp_servers": [server]}, indent=2)


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
    "claude-json": ("Claude Code", ".mcp.json in the project's root", claude_code_file),
    "codex": ("Codex", "~/.codex/config.toml, or .codex/config.toml of a trusted project", codex),
    "gemini": ("Gemini CLI", "~/.gemini/settings.json or .gemini/settings.json", gemini),
    "jupyter-ai": ("Jupyter AI", ".jupyter/mcp_settings.json beside the chats", jupyter_ai),
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
    if endpoint.hub is not None:
        lines += endpoint.hub.instructions()
    for header, value in endpoint.headers.items():
        lines.append(f"# Header: {header}: {value}")
    if not endpoint.headers:
        lines.append("# This server has no token: requests need no Authorization header.")
    for title, where, make in CLIENTS.values():
        lines += ["", f"## {title} ({where})", make(endpoint, name)]
    return "\n".join(lines)


def configurations(
    endpoint: McpEndpoint, *, clients: Iterable[str] | None = None, name: str = "jupyter"
) -> list[dict[str, str]]:
    """Each client's configuration as ``{client, title, where, text}``, in ``CLIENTS``' order.

    The same renderers as ``jupyter xcsh mcp-config``: the lab's dialog shows what the command
    prints (``GET /api/xcsh/mcp-config``).
    """
    wanted = list(CLIENTS) if clients is None else list(clients)
    return [
        {"client": key, "title": title, "where": where, "text": make(endpoint, name)}
        for key, (title, where, make) in CLIENTS.items()
        if key in wanted
    ]

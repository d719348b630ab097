"""The server's MCP endpoint offered to Jupyter AI 3's personas, and their names told back.

Jupyter AI's agent personas (Claude Code, Codex, Gemini, Goose, ... over the Agent Client
Protocol) get their MCP servers from its persona manager: ``PersonaManager.builtin_mcp_servers``
(a configurable list of ``{type: "http", name, url, headers: [{name, value}]}``) merged with the
chat's ``.jupyter/mcp_settings.json`` (``{"mcp_servers": [...]}``, the same entries). Every HTTP
server is called with the persona's identity headers, ``X-JupyterAI-Persona-Id``
(``jupyter-ai-personas::<package>::<class>``) and ``X-Jupyter-Chat-Id``.

At start-up the extension appends its own entry (this server's URL and token) to
``builtin_mcp_servers`` in the config of Jupyter AI's persona manager extension, so every
persona is offered these tools with nobody editing a file. Appended, as traitlets appends
(the list's default, jupyter-server-mcp's server, stays); an operator who set the list
(``[]`` turns every built-in server off) keeps exactly what they set, and
``c.XcshSettings.offer_to_jupyter_ai = False`` keeps the extension out of it.
"""

from __future__ import annotations

import re
from typing import Any

from traitlets.config.loader import Config, LazyConfigValue

from jupyter_xcsh.mcp.client_config import MCP_PATH

__all__ = [
    "CHAT_HEADER",
    "PERSONA_HEADER",
    "SERVER_NAME",
    "offer_to_jupyter_ai",
    "persona_identity",
    "server_token",
    "server_url",
    "settings_entry",
]

#: The headers Jupyter AI stamps on a persona's MCP requests.
PERSONA_HEADER = "X-JupyterAI-Persona-Id"
CHAT_HEADER = "X-Jupyter-Chat-Id"
#: The server's name in the personas' MCP server list.
SERVER_NAME = "jupyter-xcsh"
#: The configurable class and trait Jupyter AI reads its built-in MCP servers from.
MANAGER, TRAIT = "PersonaManager", "builtin_mcp_servers"

_PERSONA_ID = re.compile(r"jupyter-ai-personas::([A-Za-z0-9_.]{1,100})::([A-Za-z0-9_]{1,100})")
_CHAT_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
_SUFFIXES = ("AcpPersona", "Persona")


def settings_entry(base_url: str, token: str) -> dict[str, Any]:
    """The server's entry in ``builtin_mcp_servers`` or ``.jupyter/mcp_settings.json``."""
    url = base_url + ("" if base_url.endswith("/") else "/") + MCP_PATH
    headers = [{"name": "Authorization", "value": f"token {token}"}] if token else []
    return {"type": "http", "name": SERVER_NAME, "url": url, "headers": headers}


def offer_to_jupyter_ai(serverapp: Any, entry: dict[str, Any]) -> str:
    """Append ``entry`` to the personas' built-in MCP servers; what was done, for the log.

    Nothing when Jupyter AI's persona manager is not loaded, or when its operator set the
    list themselves (a plain list in the config: ``[]`` means no built-in server at all).
    """
    app = _persona_manager_app(serverapp)
    if app is None:
        return "Jupyter AI's persona manager is not loaded"
    section = app.config[MANAGER] if MANAGER in app.config else Config()
    current = section.get(TRAIT)
    if current is not None and not isinstance(current, LazyConfigValue):
        return f"c.{MANAGER}.{TRAIT} is set in the server's configuration: left as it is"
    lazy = current if current is not None else LazyConfigValue()
    lazy.append(entry)
    app.update_config(Config({MANAGER: {TRAIT: lazy}}))
    return f"offered to Jupyter AI's personas as {entry['name']} at {entry['url']}"


def _persona_manager_app(serverapp: Any) -> Any:
    """Jupyter AI's persona manager extension app (the personas' config parent), if loaded."""
    manager = getattr(serverapp, "extension_manager", None)
    for apps in getattr(manager, "extension_apps", {}).values():
        for app in apps:
            if hasattr(app, "persona_manager_class"):
                return app
    return None


def server_url(serverapp: Any) -> str:
    """The server's own URL for a process on the same machine (a persona's agent)."""
    return str(serverapp.connection_url)


def server_token(serverapp: Any) -> str:
    """The token a persona's requests carry: the server's own ("" for a server without)."""
    return str(getattr(serverapp.identity_provider, "token", "") or "")


def persona_identity(persona_id: str, chat_id: str) -> tuple[str, str] | None:
    """The ``(name, agent key)`` of a Jupyter AI persona in a chat, from its headers.

    The name says which persona in which chat (``Claude (Jupyter AI chat 1a2b3c4d)``); the
    key tells the persona's calls from every other agent's, one per persona and chat. None
    for headers that are not Jupyter AI's.
    """
    match = _PERSONA_ID.fullmatch(persona_id.strip())
    if match is None:
        return None
    chat = chat_id.strip()
    if chat and not _CHAT_ID.fullmatch(chat):
        chat = ""
    persona = match.group(2)
    for suffix in _SUFFIXES:
        if persona.endswith(suffix) and persona != suffix:
            persona = persona[: -len(suffix)]
            break
    short = chat.rsplit(":", 1)[-1][:8]
    name = f"{persona} (Jupyter AI chat {short})" if short else f"{persona} (Jupyter AI)"
    return name, f"jupyter-ai {match.group(0)} {chat}".strip()

"""Jupyter AI 3's personas get this server's tools from its own persona manager (issue 39).

Runs only where jupyter-ai is installed and the ``jupyter_ai`` marker is selected
(``scripts/check.sh``: ``.venv-ai``, ``-m jupyter_ai``). The server loads Jupyter AI's persona
manager beside the extension; the test makes a ``PersonaManager`` as Jupyter AI makes one for a
chat, takes the MCP server list its personas are given (with the identity headers they are
stamped with) and calls the notebook tool with it, as an agent chatting in the lab would.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import AsyncHTTPClient
from traitlets.config import Config

from jupyter_xcsh.mcp.jupyter_ai import SERVER_NAME
from tests.support.inplace import write_notebook
from tests.support.mcp_client import VERSION

pytestmark = [pytest.mark.jupyter_ai, pytest.mark.timeout(300)]


@pytest.fixture
def jp_server_config(jp_server_config):
    config = Config(jp_server_config)
    extensions = dict(config.ServerApp.jpserver_extensions)
    config.ServerApp.jpserver_extensions = {
        **extensions,
        "jupyter_ai_router": True,
        "jupyter_ai_persona_manager": True,
    }
    return config


def persona_manager(serverapp, chat_path="chat.chat"):
    """A ``PersonaManager`` made as Jupyter AI makes one for a chat (its app as parent)."""
    from jupyter_ai_persona_manager.extension import PersonaManagerExtension
    from jupyterlab_chat.ychat import YChat

    (app,) = (
        app
        for apps in serverapp.extension_manager.extension_apps.values()
        for app in apps
        if isinstance(app, PersonaManagerExtension)
    )
    chat = YChat()
    chat.initial_path = chat_path
    return app.persona_manager_class(
        parent=app,
        chat=chat,
        root_dir=serverapp.root_dir,
        event_loop=asyncio.get_running_loop(),
        base_url=serverapp.base_url,
    )


def analyst_persona():
    """A persona class as a package or a chat's ``.jupyter/personas`` defines one."""
    from jupyter_ai_persona_manager.base_persona import BasePersona, PersonaDefaults

    class AnalystPersona(BasePersona):
        @property
        def defaults(self):
            return PersonaDefaults(name="Analyst", description="", avatar_path="", system_prompt="")

        async def process_message(self, message):
            """Nothing: the test calls the tools itself, as the persona's agent would."""

    return AnalystPersona


def ours(settings):
    (server,) = [s for s in settings.mcp_servers if s.name == SERVER_NAME]
    return server


async def call(server, name, arguments):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": name, "arguments": arguments}
    headers = {header.name: header.value for header in server.headers}
    response = await AsyncHTTPClient().fetch(
        server.url,
        method="POST",
        body=json.dumps(body),
        headers={**headers, "MCP-Protocol-Version": VERSION, "Content-Type": "application/json"},
        request_timeout=120,
    )
    return json.loads(response.body)["result"]


async def test_a_persona_edits_a_notebook_with_the_server_its_manager_gives_it(
    jp_serverapp, http_server, jp_root_dir
):
    write_notebook(jp_root_dir / "a.ipynb", "x = 1")
    manager = persona_manager(jp_serverapp)

    # What every persona of the chat is given: this server, with its URL and token.
    server = ours(manager.get_mcp_settings())
    token = jp_serverapp.identity_provider.token
    assert server.type == "http"
    assert server.url == f"{jp_serverapp.connection_url}api/xcsh/mcp"
    assert [(h.name, h.value) for h in server.headers] == [("Authorization", f"token {token}")]
    # Appended to the list's default, not in its place.
    assert len(manager.get_mcp_settings().mcp_servers) >= 1

    # A persona of the chat (the ACP ones need their agents' programs): Jupyter AI's own
    # BasePersona stamps its identity headers on every HTTP server it is given.
    persona = analyst_persona()(parent=manager, chat=manager.chat)
    stamped = ours(persona.get_mcp_settings())
    stamps = {h.name: h.value for h in stamped.headers}
    assert stamps["X-JupyterAI-Persona-Id"] == "jupyter-ai-personas::tests::AnalystPersona"
    assert stamps["X-Jupyter-Chat-Id"] == manager.chat.get_id()

    read = await call(stamped, "notebook", {"action": "read", "notebook_path": "a.ipynb"})
    revision = read["structuredContent"]["details"]["revision"]
    edit = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x = 2"}
    edited = await call(stamped, "notebook", edit)
    assert edited["isError"] is False, edited
    assert "x = 2" in (jp_root_dir / "a.ipynb").read_text(encoding="utf-8")

    # The persona in its chat is one agent: its own change is "you" to it.
    since = {"action": "changes", "notebook_path": "a.ipynb", "since_revision": revision}
    changes = await call(stamped, "notebook", since)
    assert "by you" in changes["content"][0]["text"], changes
    # Another chat's persona is another agent.
    other = persona_manager(jp_serverapp, "other.chat")
    theirs = ours(analyst_persona()(parent=other, chat=other.chat).get_mcp_settings())
    seen = await call(theirs, "notebook", since)
    assert "by you" not in seen["content"][0]["text"], seen


async def test_an_operators_list_is_left_as_it_is(jp_serverapp, http_server):
    from jupyter_xcsh.mcp.jupyter_ai import offer_to_jupyter_ai, settings_entry

    manager = persona_manager(jp_serverapp)
    app = manager.parent
    app.update_config(Config({"PersonaManager": {"builtin_mcp_servers": []}}))

    said = offer_to_jupyter_ai(jp_serverapp, settings_entry("http://h:1/", "t"))

    assert "left as it is" in said
    assert persona_manager(jp_serverapp).get_mcp_settings() is None

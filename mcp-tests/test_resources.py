"""Notebooks as MCP resources, with the official SDK client: listed, read, and subscribed to.

The subscriber is told of a save from the lab (the contents API, as JupyterLab saves) and of
another agent's edit (a second SDK client), on the notification stream the SDK opens itself.
"""

from __future__ import annotations

import asyncio
import json

import mcp
import pytest
from conftest import REQUEST_TIMEOUT, eventually

pytestmark = [
    pytest.mark.timeout(300),
    # The SDK deprecates resources/subscribe (2025 era only), hence the filter.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

NOTEBOOK = """{
 "cells": [
  {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Title"]},
  {"cell_type": "code", "execution_count": null, "id": "b2", "metadata": {}, "outputs": [],
   "source": ["x = 1"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"""
URI = "notebook:///Work%20Dir/Analysis.ipynb"


# resources/subscribe is of the 2025 era (2026-07-28 has subscriptions/listen, below).
@pytest.mark.parametrize("era", ["legacy"])
async def test_notebooks_are_listed_read_and_a_subscriber_told_of_changes(
    connect, jp_root_dir, jp_fetch
):
    (jp_root_dir / "Work Dir").mkdir()
    (jp_root_dir / "Work Dir" / "Analysis.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    updates: list[str] = []

    async def on_message(message: object) -> None:
        if isinstance(message, mcp.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with connect(message_handler=on_message) as client:
        assert client.server_capabilities.resources.subscribe is True
        listed = await client.list_resources(cache_mode="bypass")
        assert [str(r.uri) for r in listed.resources] == [URI]
        assert listed.resources[0].name == "Work Dir/Analysis.ipynb"
        read = await client.read_resource(URI, cache_mode="bypass")
        assert "# Title" in read.contents[0].text and "x = 1" in read.contents[0].text

        await client.subscribe_resource(URI)

        # A save from the lab.
        response = await jp_fetch("api", "contents", "Work Dir/Analysis.ipynb")
        model = json.loads(response.body)
        model["content"]["cells"][1]["source"] = "x = 2"
        body = {"type": "notebook", "format": "json", "content": model["content"]}
        await jp_fetch(
            "api", "contents", "Work Dir/Analysis.ipynb", method="PUT", body=json.dumps(body)
        )

        async def told(count: int) -> bool:
            return len(updates) >= count

        await eventually(lambda: told(1), timeout=REQUEST_TIMEOUT)
        assert updates == [URI]

        # Another agent's edit.
        async with connect() as agent:
            arguments = {
                "action": "edit",
                "notebook_path": "Work Dir/Analysis.ipynb",
                "cell_id": "a1",
                "content": "# Renamed",
            }
            result = await agent.call_tool("notebook", arguments)
            assert result.is_error is False
        await eventually(lambda: told(2), timeout=REQUEST_TIMEOUT)
        assert updates == [URI, URI]
        read = await client.read_resource(URI, cache_mode="bypass")
        assert "# Renamed" in read.contents[0].text and "x = 2" in read.contents[0].text

        await client.unsubscribe_resource(URI)


async def test_changes_after_a_persons_save_and_another_agents_edit(connect, jp_root_dir, jp_fetch):
    (jp_root_dir / "Work Dir").mkdir()
    (jp_root_dir / "Work Dir" / "Analysis.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    path = "Work Dir/Analysis.ipynb"
    async with connect() as client:
        read = await client.call_tool("notebook", {"action": "read", "notebook_path": path})
        since = read.structured_content["details"]["revision"]

        response = await jp_fetch("api", "contents", path)
        model = json.loads(response.body)
        model["content"]["cells"][1]["source"] = "x = 2"
        body = {"type": "notebook", "format": "json", "content": model["content"]}
        await jp_fetch("api", "contents", path, method="PUT", body=json.dumps(body))
        # Another agent: its own name (2026 has no session to tell two clients apart by).
        async with connect(
            client_info=mcp.types.Implementation(name="other", version="1")
        ) as agent:
            inserted = await agent.call_tool(
                "notebook",
                {"action": "insert", "notebook_path": path, "cell_index": 2, "content": "y = 3"},
            )
            assert inserted.is_error is False
        await client.call_tool(
            "notebook",
            {"action": "edit", "notebook_path": path, "cell_id": "a1", "content": "# Mine"},
        )

        result = await client.call_tool(
            "notebook",
            {"action": "changes", "notebook_path": path, "since_revision": since},
            meta={"jupyter-xcsh/structured": "body"},  # the REST body, sources included
        )

    assert result.is_error is False
    changes = result.structured_content["details"]["changes"]
    assert [(c["change"], c["by"], c.get("source")) for c in changes] == [
        ("edited", "file", "x = 2"),
        ("added", "agent", "y = 3"),
        ("edited", "you", "# Mine"),
    ]


@pytest.mark.parametrize("era", ["2026-07-28"])
async def test_a_listener_is_told_of_a_save_and_an_agents_edit_in_2026(
    connect, jp_root_dir, jp_fetch
):
    (jp_root_dir / "Work Dir").mkdir()
    (jp_root_dir / "Work Dir" / "Analysis.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    path = "Work Dir/Analysis.ipynb"
    async with connect() as client:
        listening = client.listen(resource_subscriptions=[URI, "notebook:///missing.ipynb"])
        async with listening as subscription:
            # Only what can be watched is honored: the missing notebook is left out.
            assert subscription.honored.resource_subscriptions == [URI]
            events = aiter(subscription)

            response = await jp_fetch("api", "contents", path)
            model = json.loads(response.body)
            model["content"]["cells"][1]["source"] = "x = 2"
            body = {"type": "notebook", "format": "json", "content": model["content"]}
            await jp_fetch("api", "contents", path, method="PUT", body=json.dumps(body))
            saved = await asyncio.wait_for(anext(events), 30)

            edit = {"action": "edit", "notebook_path": path, "cell_id": "a1", "content": "# Mine"}
            await client.call_tool("notebook", edit)
            edited = await asyncio.wait_for(anext(events), 30)

    assert (saved.uri, edited.uri) == (URI, URI)


#: Waits for a name, then prints and ends a second later.
ASKING = (
    "name = input('name? ')\nimport time\nprint('hello', name, flush=True)\ntime.sleep(1)\n"
    "print('bye')"
)


async def test_a_run_is_read_and_its_subscriber_told_of_its_end(connect, era):
    """A run that outlives its request (here, waiting for input) is ``run://<runId>``."""
    updates: list[str] = []

    async def on_message(message: object) -> None:
        if isinstance(message, mcp.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async with connect(message_handler=on_message) as client:
        started = await client.call_tool("python", {"cells": [{"code": ASKING}], "stdin": "ask"})
        run = started.structured_content["awaitingInput"]["runId"]
        uri = f"run://{run}"
        templates = await client.list_resource_templates(cache_mode="bypass")
        assert "run://{id}" in [t.uri_template for t in templates.resource_templates]
        read = await client.read_resource(uri, cache_mode="bypass")
        assert read.contents[0].text.startswith("name? ")

        answer = {"run_id": run, "answer": "ann"}
        if era == "legacy":
            await client.subscribe_resource(uri)
            await client.call_tool("python", answer)
            await eventually(lambda: _told(updates, uri), timeout=REQUEST_TIMEOUT)
        else:
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                assert subscription.honored.resource_subscriptions == [uri]
                events = aiter(subscription)
                await client.call_tool("python", answer)
                told = await asyncio.wait_for(anext(events), 30)
                assert told.uri == uri
        ended = await client.read_resource(uri, cache_mode="bypass")

    assert ended.contents[0].text == "name? ann\nhello ann\nbye"


async def _told(updates: list[str], uri: str) -> bool:
    return uri in updates

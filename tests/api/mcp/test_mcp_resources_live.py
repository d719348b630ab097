"""A person typing in a collaboration room: MCP subscribers told, ``changes`` naming them.

Needs jupyter-collaboration (run with ``-m collaboration`` in its environments, see
``scripts/check.sh``). The person is a real Yjs client in the room (``tests/support/yroom.py``);
what
they type is unsaved, so only the room's document shows it.
"""

from __future__ import annotations

import pytest

from tests.api.mcp.test_mcp_resources import NotificationStream, subscribe
from tests.api.notebook.test_notebook_changes import tool
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.python_tool import eventually
from tests.support.rtc import rtc_config

pytestmark = [pytest.mark.collaboration, pytest.mark.timeout(300)]


@pytest.fixture
def jp_server_config(jp_server_config, jp_root_dir, tmp_path_factory):
    import jupyter_server_ydoc  # noqa: F401  (fail, never skip, where it is missing)

    config = rtc_config(jp_server_config, jp_root_dir, tmp_path_factory.mktemp("rtc"))
    # The room never saves: only its document shows the typing, the file stays as it was.
    config.YDocExtension.document_save_delay = None
    return config


async def test_a_subscriber_is_told_when_a_person_types_in_the_room(
    jp_fetch, jp_root_dir, jp_http_port, jp_base_url, jp_auth_header
):
    from tests.support.yroom import RoomClient

    path = jp_root_dir / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    stream = NotificationStream(jp_fetch, "xcsh-session-room")
    try:
        async with RoomClient(url, dict(jp_auth_header), "a.ipynb") as person:
            await eventually(stream.opened)
            await subscribe(jp_fetch, "xcsh-session-room", "notebook:///a.ipynb")
            assert stream.messages == []

            person.type(0, " typed, not saved")

            async def told() -> bool:
                return bool(stream.messages)

            await eventually(told, timeout=30)
            assert "typed, not saved" not in path.read_text(encoding="utf-8")
        assert stream.messages[0]["params"] == {"uri": "notebook:///a.ipynb"}
    finally:
        stream.close()


async def test_changes_name_a_person_typing_in_the_room(
    jp_fetch, jp_root_dir, jp_http_port, jp_base_url, jp_auth_header
):
    from tests.support.yroom import RoomClient

    nb = sample_notebook()
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"c{k}"
    (jp_root_dir / "nb.ipynb").write_text(jupyter_text(nb), encoding="utf-8")
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    async with RoomClient(url, dict(jp_auth_header), "nb.ipynb") as person:
        _, read = await tool(jp_fetch, action="read")
        assert read["details"]["via"] == "document"

        person.type(1, "  # typed")

        async def seen() -> bool:
            _, now = await tool(jp_fetch, action="read")
            return bool(now["details"]["revision"] != read["details"]["revision"])

        await eventually(seen, timeout=30)
        status, result = await tool(
            jp_fetch, action="changes", since_revision=read["details"]["revision"]
        )

    assert status == 200
    (change,) = result["details"]["changes"]
    assert (change["change"], change["cellId"], change["by"]) == ("edited", "c1", "room")
    assert change["source"].endswith("  # typed")
    assert "by a person (collaboration room" in result["text"]

"""Connect an agent from the lab (docs/developers/contract.md §10.4): the command palette, the
launcher and the Agent status item open a dialog with each agent's configuration; the Claude
Code one, read from the dialog, connects a real MCP client; the connection test answers and
names the last agent call. Screenshot: ``docs/images/connect-agent.png``."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from playwright.sync_api import expect

DIALOG = ".jp-Dialog .jp-xcsh-Connect"


def mcp(server: dict[str, Any], request_id: int, method: str, params: Any) -> Any:
    """One JSON-RPC request with nothing but the configuration's URL and headers."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    request = urllib.request.Request(
        server["url"],
        data=body.encode(),
        method="POST",
        headers={
            **server["headers"],
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["result"]


def test_the_dialog_configures_a_real_mcp_client_and_tests_the_connection(lab, lab_page):
    lab_page.open()
    page = lab_page.page
    # The command palette, as a person finds it.
    page.keyboard.press("Control+Shift+C")
    page.keyboard.type("Connect an agent")
    page.keyboard.press("Enter")
    dialog = page.locator(DIALOG)
    expect(dialog).to_be_visible()
    for title in ["Claude Code", "Codex", "Gemini CLI", "VS Code", "Cursor", "Jupyter AI"]:
        expect(dialog.get_by_role("tab", name=title, exact=True)).to_be_visible()
    claude = dialog.locator('section[data-client="claude-json"] pre')
    expect(claude).to_contain_text("token hidden")
    assert lab.token not in dialog.inner_text()
    expect(dialog.locator(".jp-xcsh-Connect-url")).to_have_text(f"{lab.url}/api/xcsh/mcp")
    lab_page.screenshot("dialog")

    dialog.get_by_role("button", name="Show token").click()
    expect(claude).to_contain_text(lab.token)
    server = json.loads(claude.inner_text())["mcpServers"]["jupyter"]
    hello = mcp(
        server,
        1,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "from-the-dialog", "version": "1"},
        },
    )
    assert hello["serverInfo"]["name"]
    tools = {t["name"] for t in mcp(server, 2, "tools/list", {})["tools"]}
    assert {"notebook", "python", "files", "artifact", "kernel"} <= tools
    dialog.get_by_role("button", name="Hide token").click()
    expect(claude).to_contain_text("token hidden")

    result = dialog.locator(".jp-xcsh-Connect-result")
    dialog.get_by_role("button", name="Test the connection").click()
    expect(result.locator(".jp-xcsh-Connect-ok")).to_contain_text("Connected:")
    expect(result.locator(".jp-xcsh-Connect-ok")).to_contain_text("notebook")
    expect(result.locator(".jp-xcsh-Connect-last")).to_contain_text("No agent has called")

    # An agent's call: the next test names it.
    lab.python([{"code": "1 + 1"}], session="connect-check").result()
    dialog.get_by_role("button", name="Test the connection").click()
    expect(result.locator(".jp-xcsh-Connect-last")).to_contain_text(
        "Last agent call: python on connect-check"
    )
    lab_page.screenshot("tested")
    # Each agent's own: Codex's TOML table.
    dialog.get_by_role("tab", name="Codex").click()
    codex = dialog.locator('section[data-client="codex"] pre')
    expect(codex).to_contain_text("[mcp_servers.jupyter]")
    expect(claude).to_be_hidden()
    dialog.page.locator(".jp-Dialog").get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)


def test_the_launcher_and_the_status_item_open_the_dialog(lab, lab_page):
    lab_page.open()
    page = lab_page.page
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    card = page.locator(".jp-LauncherCard", has_text="Connect an agent")
    expect(card).to_be_visible()
    card.click()
    expect(page.locator(DIALOG)).to_be_visible()
    page.locator(".jp-Dialog").get_by_role("button", name="Close").click()
    expect(page.locator(DIALOG)).to_have_count(0)

    status = page.locator(".jp-xcsh-AgentStatus")
    status.click(button="right")
    page.locator(".lm-Menu-item", has_text="Connect an agent").click()
    expect(page.locator(DIALOG)).to_be_visible()
    page.locator(".jp-Dialog").get_by_role("button", name="Close").click()

    # The activity panel, empty, offers it too.
    panel = lab_page.open_activity()
    panel.get_by_role("button", name="Connect an agent").click()
    expect(page.locator(DIALOG)).to_be_visible()

"""Both eras from one endpoint: 2026-07-28 (no handshake) and 2025 (``initialize``), per request."""

from __future__ import annotations

import logging

import pytest
from conftest import ERAS

pytestmark = pytest.mark.timeout(300)


def _warnings(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.levelno >= logging.WARNING]


async def test_each_mode_negotiates_its_era_and_logs_no_warning(connect, era, caplog):
    caplog.set_level(logging.DEBUG)
    async with connect() as client:
        assert client.protocol_version == ERAS[era]
        assert client.server_info.name == "jupyter-xcsh"
        listed = await client.list_tools()
        result = await client.call_tool("python", {"cells": [{"code": "print(6 * 7)"}]})

    assert [tool.name for tool in listed.tools][:2] == ["notebook", "python"]
    assert result.is_error is False
    assert result.content[0].text == "42"
    # Neither the server (a 4xx for server/discover, DELETE) nor the client logged a warning.
    assert _warnings(caplog.records) == []


@pytest.mark.parametrize("era", ["2026-07-28"])
async def test_a_client_pinned_to_2026_works_from_its_first_call(connect, caplog):
    caplog.set_level(logging.DEBUG)
    async with connect() as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("files", {"action": "list"})
        listed = await client.list_resources()

    assert result.is_error is False
    assert listed.ttl_ms == 0 and listed.cache_scope == "private"
    assert _warnings(caplog.records) == []

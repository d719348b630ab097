"""Within one request the server's authorizer is asked once for each permission it allows.

A REST verb's ``@authorized`` asks for its permission and the tool then asks for what it needs,
often the same; over MCP the tool's ``Operation`` asks what the REST verb would, then the tool.
The request remembers what the authorizer allowed (``handlers/base.RememberingAuthorizer``),
so the second ask costs nothing; a refusal is never remembered.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer
from traitlets.config import Config

from jupyter_xcsh.handlers.base import RememberingAuthorizer
from tests.support.mcp_client import call_tool
from tests.support.notebooks import jupyter_text, sample_notebook

pytestmark = pytest.mark.timeout(300)


class CountingAuthorizer(Authorizer):
    """Allow everything and count the questions, by ``(action, resource)``."""

    asked: ClassVar[Counter[tuple[str, str]]] = Counter()

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        CountingAuthorizer.asked[(action, resource)] += 1
        return True


@pytest.fixture
def jp_server_config(jp_server_config):
    config = Config(jp_server_config)
    config.ServerApp.authorizer_class = f"{__name__}.CountingAuthorizer"
    return config


@pytest.fixture
def asked():
    CountingAuthorizer.asked.clear()
    return CountingAuthorizer.asked


async def test_an_mcp_python_call_asks_for_execute_once(jp_fetch, asked):
    result = await call_tool(jp_fetch, "python", {"cells": [{"code": "print(6 * 7)"}]})

    assert result["isError"] is False, result
    assert "42" in result["content"][0]["text"]
    assert asked[("execute", "kernels")] == 1
    assert asked[("read", "api")] == 1  # the MCP endpoint's own verb


async def test_an_mcp_notebook_read_asks_for_read_once(jp_fetch, jp_root_dir, asked):
    (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")

    result = await call_tool(jp_fetch, "notebook", {"action": "read", "notebook_path": "a.ipynb"})

    assert result["isError"] is False, result
    assert asked[("read", "contents")] == 1


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_refusal_is_asked_again_and_an_allowance_is_not(asynchronous):
    answers = iter([False, True])
    questions: list[tuple[str, str]] = []

    class Asked(Authorizer):
        def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
            questions.append((action, resource))
            answer = next(answers)
            if not asynchronous:
                return answer

            async def later() -> bool:
                return answer

            return later()

    authorizer = RememberingAuthorizer(Asked())
    answers_given = []
    for _ in range(3):
        answer = authorizer.is_authorized(None, "u", "execute", "kernels")
        answers_given.append(await answer if asynchronous and answer is not True else answer)

    assert answers_given == [False, True, True]
    assert questions == [("execute", "kernels")] * 2


async def test_a_rest_python_call_asks_for_execute_once(jp_fetch, asked):
    body = {"cells": [{"code": "print(6 * 7)"}]}
    response = await jp_fetch("api", "xcsh", "python", method="POST", body=json.dumps(body))

    assert "42" in json.loads(response.body)["text"]
    assert asked[("execute", "kernels")] == 1  # the verb's @authorized, then the tool: once


async def test_a_rest_notebook_read_asks_for_read_once(jp_fetch, jp_root_dir, asked):
    (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    body = {"action": "read", "notebook_path": "a.ipynb"}

    await jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(body))

    assert asked[("read", "contents")] == 1


async def test_a_rest_edit_asks_for_read_and_for_write(jp_fetch, jp_root_dir, asked):
    (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    body = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}

    await jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(body))

    assert asked[("read", "contents")] == 1
    assert asked[("write", "contents")] == 1

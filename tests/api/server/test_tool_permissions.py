"""The permission a tool declares is what REST and MCP ask first, and what a refusal names.

The server's authorizer refuses exactly one ``(action, resource)``: the tool's declared
``permission``. Every verb of the tool then answers 403 (REST) or a refused call (MCP) with
jupyter_server's own wording, before its body is read, for every tool.
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.tools.artifact.tool import ArtifactTool
from jupyter_xcsh.tools.files.tool import FilesTool
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.kernel.tool import KernelTool
from jupyter_xcsh.tools.notebook.tool import NotebookTool
from jupyter_xcsh.tools.python.tool import PythonTool
from tests.support.mcp_client import call_tool


class RefuseOneAuthorizer(Authorizer):
    """Refuse one ``(action, resource)``, allow the rest."""

    refused: ClassVar[tuple[str, str] | None] = None

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return (action, resource) != RefuseOneAuthorizer.refused


@pytest.fixture
def jp_server_config(jp_server_config):
    config = Config(jp_server_config)
    config.ServerApp.authorizer_class = f"{__name__}.RefuseOneAuthorizer"
    return config


@pytest.fixture
def refuse():
    def refuse(permission):
        RefuseOneAuthorizer.refused = tuple(permission)

    yield refuse
    RefuseOneAuthorizer.refused = None


def message(tool):
    action, resource = tool.permission
    return f"User is not authorized to {action} on resource: {resource}."


@pytest.mark.parametrize(
    "tool", [NotebookTool, InPlaceTool, PythonTool, FilesTool, KernelTool], ids=lambda t: t.name
)
async def test_rest_asks_the_declared_permission_before_the_body(jp_fetch, refuse, tool):
    refuse(tool.permission)
    with pytest.raises(HTTPClientError) as e:
        # Not even JSON: the permission is asked before the body is read.
        await jp_fetch(*tool.route.strip("/").split("/"), method="POST", body="not json")
    assert e.value.code == 403


async def test_rest_artifact_asks_the_declared_permission(jp_fetch, refuse):
    refuse(ArtifactTool.permission)
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch("api", "xcsh", "artifacts", "0" * 32, method="GET")
    assert e.value.code == 403


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (NotebookTool, {"action": "read", "notebook_path": "a.ipynb"}),
        (InPlaceTool, {"action": "run", "notebook_path": "a.ipynb", "all": True}),
        (PythonTool, {"cells": [{"code": "1"}]}),
        (FilesTool, {"action": "list"}),
        (KernelTool, {"action": "sessions"}),
        (ArtifactTool, {"id": "0" * 32}),
    ],
    ids=lambda v: getattr(v, "name", ""),
)
async def test_mcp_asks_the_declared_permission(jp_fetch, refuse, tool, arguments):
    refuse(tool.permission)
    name = "notebook" if tool is InPlaceTool else tool.name
    result = await call_tool(jp_fetch, name, arguments)
    assert result["isError"] is True
    assert message(tool) in json.dumps(result)

"""Each tool declares its name, REST route and permission once; REST and MCP are made from them."""

from __future__ import annotations

from jupyter_xcsh.handlers import files, inplace, kernel, notebook, python
from jupyter_xcsh.mcp import tools as mcp
from jupyter_xcsh.mcp.schemas import load_spec
from jupyter_xcsh.tools.artifact.tool import ArtifactTool
from jupyter_xcsh.tools.files.tool import FilesTool
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.kernel.tool import KernelTool
from jupyter_xcsh.tools.notebook.tool import NotebookTool
from jupyter_xcsh.tools.python.tool import PythonTool

TOOLS = [NotebookTool, InPlaceTool, PythonTool, FilesTool, KernelTool, ArtifactTool]


def test_every_tool_route_is_a_path_of_the_wire_contract():
    paths = load_spec()["paths"]
    assert [tool.route for tool in TOOLS if tool.route not in paths] == []


def test_the_mcp_table_is_made_of_the_tools():
    operations = [mcp.NOTEBOOK, mcp.PYTHON, mcp.ARTIFACT, mcp.FILES, mcp.KERNEL]
    table = mcp.build_tools()
    assert list(table) == [op.tool.name for op in operations]
    assert {op.tool for op in operations} | {mcp.RUN.tool} == set(TOOLS)
    # The run in place is the notebook tool's action of its name, its schema joined to it.
    assert {InPlaceTool.name: mcp.RUN} == mcp.NOTEBOOK_ACTIONS
    assert all(op.path == op.tool.route for op in [*operations, mcp.RUN])


def test_the_rest_routes_are_the_tools_routes():
    routes = {
        route: handler
        for module in (notebook, inplace, python, files, kernel)
        for route, handler, _ in module.routes(None)  # type: ignore[arg-type]
    }
    for tool, handler in [
        (NotebookTool, notebook.NotebookHandler),
        (InPlaceTool, inplace.InPlaceRunHandler),
        (PythonTool, python.PythonHandler),
        (FilesTool, files.FilesHandler),
        (KernelTool, kernel.KernelHandler),
    ]:
        assert routes[tool.route] is handler
        assert handler.auth_resource == tool.permission.resource

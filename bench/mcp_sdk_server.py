"""The official MCP SDK's own server, for bench/execute.py: what its protocol layer costs alone.

Usage: <a Python with mcp>=2 and uvicorn> bench/mcp_sdk_server.py <port>

Serves one tool, ``noop`` (returns at once, no kernel), over streamable HTTP at ``/mcp`` with
the SDK's recommended stateless, JSON-response settings, under uvicorn, until killed. A
``tools/call`` of it measures the SDK's request path (ASGI, its transport, envelope checks,
pydantic validation of params and result) with nothing of Jupyter's: were this layer hosted in
the Jupyter Server, its cost would come on top of the tool's own.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Serve until killed (the SDK is imported here: the server's environment has none)."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def noop() -> str:
        """Return at once."""
        return ""

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Model Context Protocol server of jupyter-xcsh: the same tools, for any MCP client.

Served by ``handlers/mcp.py`` at ``POST /api/xcsh/mcp`` on the Jupyter Server's own port, with
its own token, authorizer and origin checks, calling the tools' one call path (``tools/``):
no second process, no second port, no loopback HTTP.

Why a native handler and not the official ``mcp`` package at runtime: the SDK's server side is
ASGI (starlette, uvicorn, sse-starlette, pydantic, httpx, anyio, python-multipart, PyJWT and
cryptography, jsonschema, opentelemetry: about 30 packages), built around its own app and
session manager. Mounting it in tornado would need an ASGI bridge per request, a second auth
path beside jupyter_server's, and pins that every Jupyter deployment (JupyterHub images
included) would have to satisfy. What the server side actually needs here is small and stable:
JSON-RPC framing, a handful of methods, both eras (2025's handshake, 2026-07-28's per-request
envelope, routing headers, input round trips, tasks) and Server-Sent Events: about 2,000 lines
with their docstrings, on tornado's own request handling, where the server's auth, origin
checks, nodelay and disconnect detection already live. Measured (``bench/execute.py
--sdk-python``, docs/developers/architecture.md): a ``pass`` call costs about what it costs over
REST in both eras, while the SDK's own server answering a no-op tool, with no Jupyter at all,
already takes 0.13x of a REST ``pass``: more than issue 39's whole budget (MCP <= 1.1x REST).
The SDK is used where it is the reference: its client runs the end-to-end tests
(``mcp-tests/``, in ``.venv-mcp``, in both eras), so the wire format is checked against the
official implementation, not only against our reading of the spec.

Modules: ``protocol`` (JSON-RPC and versions, pure), ``schemas`` (tool input schemas derived
from ``rest-api.yml``), ``tools`` (the tool table, and a tool's body or error as an MCP
result), ``progress`` (progress notifications), ``server`` (the methods, cancellation),
``tasks`` (the Tasks extension of 2026-07-28: runs that outlive their request), ``client_config``
(ready-made client configuration for ``jupyter xcsh mcp-config``).
"""

from jupyter_xcsh.mcp.server import McpServer

__all__ = ["McpServer"]

"""``jupyter xcsh``: command-line helpers of jupyter-xcsh.

``jupyter xcsh mcp-config`` prints the MCP client configuration of a running Jupyter Server
(Claude Code, Codex, Gemini CLI, VS Code, Cursor, any streamable-HTTP client), token included,
so connecting an agent is one copy and paste. ``jupyter server`` itself prints nothing new.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from jupyter_xcsh.mcp.client_config import CLIENTS, McpEndpoint, choose_server, render


def running_servers(runtime_dir: str | None = None) -> list[dict[str, Any]]:
    """The running Jupyter Servers' info, each with ``started`` (its info file's mtime)."""
    from jupyter_core.paths import jupyter_runtime_dir
    from jupyter_server.serverapp import list_running_servers

    runtime_dir = runtime_dir or jupyter_runtime_dir()
    servers = []
    for info in list_running_servers(runtime_dir):
        path = os.path.join(runtime_dir, f"jpserver-{info.get('pid')}.json")
        try:
            started = os.path.getmtime(path)
        except OSError:
            started = 0.0
        servers.append({**info, "started": started})
    return servers


def mcp_config(args: argparse.Namespace) -> int:
    """Print the configuration for the chosen server; 1 when there is none."""
    server = choose_server(running_servers(args.runtime_dir), cwd=os.getcwd(), url=args.url)
    if server is None:
        wanted = f" at {args.url}" if args.url else ""
        print(
            f"No running Jupyter Server found{wanted}. Start one (jupyter lab) and run this "
            "again, or pass --url (see `jupyter server list`).",
            file=sys.stderr,
        )
        return 1
    if server.get("sock"):
        print("The server listens on a UNIX socket; MCP clients need an HTTP URL.", file=sys.stderr)
        return 1
    print(render(McpEndpoint.of(server), client=args.client, name=args.name))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``jupyter xcsh <command>``."""
    parser = argparse.ArgumentParser(prog="jupyter xcsh", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    config = commands.add_parser(
        "mcp-config",
        help="print the MCP client configuration of a running server",
        description=(
            "Print ready MCP client configuration for a running Jupyter Server: by default the "
            "one whose root holds the current directory, else the most recently started."
        ),
    )
    config.add_argument("--client", choices=sorted(CLIENTS), help="print only this client's")
    config.add_argument("--url", help="the server's URL, as `jupyter server list` shows it")
    config.add_argument("--name", default="jupyter", help="the server's name in the client")
    config.add_argument("--runtime-dir", help="where the servers' info files are")
    args = parser.parse_args(argv)
    return mcp_config(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""A kernel's ``input()`` during an MCP call, asked of the person through elicitation.

When the client offers ``elicitation`` and the call streams (Server-Sent Events), a prompt of
a run with stdin ``ask`` becomes an ``elicitation/create`` request on the call's own stream:
form mode, one string field, the prompt as the message. The client POSTs its response to the
endpoint like any message; ``Elicitations`` hands it to the call waiting for it, by request id
(and the same client). ``accept`` sends the answer to the kernel; ``decline`` and ``cancel``
send end of file, the call going on with a line saying so. A password prompt (``getpass``) is
never asked this way: the MCP specification forbids requesting secrets through elicitation.

How the server, stateless, knows the client offers elicitation, per request: the capabilities
a request carries in ``_meta`` (the per-request envelope of newer clients), else the
``Mcp-Session-Id`` this server hands out at ``initialize`` to a client that declared it, which
the client repeats on every request. That id holds no state on the server: it only says what
the client offered (``xcsh-elicitation-<random>``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = [
    "DECLINED",
    "PASSWORD",
    "Elicitations",
    "accepted_answer",
    "form",
    "offers_elicitation",
    "session_id_for",
]

#: The ``_meta`` key under which a request repeats the client's capabilities.
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
#: The session id prefix of a client that declared elicitation at ``initialize``.
ELICITING_SESSION = "xcsh-elicitation-"

#: Written into the output when the person declined or cancelled the question.
DECLINED = "[stdin] The person declined to answer (MCP elicitation): end of file sent."
#: Written into the output of a password prompt during an MCP call.
PASSWORD = (
    "[stdin] A password prompt is never asked through MCP elicitation (the MCP specification "
    "forbids requesting secrets that way): end of file sent. Pass it with stdin as a list of "
    "answers, or answer over REST (POST /api/xcsh/runs/<runId>/input)."
)

Send = Callable[[dict[str, Any]], None]
Elicit = Callable[[str], Awaitable[dict[str, Any]]]


def offers_elicitation(params: Mapping[str, Any], session_id: str | None) -> bool:
    """Whether the client of a request with ``params`` and ``Mcp-Session-Id`` can be asked."""
    meta = params.get("_meta")
    capabilities = meta.get(CAPABILITIES_META) if isinstance(meta, dict) else None
    if isinstance(capabilities, dict):
        return isinstance(capabilities.get("elicitation"), dict)
    return bool(session_id) and str(session_id).startswith(ELICITING_SESSION)


def session_id_for(capabilities: object) -> str | None:
    """The ``Mcp-Session-Id`` to hand a client declaring ``capabilities`` (None: none)."""
    if isinstance(capabilities, dict) and isinstance(capabilities.get("elicitation"), dict):
        return ELICITING_SESSION + uuid.uuid4().hex
    return None


def form(prompt: str, version: str = "2026-07-28") -> dict[str, Any]:
    """The ``elicitation/create`` params asking ``prompt``: one string field, ``answer``."""
    params: dict[str, Any] = {
        "message": prompt.strip() or "The code asks for input",
        "requestedSchema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer"}},
            "required": ["answer"],
        },
    }
    if version >= "2025-11-25":  # form and URL modes exist from this version on
        params = {"mode": "form", **params}
    return params


class Elicitations:
    """Elicitation requests sent on calls' streams, waiting for the client's response."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}

    async def ask(
        self, client: str, send: Send, prompt: str, *, version: str, timeout: float
    ) -> dict[str, Any]:
        """Ask ``prompt`` through ``send``; the client's result (``action``, ``content``).

        A response that is a JSON-RPC error, or none within ``timeout`` seconds, counts as
        ``cancel``.
        """
        request_id = f"xcsh-elicitation-{uuid.uuid4().hex}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = (client, answer)
        params = form(prompt, version)
        try:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "elicitation/create",
                    "params": params,
                }
            )
            response = await asyncio.wait_for(answer, timeout)
        except TimeoutError:
            return {"action": "cancel"}
        finally:
            del self._waiting[request_id]
        result = response.get("result")
        return result if isinstance(result, dict) else {"action": "cancel"}

    def respond(self, client: str, request_id: object, response: dict[str, Any]) -> bool:
        """Hand the client's response to the call that asked; whether one was waiting."""
        entry = self._waiting.get(request_id) if isinstance(request_id, str) else None
        if entry is None or entry[0] != client or entry[1].done():
            return False
        entry[1].set_result(response)
        return True


def accepted_answer(result: Mapping[str, Any]) -> str | None:
    """The answer of an accepted elicitation (None for decline or cancel)."""
    content = result.get("content")
    if result.get("action") != "accept" or not isinstance(content, dict):
        return None
    answer = content.get("answer")
    return answer if isinstance(answer, str) else ""

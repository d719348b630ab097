"""JSON-RPC 2.0 framing and MCP protocol versions: pure functions, no I/O, no tornado.

A POST body is one JSON-RPC message or (protocol 2025-03-26 only) a batch of them. Parsing
never raises for a bad *element*: it becomes a ``ProtocolError`` in the list, so a batch
answers its good requests and names the bad ones. Only a body that is not JSON at all, or not a
message or batch, raises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_VERSION",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "RESOURCE_NOT_FOUND",
    "Message",
    "ProtocolError",
    "allows_batches",
    "decode",
    "error_response",
    "negotiate",
    "parse_messages",
    "request_version",
    "result_response",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: MCP's code for ``resources/read`` of an unknown URI.
RESOURCE_NOT_FOUND = -32002

#: The protocol versions served, oldest first.
PROTOCOL_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = PROTOCOL_VERSIONS[-1]
#: The version of a request without an ``MCP-Protocol-Version`` header (the transport spec's
#: rule for servers that cannot tell otherwise, as a stateless one cannot).
UNANNOUNCED_VERSION = "2025-03-26"

RequestId = str | int


class ProtocolError(Exception):
    """A message the server cannot process; answered as a JSON-RPC error (never a 5xx)."""

    def __init__(
        self, code: int, message: str, *, request_id: RequestId | None = None, data: Any = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.data = data

    def response(self) -> dict[str, Any]:
        """The JSON-RPC error response for this fault."""
        return error_response(self.request_id, self.code, self.message, self.data)


@dataclass(frozen=True)
class Message:
    """One well-formed JSON-RPC message from the client.

    ``kind`` is ``request`` (has an id: it gets an answer), ``notification`` (no id) or
    ``response`` (the client answering a server request, e.g. an elicitation: ``params`` holds
    its ``result`` or ``error``).
    """

    kind: str
    method: str = ""
    id: RequestId | None = None
    params: dict[str, Any] = field(default_factory=dict)


def negotiate(requested: object) -> str:
    """The version to answer ``initialize`` with: the client's when served, else the newest."""
    return (
        requested
        if isinstance(requested, str) and requested in PROTOCOL_VERSIONS
        else LATEST_VERSION
    )


def request_version(header: str | None) -> str:
    """The protocol version of a request from its ``MCP-Protocol-Version`` header.

    Raises ``ProtocolError`` for a version this server does not serve (the transport spec
    answers it with a 400).
    """
    if header is None:
        return UNANNOUNCED_VERSION
    version = header.strip()
    if version not in PROTOCOL_VERSIONS:
        raise ProtocolError(
            INVALID_REQUEST,
            f"Unsupported MCP-Protocol-Version: {version} "
            f"(supported: {', '.join(PROTOCOL_VERSIONS)})",
        )
    return version


def allows_batches(version: str) -> bool:
    """JSON-RPC batches exist in 2025-03-26 only (2025-06-18 removed them)."""
    return version == "2025-03-26"


def decode(raw: bytes) -> Any:
    """The JSON value of a POST body; ``ProtocolError`` (parse error) when it is not JSON.

    ``NaN`` and ``Infinity`` are refused (Python's parser takes them; JSON has none), and so
    is nesting deep enough to exhaust the parser's recursion.
    """
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise ProtocolError(PARSE_ERROR, "Parse error: nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(PARSE_ERROR, f"Parse error: {e}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_messages(body: Any, version: str) -> tuple[list[Message | ProtocolError], bool]:
    """Split a decoded POST body into its messages (bad ones as errors), and say if a batch.

    Raises ``ProtocolError`` when the body as a whole is unusable: neither an object nor an
    array, an empty batch, or a batch under a version without batches.
    """
    if isinstance(body, list):
        if not allows_batches(version):
            raise ProtocolError(
                INVALID_REQUEST, f"Invalid Request: protocol version {version} has no batches"
            )
        if not body:
            raise ProtocolError(INVALID_REQUEST, "Invalid Request: empty batch")
        return [_parse_message(item, in_batch=True) for item in body], True
    if isinstance(body, dict):
        message = _parse_message(body, in_batch=False)
        if isinstance(message, ProtocolError):
            raise message
        return [message], False
    raise ProtocolError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC object or batch")


def _parse_message(item: object, *, in_batch: bool) -> Message | ProtocolError:
    if not isinstance(item, dict):
        return ProtocolError(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    raw_id = item.get("id")
    # A usable id is echoed in the error, so the client can match it.
    request_id = raw_id if _valid_id(raw_id) else None
    if item.get("jsonrpc") != "2.0":
        return ProtocolError(
            INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id=request_id
        )
    if "method" not in item:
        answer = item.get("result", item.get("error"))
        if request_id is not None and isinstance(answer, dict):
            key = "result" if "result" in item else "error"
            return Message("response", id=request_id, params={key: answer})
        return ProtocolError(
            INVALID_REQUEST, "Invalid Request: no method, result or error", request_id=request_id
        )
    method = item["method"]
    if not isinstance(method, str):
        return ProtocolError(
            INVALID_REQUEST, "Invalid Request: method must be a string", request_id=request_id
        )
    if "id" in item and request_id is None:
        return ProtocolError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    params = item.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return ProtocolError(
            INVALID_PARAMS, "Invalid params: params must be an object", request_id=request_id
        )
    if request_id is None:
        return Message("notification", method=method, params=params)
    if in_batch and method == "initialize":
        return ProtocolError(
            INVALID_REQUEST, "Invalid Request: initialize cannot be batched", request_id=request_id
        )
    return Message("request", method=method, id=request_id, params=params)


def _valid_id(value: object) -> bool:
    # MCP: a string or an integer, never null (JSON-RPC's fractional ids are not allowed).
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def result_response(request_id: RequestId | None, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """A JSON-RPC error response (``id`` null when the request's id could not be read)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}

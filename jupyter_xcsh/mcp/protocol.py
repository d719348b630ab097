"""JSON-RPC 2.0 framing and MCP protocol versions: pure functions, no I/O, no tornado.

A POST body is one JSON-RPC message or (protocol 2025-03-26 only) a batch of them. Parsing
never raises for a bad *element*: it becomes a ``ProtocolError`` in the list, so a batch
answers its good requests and names the bad ones. Only a body that is not JSON at all, or not a
message or batch, raises.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CLIENT_CAPABILITIES_META",
    "CLIENT_INFO_META",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_VERSION",
    "MAX_CLIENT_NAME",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_VERSIONS",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "PROTOCOL_VERSION_META",
    "RESOURCE_NOT_FOUND",
    "SERVER_INFO_META",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "Message",
    "ProtocolError",
    "allows_batches",
    "body_id",
    "client_name",
    "decode",
    "error_response",
    "http_status",
    "is_modern",
    "modern_envelope",
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
#: 2026-07-28: a routing header (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``) that
#: disagrees with the body, or appears twice.
HEADER_MISMATCH = -32020
#: 2026-07-28: the request needs a client capability its client did not declare.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
#: 2026-07-28: a per-request protocol version this server does not serve (``data`` names the
#: served ones: a client negotiating ``auto`` retries with one of them).
UNSUPPORTED_PROTOCOL_VERSION = -32022

#: The protocol versions served through the ``initialize`` handshake, oldest first.
PROTOCOL_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = PROTOCOL_VERSIONS[-1]
#: The versions without a handshake: every request carries its version, client info and
#: capabilities in ``params._meta`` (the envelope), and its routing headers.
MODERN_VERSIONS = ("2026-07-28",)

#: The envelope's keys in a 2026-07-28 request's ``params._meta``.
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
#: Where a 2026-07-28 result names the server (``_meta``; there is no ``initialize`` result).
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

#: The HTTP status of a 2026-07-28 error answered before anything streamed (the transport's
#: table); any other code is a 200 carrying the JSON-RPC error.
_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
#: Methods whose ``Mcp-Name`` header mirrors a body parameter, and which.
_NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The Tasks extension: a task's requests name it, for routing to the instance holding it.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
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
        served = [*PROTOCOL_VERSIONS, *MODERN_VERSIONS]
        raise ProtocolError(
            UNSUPPORTED_PROTOCOL_VERSION,  # its data lets a client retry with a served one
            f"Unsupported MCP-Protocol-Version: {version} (supported: {', '.join(served)})",
            data={"supported": served, "requested": version},
        )
    return version


def is_modern(header: str | None) -> bool:
    """Whether a request's ``MCP-Protocol-Version`` header chooses the 2026 era (no handshake)."""
    return header is not None and header.strip() in MODERN_VERSIONS


def http_status(response: dict[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 JSON-RPC answer sent as JSON: 200 unless the table says."""
    error = response.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return _ERROR_STATUS.get(code, 200) if isinstance(code, int) else 200


@dataclass(frozen=True)
class Envelope:
    """A 2026-07-28 request's own protocol version, client info and capabilities."""

    version: str
    client_info: dict[str, Any]
    capabilities: dict[str, Any]

    @property
    def client_name(self) -> str:
        """``clientInfo.name`` as shown ("" when the request gave none): see ``client_name``."""
        return client_name(self.client_info.get("name"))


#: The longest client name kept: as the lab's presence shows an agent's name.
MAX_CLIENT_NAME = 64


def client_name(value: object) -> str:
    """A client's ``clientInfo.name`` as kept and shown ("" for anything but a string).

    Its printable characters, trimmed, at most ``MAX_CLIENT_NAME`` of them: it names the caller
    in every call's events and in the activity history, so a client cannot fill them with
    megabytes or with control characters.
    """
    if not isinstance(value, str):
        return ""
    return "".join(ch for ch in value if ch.isprintable()).strip()[:MAX_CLIENT_NAME]


def modern_envelope(message: Message, headers: Mapping[str, list[str]]) -> Envelope:
    """Check a 2026-07-28 request's envelope and routing headers; its ``Envelope``.

    ``headers`` maps each lower-cased header name to its values (all of them: a routing header
    sent twice is refused, first-copy and last-copy readers would disagree). The rungs, first
    failure wins, as the SDK's transport checks them: the envelope's two required keys
    (``-32602``), the headers against the body (``-32020``), the version served (``-32022``,
    its ``data`` naming the served ones).
    """
    for name in ("mcp-protocol-version", "mcp-method", "mcp-name"):
        if len(headers.get(name, ())) > 1:
            raise ProtocolError(
                HEADER_MISMATCH, f"{name} header appears more than once", request_id=message.id
            )
    meta = message.params.get("_meta")
    required = (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META)
    if not isinstance(meta, dict):
        raise ProtocolError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {required[0]!r} and {required[1]!r}",
            request_id=message.id,
        )
    missing = [key for key in required if key not in meta]
    if missing:
        raise ProtocolError(
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
            request_id=message.id,
        )
    version = meta[PROTOCOL_VERSION_META]

    def header(name: str) -> str | None:
        values = headers.get(name)
        return values[0] if values else None

    if header("mcp-protocol-version") != version:
        raise ProtocolError(
            HEADER_MISMATCH,
            f"MCP-Protocol-Version header ({header('mcp-protocol-version')}) does not match "
            f"the request's _meta protocol version ({version})",
            request_id=message.id,
        )
    if header("mcp-method") != message.method:
        raise ProtocolError(
            HEADER_MISMATCH,
            f"Mcp-Method header ({header('mcp-method')}) does not match the request's method "
            f"({message.method})",
            request_id=message.id,
        )
    key = _NAMED_BY.get(message.method)
    named = message.params.get(key) if key is not None else None
    if named is not None and decode_header_value(header("mcp-name")) != named:
        raise ProtocolError(
            HEADER_MISMATCH,
            f"Mcp-Name header ({header('mcp-name')}) does not match the request's {key} ({named})",
            request_id=message.id,
        )
    if version not in MODERN_VERSIONS:
        raise ProtocolError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            request_id=message.id,
            data={"supported": list(MODERN_VERSIONS), "requested": version},
        )
    info = meta.get(CLIENT_INFO_META)
    capabilities = meta[CLIENT_CAPABILITIES_META]
    return Envelope(
        version,
        info if isinstance(info, dict) else {},
        capabilities if isinstance(capabilities, dict) else {},
    )


_BASE64_VALUE = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def decode_header_value(value: str | None) -> str | None:
    """A routing header's value: as sent, or decoded from MCP's ``=?base64?...?=`` form.

    A value a header cannot carry (non-ASCII, edge spaces) is sent base64-encoded in that form;
    a malformed one decodes to None, so it never matches a body value by accident.
    """
    if value is None:
        return None
    match = _BASE64_VALUE.fullmatch(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


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


def body_id(raw: bytes) -> RequestId | None:
    """The id of a request body, for an error found before the body was parsed (else None)."""
    try:
        body = json.loads(raw)
    except (RecursionError, UnicodeDecodeError, ValueError):
        return None
    found = body.get("id") if isinstance(body, dict) else None
    return found if _valid_id(found) else None


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

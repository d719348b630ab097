"""Kernel messages read from ZMQ frames, as jupyter_client reads them but cheaper.

``decode_message`` is the ``message_decoding`` fast path (``jupyter_xcsh.fast_paths``): it
leans on ``Session``'s digest history, an internal; ``probe_decoding`` checks at startup that it
still decodes as ``Session.deserialize`` does, else ``deserialize_message`` (the public call)
is used.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from json import JSONDecoder
from json.scanner import make_scanner
from typing import Any, cast

from jupyter_client._version import protocol_version_info  # adapt's default, from there
from jupyter_client.adapter import adapt
from jupyter_client.session import Session, json_unpacker

__all__ = ["decode_message", "deserialize_message", "probe_decoding"]

#: Turns the frames of a kernel's ZMQ message into a message.
Decoder = Callable[[Any, list[bytes]], dict[str, Any]]

#: The scanner of a plain ``JSONDecoder`` (``json.loads``' own, C where built): one JSON value
#: from the start of a text, and where it ends.
_SCAN = make_scanner(cast(Any, JSONDecoder()))
#: The major protocol version ``adapt`` adapts messages to by default, as a header writes it.
_OWN_MAJOR = str(protocol_version_info[0])


def _json_part(part: bytes) -> Any:
    """``json_unpacker(part)`` (jupyter_client's JSON unpacker), for less.

    ``json.loads`` wraps the scanner in two Python layers and two whitespace regexes: ~8,000
    instructions a part, 16 parts a ``pass`` call. A part that is not exactly one JSON value
    (leading or trailing whitespace, extra data, invalid JSON) is parsed by ``json_unpacker``
    itself, so the value, or the error, is the same.
    """
    text = part.decode("utf8", "replace")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json_unpacker(part)
    if end != len(text):
        return json_unpacker(part)
    return value


def decode_message(session: Any, frames: list[bytes]) -> dict[str, Any]:
    """Turn the frames of a kernel's ZMQ message into a message, as ``Session.deserialize``.

    The signature is checked as jupyter_client checks it (signed, never seen before, valid).
    Unlike ``Session.deserialize``, the header dates stay ISO strings: turning them into
    datetimes (dateutil) is half the cost of reading a small message, and nothing here reads
    them.
    """
    _, frames = session.feed_identities(frames)
    if session.auth is not None:
        signature = frames[0]
        if not signature:
            raise ValueError("Unsigned Message")
        if signature in session.digest_history:
            raise ValueError(f"Duplicate Signature: {signature!r}")
        session._add_digest(signature)
        if not hmac.compare_digest(signature, session.sign(frames[1:5])):
            raise ValueError(f"Invalid Signature: {signature!r}")
    if len(frames) < 5:
        raise TypeError("malformed message, must have at least 5 elements")
    unpack = session.unpack
    if unpack is json_unpacker:
        unpack = _json_part
    header = unpack(frames[1])
    message = {
        "header": header,
        "msg_id": header["msg_id"],
        "msg_type": header["msg_type"],
        "parent_header": unpack(frames[2]),
        "metadata": unpack(frames[3]),
        "content": unpack(frames[4]),
        "buffers": [memoryview(b) for b in frames[5:]],
    }
    version = header.get("version")
    if "date" in header and isinstance(version, str) and version.split(".")[0] == _OWN_MAJOR:
        # What ``adapt`` returns for a dated message of this major version: the message itself
        # (it has no adapter from a version to itself), without its import on every call.
        return message
    return adapt(message)


def deserialize_message(session: Any, frames: list[bytes]) -> dict[str, Any]:
    """Turn the frames of a kernel's ZMQ message into a message with ``Session.deserialize``."""
    _, frames = session.feed_identities(frames)
    message: dict[str, Any] = session.deserialize(frames)
    return message


def probe_decoding() -> str | None:
    """Whether ``decode_message`` reads a signed message as ``Session.deserialize`` does.

    None when it does (and refuses the same message twice, as the session's digest history
    makes ``Session.deserialize`` do); else what differs.
    """
    writer, public, fast = (Session(key=b"xcsh-probe") for _ in range(3))
    parent = writer.msg("execute_request", {"code": ""})
    sent = writer.msg("status", {"execution_state": "idle"}, parent=parent, metadata={"m": 1})
    frames = [b"identity", *writer.serialize(sent)]
    expected = deserialize_message(public, list(frames))
    got = decode_message(fast, list(frames))
    for key in ("msg_id", "msg_type", "content", "metadata"):
        if got.get(key) != expected.get(key):
            return f"{key} differs from Session.deserialize's"
    if got["parent_header"].get("msg_id") != parent["header"]["msg_id"]:
        return "parent_header differs from Session.deserialize's"
    try:
        decode_message(fast, list(frames))
    except ValueError:
        return None
    return "a replayed message was accepted"

"""Kernel messages read from ZMQ frames, as jupyter_client reads them but cheaper."""

from __future__ import annotations

import hmac
from typing import Any

from jupyter_client.adapter import adapt

__all__ = ["decode_message"]


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
    return adapt(message)

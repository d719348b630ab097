"""Kernel messages read straight from ZMQ frames (``wire.decode_message``)."""

from __future__ import annotations

import pytest
from jupyter_client.session import Session

from jupyter_xcsh.execution.kernel.wire import decode_message


def frames(session: Session, content: dict) -> list[bytes]:
    """The frames a kernel sends for a stream message, identities first."""
    msg = session.msg("stream", content, parent=session.msg_header("execute_request"))
    return [b"topic", *session.serialize(msg)]


def test_a_message_reads_as_session_deserialize_reads_it_but_dates_stay_strings():
    sender, reader = Session(key=b"secret"), Session(key=b"secret")
    wire = frames(sender, {"name": "stdout", "text": "hi\n"})

    message = decode_message(reader, list(wire))
    expected = Session(key=b"secret").deserialize(Session().feed_identities(wire)[1])

    assert message["content"] == expected["content"] == {"name": "stdout", "text": "hi\n"}
    assert message["msg_type"] == "stream"
    assert message["msg_id"] == expected["msg_id"]
    assert message["parent_header"]["msg_id"] == expected["parent_header"]["msg_id"]
    assert isinstance(message["header"]["date"], str)


@pytest.mark.parametrize(
    ("tamper", "error"),
    [
        (lambda f: [f[0], f[1], b"", *f[3:]], "Unsigned Message"),
        (lambda f: [*f[:-1], b'{"name": "stdout", "text": "forged"}'], "Invalid Signature"),
    ],
    ids=["unsigned", "forged"],
)
def test_messages_failing_the_signature_check_are_refused(tamper, error):
    wire = frames(Session(key=b"secret"), {"name": "stdout", "text": "hi\n"})

    with pytest.raises(ValueError, match=error):
        decode_message(Session(key=b"secret"), tamper(wire))


def test_a_replayed_message_is_refused():
    reader = Session(key=b"secret")
    wire = frames(Session(key=b"secret"), {"name": "stdout", "text": "hi\n"})
    decode_message(reader, list(wire))

    with pytest.raises(ValueError, match="Duplicate Signature"):
        decode_message(reader, list(wire))


@pytest.mark.parametrize("version", ["4.1", None], ids=["protocol-4", "no-version"])
def test_a_message_of_an_older_protocol_is_adapted_as_session_deserialize_adapts_it(version):
    sender = Session(key=b"secret")
    msg = sender.msg("stream", {"name": "stdout", "data": "hi\n"})  # protocol 4's stream
    if version is None:
        del msg["header"]["version"]
    else:
        msg["header"]["version"] = version
    wire = [b"topic", *sender.serialize(msg)]

    message = decode_message(Session(key=b"secret"), list(wire))
    expected = Session(key=b"secret").deserialize(Session().feed_identities(wire)[1])

    assert message["content"] == expected["content"] == {"name": "stdout", "text": "hi\n"}
    assert message["header"]["version"] == expected["header"]["version"] == "5.0"

"""The MCP core without a server: JSON-RPC parsing, versions, results, progress, cancel keys."""

from __future__ import annotations

import pytest

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.errors import ConflictError, NotFoundError
from jupyter_xcsh.mcp.progress import MAX_MESSAGE_CHARS, ProgressNotifier
from jupyter_xcsh.mcp.protocol import (
    Message,
    ProtocolError,
    decode,
    negotiate,
    parse_messages,
    request_version,
)
from jupyter_xcsh.mcp.server import RequestContext, RunningRequests, progress_token
from jupyter_xcsh.mcp.tools import call_result, error_result
from jupyter_xcsh.tools import Caller


def parse_body(raw, version):
    return parse_messages(decode(raw), version)


def test_a_request_a_notification_and_a_response_are_told_apart():
    request, _ = parse_body(b'{"jsonrpc": "2.0", "id": "a", "method": "ping"}', "2025-11-25")
    note, _ = parse_body(b'{"jsonrpc": "2.0", "method": "notifications/x"}', "2025-11-25")
    answer, _ = parse_body(b'{"jsonrpc": "2.0", "id": 3, "result": {}}', "2025-11-25")

    assert request == [Message("request", "ping", "a", {})]
    assert note == [Message("notification", "notifications/x", None, {})]
    assert answer == [Message("response", id=3, params={"result": {}})]


def test_a_null_params_is_no_params():
    parsed, _ = parse_body(b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": null}', "x")
    assert parsed == [Message("request", "m", 1, {})]


def test_a_batch_keeps_its_order_and_turns_bad_members_into_errors():
    raw = b'[{"jsonrpc": "2.0", "id": 1, "method": "a"}, 5, {"jsonrpc": "2.0", "method": "b"}]'
    parsed, batch = parse_body(raw, "2025-03-26")

    assert batch is True
    assert parsed[0] == Message("request", "a", 1, {})
    assert isinstance(parsed[1], ProtocolError) and parsed[1].code == -32600
    assert parsed[2] == Message("notification", "b", None, {})


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_batches_are_refused_by_versions_without_them(version):
    with pytest.raises(ProtocolError, match="has no batches"):
        parse_body(b'[{"jsonrpc": "2.0", "method": "a"}]', version)


@pytest.mark.parametrize(
    "raw", [b"NaN", b'{"a": Infinity}', b"[" * 100000 + b"]" * 100000, b"{", b"\xff"]
)
def test_what_is_not_json_is_a_parse_error(raw):
    with pytest.raises(ProtocolError) as e:
        decode(raw)
    assert e.value.code == -32700


def test_answers_need_an_id_and_an_object():
    for raw in (
        b'{"jsonrpc": "2.0", "id": null, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": 5}',
        b'{"jsonrpc": "2.0", "id": 1, "error": "bad"}',
    ):
        with pytest.raises(ProtocolError, match="Invalid Request"):
            parse_body(raw, "2025-11-25")


def test_versions_are_negotiated_and_headers_checked():
    assert negotiate("2025-06-18") == "2025-06-18"
    assert negotiate(None) == "2025-11-25"
    assert negotiate(["2025-06-18"]) == "2025-11-25"
    assert request_version(None) == "2025-03-26"
    assert request_version(" 2025-11-25 ") == "2025-11-25"
    with pytest.raises(ProtocolError, match="Unsupported MCP-Protocol-Version: 2026-07-28"):
        request_version("2026-07-28")


def test_a_python_result_becomes_text_images_and_links_to_its_artifacts():
    body = {
        "text": "out",
        "isError": True,
        "artifactId": "A",
        "cells": [{"index": 0, "title": "", "artifactId": "A"}, {"index": 1, "artifactId": "B"}],
        "images": [
            {"mimeType": "image/png", "data": "iVBO", "artifactId": "C"},
            {"mimeType": "image/png", "omitted": True, "artifactId": "D"},
            {"mimeType": "image/png", "data": ""},
        ],
    }
    result = call_result(body, "2025-11-25")

    assert result["isError"] is True
    assert result["structuredContent"] == {  # the summary: no text, no image data
        "isError": True,
        "artifactId": "A",
        "cells": [{"index": 0, "artifactId": "A"}, {"index": 1, "artifactId": "B"}],
        "images": [
            {"mimeType": "image/png", "artifactId": "C"},
            {"mimeType": "image/png", "omitted": True, "artifactId": "D"},
            {"mimeType": "image/png"},
        ],
    }
    assert call_result(body, "2025-11-25", whole=True)["structuredContent"] is body
    content = result["content"]
    assert content[0] == {"type": "text", "text": "out"}
    assert content[1] == {"type": "image", "data": "iVBO", "mimeType": "image/png"}
    links = [(c["uri"], c["mimeType"]) for c in content[2:]]
    assert links == [
        ("artifact://A", "text/plain"),
        ("artifact://B", "text/plain"),
        ("artifact://C", "image/png"),
        ("artifact://D", "image/png"),
    ]
    assert all(c["type"] == "resource_link" for c in content[2:])


def test_before_2025_06_18_a_result_has_no_structured_content_or_links():
    result = call_result({"text": "t", "artifactId": "A"}, "2025-03-26")
    assert result == {"content": [{"type": "text", "text": "t"}], "isError": False}


def test_a_domain_error_is_an_error_result_with_its_message_and_status():
    details = {"cellIndex": 1, "cellSource": "x = 1\n" * 1000}
    stale = ConflictError("Cell 1 changed", reason="stale_cell", details=details)

    assert error_result(stale, "2025-11-25") == {
        "content": [{"type": "text", "text": "Cell 1 changed"}],
        "isError": True,
        "structuredContent": {"reason": "stale_cell", "details": {"cellIndex": 1}, "status": 409},
    }
    assert error_result(stale, "2025-11-25", whole=True)["structuredContent"] == {
        "message": "Cell 1 changed",
        "reason": "stale_cell",
        "details": details,
        "status": 409,
    }
    assert error_result(NotFoundError("gone"), "2025-11-25")["structuredContent"] == {
        "reason": None,
        "status": 404,
    }
    assert error_result(NotFoundError("gone"), "2025-03-26") == {
        "content": [{"type": "text", "text": "gone"}],
        "isError": True,
    }


def test_progress_reports_cell_starts_and_the_last_output_line_with_growing_values():
    sent = []
    notifier = ProgressNotifier("t", sent.append)
    notifier.tick()
    notifier.call_started({"callId": "c" * 32, "cells": [{}, {}]})
    notifier.tick()
    notifier.cell_status(0, "running")
    notifier.chunk(0, "a\nb\n")
    notifier.chunk(0, "10%\r\x1b[1m50%\x1b[0m\r\n")
    notifier.tick()
    notifier.status_event(0, {"op": "load"})
    notifier.cell_status(0, "complete")
    notifier.cell_status(1, "running")
    notifier.chunk(1, "x" * 1000)
    notifier.tick()

    params = [m["params"] for m in sent]
    assert all(m["method"] == "notifications/progress" for m in sent)
    assert [p["progress"] for p in params] == [1, 2, 3, 4, 5, 6, 7]
    del params[1]  # the run's id comes first
    assert sent[1]["params"]["message"].startswith(f"run {'c' * 32} started")
    assert [p["message"] for p in params[:5]] == [
        "working",
        "waiting for the kernel",
        "cell 1/2 running",
        "cell 1/2 running: 50%",
        "cell 2/2 running",
    ]
    assert params[5]["message"] == "cell 2/2 running: " + "x" * MAX_MESSAGE_CHARS
    assert {p["progressToken"] for p in params} == {"t"}


@pytest.mark.parametrize(
    ("meta", "token"),
    [({"progressToken": "a"}, "a"), ({"progressToken": 3}, 3), ({"progressToken": True}, None)],
)
def test_progress_tokens_are_strings_or_integers(meta, token):
    assert progress_token({"_meta": meta}) == token
    assert progress_token({}) is None


def test_a_cancel_reaches_only_the_running_request_of_that_caller():
    running = RunningRequests()
    mine, theirs = (RequestContext(Caller.trusted(), "x", "v", CallControl()) for _ in "ab")
    with running.track("me", 1, mine), running.track("them", 1, theirs):
        assert running.cancel("me", 2) == []
        assert running.cancel("me", "1") == []
        assert running.cancel("me", True) == []
        assert running.cancel("me", 1) == [mine]
        assert (mine.control.cancelled, theirs.control.cancelled) == (True, False)
    assert len(running) == 0
    assert running.cancel("them", 1) == []

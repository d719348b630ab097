"""GET /api/xcsh/artifacts/<id> on a real Jupyter Server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.outputs.sink import OutputSink, truncation_notice
from tests.support.openapi_check import assert_response_matches

PATH = "/api/xcsh/artifacts/{artifact_id}"
UNKNOWN_ID = "20240101T000000-0123456789ab"
TEXT = "line 1\nline 2 é\nline 3 🎉\nlast line".encode()


@pytest.fixture
def store(jp_serverapp) -> ArtifactStore:
    return jp_serverapp.web_app.settings["xcsh"].artifact_store


@pytest.fixture
def artifact_id(store) -> str:
    with store.create("python") as writer:
        writer.write(TEXT)
    return writer.id


@pytest.fixture
def get_artifact(jp_fetch):
    """GET an artifact; return ``(status, headers, body bytes)`` for success and error."""

    async def call(artifact_id: str, **kwargs: Any) -> tuple[int, Any, bytes]:
        try:
            response = await jp_fetch("api", "xcsh", "artifacts", artifact_id, **kwargs)
        except HTTPClientError as e:
            assert e.response is not None
            return e.code, e.response.headers, e.response.body
        return response.code, response.headers, response.body

    return call


def assert_error(status: int, body: bytes, expected_status: int) -> dict[str, Any]:
    assert status == expected_status
    assert_response_matches(PATH, "get", status, body)
    return json.loads(body)


async def test_an_artifact_is_returned_whole_as_utf8_text(get_artifact, artifact_id):
    status, headers, body = await get_artifact(artifact_id)
    assert status == 200
    assert body == TEXT
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Content-Length"] == str(len(TEXT))
    assert headers["Accept-Ranges"] == "bytes"
    assert_response_matches(PATH, "get", status, body.decode())


async def test_the_artifact_a_truncation_notice_points_to_holds_the_full_output(
    get_artifact, store
):
    chunks = [f"\x1b[1mrow {i}\x1b[0m\r\n" for i in range(5000)]
    sink = OutputSink(max_bytes=1024, open_artifact=lambda: store.create("python"))
    for chunk in chunks:
        sink.push(chunk)
    result = sink.dump()
    notice = truncation_notice(result)
    assert notice is not None and f"artifact://{result.artifact_id}" in notice
    status, _, body = await get_artifact(result.artifact_id)
    assert (status, body) == (200, "".join(chunks).encode())
    # The lines the notice says are shown are those lines of the artifact, as pages count them.
    assert "showing lines 1-20 and 4941-5000" in notice
    status, _, page = await get_artifact(
        result.artifact_id, params={"offset": "4941", "limit": "60"}
    )
    assert page == "".join(chunks[4940:]).encode()


async def test_an_empty_artifact_is_an_empty_text(get_artifact, store):
    with store.create("python") as writer:
        pass
    status, _, body = await get_artifact(writer.id)
    assert (status, body) == (200, b"")


# Paging by lines


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"offset": "2", "limit": "1"}, "line 2 é\n"),
        ({"offset": "3"}, "line 3 🎉\nlast line"),
        ({"limit": "2"}, "line 1\nline 2 é\n"),
        ({"offset": "4", "limit": "10"}, "last line"),
        ({"offset": "99"}, ""),
    ],
)
async def test_offset_and_limit_return_those_lines(get_artifact, artifact_id, query, expected):
    status, headers, body = await get_artifact(artifact_id, params=query)
    assert status == 200
    assert body.decode() == expected
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert_response_matches(PATH, "get", status, body.decode())


async def test_lines_deep_inside_a_large_artifact_are_paged_exactly(get_artifact, store):
    with store.create("python") as writer:
        for i in range(1, 200_001):
            writer.write(f"{i}\n".encode())
    status, _, body = await get_artifact(writer.id, params={"offset": "150000", "limit": "3"})
    assert (status, body) == (200, b"150000\n150001\n150002\n")


@pytest.mark.parametrize(
    "query", [{"offset": "0"}, {"limit": "0"}, {"offset": "-1"}, {"limit": "x"}]
)
async def test_an_offset_or_limit_that_is_not_a_positive_integer_is_a_400(
    get_artifact, artifact_id, query
):
    status, _, body = await get_artifact(artifact_id, params=query)
    name = next(iter(query))
    assert assert_error(status, body, 400)["message"].startswith(f"{name} must be a positive")


# Paging by bytes


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [("bytes=0-5", 0, 6), ("bytes=7-", 7, len(TEXT)), ("bytes=-9", len(TEXT) - 9, len(TEXT))],
)
async def test_a_byte_range_returns_206_with_those_bytes(
    get_artifact, artifact_id, header, start, end
):
    status, headers, body = await get_artifact(artifact_id, headers={"Range": header})
    assert status == 206
    assert body == TEXT[start:end]
    assert headers["Content-Range"] == f"bytes {start}-{end - 1}/{len(TEXT)}"
    assert headers["Content-Length"] == str(end - start)
    assert_response_matches(PATH, "get", status, body.decode())


async def test_a_range_past_the_end_is_clamped_to_the_size(get_artifact, artifact_id):
    status, headers, body = await get_artifact(artifact_id, headers={"Range": "bytes=5-9999"})
    assert (status, body) == (206, TEXT[5:])
    assert headers["Content-Range"] == f"bytes 5-{len(TEXT) - 1}/{len(TEXT)}"


async def test_a_range_starting_beyond_the_end_is_a_416(get_artifact, artifact_id):
    status, _, body = await get_artifact(artifact_id, headers={"Range": "bytes=9999-"})
    assert_error(status, body, 416)


async def test_a_malformed_range_is_ignored_and_the_whole_text_returned(get_artifact, artifact_id):
    status, _, body = await get_artifact(artifact_id, headers={"Range": "lines=1-2"})
    assert (status, body) == (200, TEXT)


async def test_lines_and_a_byte_range_together_are_a_400(get_artifact, artifact_id):
    status, _, body = await get_artifact(
        artifact_id, params={"offset": "2"}, headers={"Range": "bytes=0-1"}
    )
    assert "not both" in assert_error(status, body, 400)["message"]


# Unknown and refused ids


async def test_an_unknown_id_is_a_404_json_error(get_artifact, artifact_id):
    status, headers, body = await get_artifact(UNKNOWN_ID)
    assert headers["Content-Type"].startswith("application/json")
    assert assert_error(status, body, 404)["message"] == f"Artifact not found: {UNKNOWN_ID}"


@pytest.mark.parametrize(
    "bad_id",
    ["..", "%2E%2E", "%2F", "%2Fetc%2Fpasswd", "..%2F..%2Fsecret", "x", f"{UNKNOWN_ID}.python.log"],
)
async def test_ids_not_of_the_store_form_are_refused_without_touching_the_file_system(
    get_artifact, artifact_id, monkeypatch, bad_id
):
    def no_file_system(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the file system was touched")

    monkeypatch.setattr(os, "listdir", no_file_system)
    monkeypatch.setattr(os, "scandir", no_file_system)
    status, _, body = await get_artifact(bad_id)
    assert assert_error(status, body, 400)["message"].startswith("Invalid artifact id")


async def test_a_file_in_the_folder_that_is_not_an_artifact_is_not_served(
    get_artifact, store, artifact_id
):
    with open(os.path.join(store.directory, f"{UNKNOWN_ID}.txt"), "w") as f:
        f.write("not an artifact")
    status, _, body = await get_artifact(UNKNOWN_ID)
    assert_error(status, body, 404)


# Authentication and authorization


async def test_a_request_without_a_token_is_refused(get_artifact, artifact_id):
    status, _, body = await get_artifact(artifact_id, headers={"Authorization": ""})
    assert status in (401, 403)
    assert TEXT not in body


class TestDenyingContentsReads:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyAllAuthorizer"
        return config

    async def test_reading_an_artifact_is_forbidden(self, get_artifact, artifact_id):
        status, _, body = await get_artifact(artifact_id)
        message = assert_error(status, body, 403)["message"]
        assert message == "User is not authorized to read on resource: contents."


class TestAllowingOnlyReads:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_reading_an_artifact_needs_only_read(self, get_artifact, artifact_id):
        status, _, body = await get_artifact(artifact_id)
        assert (status, body) == (200, TEXT)


# Wiring


def test_the_store_lives_in_the_configured_folder_of_the_contents_root(store, jp_root_dir):
    assert store.os_folder == str(jp_root_dir / ".xcsh-artifacts")


async def test_old_artifacts_are_pruned_once_the_server_runs(jp_serverapp, store):
    with store.create("python") as writer:
        writer.write(b"old")
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(writer.os_path, (eight_days_ago, eight_days_ago))
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_xcsh"]
    # pytest-jupyter does not run the extension's start hook; run it as the server would.
    await app._start_jupyter_server_extension(jp_serverapp)
    try:
        # The first pass runs at once in a worker thread; allow it up to 5 s on a slow machine.
        for _ in range(100):
            if not os.path.exists(writer.os_path):
                break
            await asyncio.sleep(0.05)
    finally:
        await app.stop_extension()
    assert not os.path.exists(writer.os_path)


class TestConfiguredStore:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.artifacts_dir = "agent/outputs"
        config.XcshSettings.artifacts_max_bytes = 1234
        config.XcshSettings.artifacts_max_age = 60
        return config

    def test_folder_and_retention_come_from_the_settings(self, store, jp_root_dir):
        assert store.os_folder == str(jp_root_dir / "agent" / "outputs")
        assert (store.folder, store.max_bytes, store.max_age) == ("agent/outputs", 1234, 60)

"""ArtifactStore: unique files in the contents root, strict ids, retention, bounded reading."""

from __future__ import annotations

import io
import os
import time

import pytest

from jupyter_xcsh.artifacts import store as artifacts
from jupyter_xcsh.artifacts.store import (
    ARTIFACT_ID_PATTERN,
    ArtifactStore,
    iter_byte_range,
    iter_line_range,
)
from jupyter_xcsh.errors import InvalidRequestError, NotFoundError


@pytest.fixture
def store(tmp_path):
    return ArtifactStore(str(tmp_path))


def make_artifact(store: ArtifactStore, data: bytes, age: float = 0, tool: str = "python") -> str:
    with store.create(tool) as writer:
        writer.write(data)
    if age:
        stamp = time.time() - age
        os.utime(writer.os_path, (stamp, stamp))
    return writer.id


# Creating


def test_an_artifact_is_a_file_named_id_tool_log_in_a_visible_folder_of_the_root(store, tmp_path):
    with store.create("python") as writer:
        writer.write(b"hello\n")
    assert ARTIFACT_ID_PATTERN.match(writer.id)
    assert writer.api_path == f".xcsh-artifacts/{writer.id}.python.log"
    assert writer.os_path == str(tmp_path / ".xcsh-artifacts" / f"{writer.id}.python.log")
    assert (tmp_path / ".xcsh-artifacts" / f"{writer.id}.python.log").read_bytes() == b"hello\n"


def test_ids_start_with_the_utc_time_and_end_with_12_random_hex_digits(store):
    before = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    with store.create("python") as writer:
        pass
    stamp, random_part = writer.id.split("-")
    assert stamp >= before
    assert len(random_part) == 12 and int(random_part, 16) >= 0


def test_ids_are_unique_across_stores_sharing_a_folder(tmp_path):
    # Two stores on one root stand for two server runs.
    first, second = ArtifactStore(str(tmp_path)), ArtifactStore(str(tmp_path))
    ids = set()
    for store in [first, second] * 100:
        with store.create("python") as writer:
            ids.add(writer.id)
    assert len(ids) == 200


def test_an_existing_file_is_never_overwritten(store, monkeypatch):
    taken = make_artifact(store, b"precious")
    fresh = iter([taken, "20240101T000000-0123456789ab"])
    monkeypatch.setattr(artifacts, "new_artifact_id", lambda: next(fresh))
    with store.create("python") as writer:
        writer.write(b"new")
    assert writer.id == "20240101T000000-0123456789ab"
    with open(store.resolve(taken), "rb") as f:
        assert f.read() == b"precious"


def test_the_folder_is_created_on_demand(tmp_path):
    store = ArtifactStore(str(tmp_path), folder="out/artifacts")
    assert not (tmp_path / "out").exists()
    assert store.directory == str(tmp_path / "out" / "artifacts")
    assert (tmp_path / "out" / "artifacts").is_dir()


@pytest.mark.parametrize("folder", ["/tmp/elsewhere", "../outside", "a/../../b", "", "."])
def test_a_folder_outside_the_root_is_refused(tmp_path, folder):
    with pytest.raises(ValueError):
        ArtifactStore(str(tmp_path), folder=folder)


@pytest.mark.parametrize("tool", ["", "Python", "a/b", "../x", "x.y", "a" * 33])
def test_a_tool_name_that_could_break_the_file_name_is_refused(store, tool):
    with pytest.raises(ValueError):
        store.create(tool)


def test_a_writer_is_protected_until_closed(store):
    writer = store.create("python")
    assert store.is_writing(writer.id)
    writer.close()
    writer.close()
    assert not store.is_writing(writer.id)


def test_abort_removes_the_artifact(store):
    writer = store.create("python")
    writer.write(b"partial")
    writer.abort()
    assert not os.path.exists(writer.os_path)
    assert not store.is_writing(writer.id)


# Finding


def test_resolve_finds_an_artifact_whatever_its_tool(store):
    artifact_id = make_artifact(store, b"x", tool="notebook")
    assert store.resolve(artifact_id).endswith(f"{artifact_id}.notebook.log")


def test_resolve_of_an_unknown_id_is_not_found(store):
    make_artifact(store, b"x")
    with pytest.raises(NotFoundError, match="Artifact not found: 20240101T000000-0123456789ab"):
        store.resolve("20240101T000000-0123456789ab")


def test_resolve_before_any_artifact_exists_is_not_found(store):
    with pytest.raises(NotFoundError):
        store.resolve("20240101T000000-0123456789ab")


@pytest.mark.parametrize(
    "bad_id",
    [
        "..",
        "../secret",
        "a/b",
        "%2F",
        "/etc/passwd",
        "",
        "20240101T000000-0123456789AB",
        "20240101T000000-0123456789ab.python.log",
        "20240101T000000-0123456789ab/..",
        "20240101T000000-0123456789ab\n",
        "*",
    ],
)
def test_ids_not_of_the_store_form_are_refused_without_touching_the_file_system(
    store, monkeypatch, bad_id
):
    def no_file_system(*args, **kwargs):
        raise AssertionError("the file system was touched")

    monkeypatch.setattr(os, "listdir", no_file_system)
    monkeypatch.setattr(os, "scandir", no_file_system)
    with pytest.raises(InvalidRequestError, match="Invalid artifact id"):
        store.resolve(bad_id)


def test_a_symlink_named_like_an_artifact_is_not_followed(store, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    artifact_id = "20240101T000000-0123456789ab"
    os.symlink(secret, os.path.join(store.directory, f"{artifact_id}.python.log"))
    with pytest.raises(NotFoundError):
        store.resolve(artifact_id)


def test_entries_list_artifacts_oldest_first_and_ignore_other_files(store):
    new = make_artifact(store, b"new", age=10)
    old = make_artifact(store, b"old", age=100)
    with open(os.path.join(store.directory, "notes.txt"), "w") as f:
        f.write("mine")
    assert [a.id for a in store.entries()] == [old, new]


# Retention


def test_prune_removes_artifacts_older_than_max_age(tmp_path):
    store = ArtifactStore(str(tmp_path), max_age=3600)
    old = make_artifact(store, b"old", age=7200)
    recent = make_artifact(store, b"recent", age=60)
    assert store.prune() == [old]
    assert [a.id for a in store.entries()] == [recent]


def test_prune_removes_the_oldest_until_under_max_bytes(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=250)
    oldest = make_artifact(store, b"a" * 100, age=30)
    older = make_artifact(store, b"b" * 100, age=20)
    newest = make_artifact(store, b"c" * 100, age=10)
    assert store.prune() == [oldest]
    assert [a.id for a in store.entries()] == [older, newest]


def test_prune_never_removes_an_artifact_being_written(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=10, max_age=60)
    writer = store.create("python")
    writer.write(b"x" * 100)
    writer._file.flush()
    stamp = time.time() - 3600
    os.utime(writer.os_path, (stamp, stamp))
    other = make_artifact(store, b"y" * 5)
    assert store.prune() == [other]
    assert os.path.exists(writer.os_path)
    writer.close()
    assert store.prune() == [writer.id]


def test_zero_limits_keep_everything(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=0, max_age=0)
    make_artifact(store, b"x" * 1000, age=10**8)
    assert store.prune() == []


def test_prune_leaves_files_that_are_not_artifacts(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=1, max_age=1)
    path = os.path.join(store.directory, "notes.log")
    with open(path, "w") as f:
        f.write("mine" * 100)
    os.utime(path, (0, 0))
    assert store.prune() == []
    assert os.path.exists(path)


def test_prune_of_a_missing_folder_removes_nothing(store):
    assert store.prune() == []


# Reading


TEXT = b"line 1\nline 2\nline 3\nline 4\nlast line without newline"


@pytest.mark.parametrize(
    ("offset", "limit", "expected"),
    [
        (1, None, TEXT),
        (1, 1, b"line 1\n"),
        (2, 2, b"line 2\nline 3\n"),
        (4, 10, b"line 4\nlast line without newline"),
        (5, 1, b"last line without newline"),
        (6, 1, b""),
        (100, None, b""),
    ],
)
@pytest.mark.parametrize("block", [1, 3, 7, 64 * 1024])
def test_line_ranges_are_exact_whatever_the_block_size(offset, limit, expected, block):
    blocks = list(iter_line_range(io.BytesIO(TEXT), offset, limit, block=block))
    assert b"".join(blocks) == expected


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(0, None, TEXT), (0, 4, b"line"), (7, 13, b"line 2"), (50, 60, TEXT[50:]), (100, None, b"")],
)
@pytest.mark.parametrize("block", [1, 5, 64 * 1024])
def test_byte_ranges_are_exact_whatever_the_block_size(start, end, expected, block):
    assert b"".join(iter_byte_range(io.BytesIO(TEXT), start, end, block=block)) == expected


def test_a_huge_line_is_read_one_block_at_a_time():
    data = b"x" * 100_000 + b"\nsecond\n"
    blocks = list(iter_line_range(io.BytesIO(data), 1, 1, block=4096))
    assert b"".join(blocks) == b"x" * 100_000 + b"\n"
    assert max(len(b) for b in blocks) <= 4096


def test_size_and_open_read_an_artifact(store):
    artifact_id = make_artifact(store, TEXT)
    assert store.size(artifact_id) == len(TEXT)
    with store.open(artifact_id) as f:
        assert f.read() == TEXT


def test_open_of_an_unknown_artifact_is_not_found(store):
    with pytest.raises(NotFoundError):
        store.open("20240101T000000-0123456789ab")


def test_finishing_an_artifact_applies_retention_at_once(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=150, prune_interval=0)
    first = make_artifact(store, b"a" * 100, age=30)
    second = make_artifact(store, b"b" * 100)
    # No prune() call: closing the second artifact took the folder past max_bytes.
    assert [a.id for a in store.entries()] == [second]
    assert first not in {a.id for a in store.entries()}


def test_retention_on_finish_is_rate_limited(tmp_path):
    store = ArtifactStore(str(tmp_path), max_bytes=150, prune_interval=3600)
    make_artifact(store, b"a" * 100, age=30)  # the first finish runs a pass (nothing to do)
    make_artifact(store, b"b" * 100)  # within the interval: no second pass
    assert len(store.entries()) == 2


def test_a_writer_gathers_output_into_few_large_writes(tmp_path):
    store = ArtifactStore(str(tmp_path))
    writer = store.create("python")
    chunk = b"x" * 65_536
    for _ in range(4):  # 256 KiB: still gathered (the default 8 KiB buffer would have written)
        writer.write(chunk)
    assert os.path.getsize(writer.os_path) == 0
    writer.write(chunk)  # past 256 KiB: the gathered bytes go out
    assert os.path.getsize(writer.os_path) >= 4 * len(chunk)
    writer.write(b"tail")
    writer.close()
    with open(writer.os_path, "rb") as f:
        assert f.read() == chunk * 5 + b"tail"

"""Artifacts where the contents root is not a local directory: through the contents manager.

``ContentsArtifactStore`` on the in-memory contents manager (``tests/support/memory_contents.py``),
synchronous and asynchronous: files, ids, reading while staged or uploading, the upload bound,
retention, failures, leftovers; then a real server with that manager, where the python tool's
spilled output and images go through it and nothing reaches the disk. The same runs against
s3contents on a local S3 in ``tests/api/server/test_s3_contents.py``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_xcsh.artifacts.store import ARTIFACT_ID_PATTERN, ContentsArtifactStore
from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.notebook.storage.atomic import TEMPORARY_NAME, TemporaryFiles
from jupyter_xcsh.outputs.sizes import format_size
from tests.support.images import KERNEL_HELPERS
from tests.support.mcp_client import tool_via_mcp
from tests.support.memory_contents import MemoryContentsManager
from tests.support.python_tool import run

pytestmark = pytest.mark.timeout(120)


class GatedContentsManager(MemoryContentsManager):
    """Saves files only once ``gate`` is set, or fails them with ``failure`` (faults injected)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = threading.Event()
        self.gate.set()
        self.failure: Exception | None = None

    def save(self, model: dict[str, Any], path: str = "") -> Any:
        """Wait for the gate, then fail or save."""
        if model.get("type") == "file":
            assert self.gate.wait(30)
            if self.failure is not None:
                raise self.failure
        return super().save(model, path)


class AsyncMemoryContentsManager:
    """The in-memory manager behind the asynchronous methods the server's own managers have."""

    def __init__(self) -> None:
        self.inner = MemoryContentsManager()
        self.files = self.inner.files
        self.threads: set[str] = set()

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        self.threads.add(threading.current_thread().name)
        return getattr(self.inner, method)(*args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        """``get``, awaited."""
        return await self._call("get", *args, **kwargs)

    async def save(self, *args: Any, **kwargs: Any) -> Any:
        """``save``, awaited."""
        return await self._call("save", *args, **kwargs)

    async def file_exists(self, path: str = "") -> bool:
        """``file_exists``, awaited."""
        return bool(await self._call("file_exists", path))

    async def dir_exists(self, path: str) -> bool:
        """``dir_exists``, awaited."""
        return bool(await self._call("dir_exists", path))

    async def delete_file(self, path: str) -> None:
        """``delete_file``, awaited."""
        await self._call("delete_file", path)


@pytest.fixture
def staging(tmp_path):
    folder = tmp_path / "staging"
    folder.mkdir()
    return folder


@pytest.fixture
def cm():
    return GatedContentsManager()


@pytest.fixture
def store(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging))
    yield store
    store.close(30)


def uploaded(store: ContentsArtifactStore) -> None:
    """Wait for every upload handed over so far."""
    assert store.close(30)


def read(store: ContentsArtifactStore, artifact_id: str) -> tuple[str, bytes]:
    with store.open(artifact_id) as file:
        return file.name, file.read()


def test_an_artifact_is_saved_through_the_contents_manager_in_its_folder(cm, store, staging):
    writer = store.create("python")
    writer.write(b"hello\n")
    writer.write("é\n".encode())
    writer.close()
    uploaded(store)

    assert ARTIFACT_ID_PATTERN.match(writer.id)
    assert writer.api_path == f"xcsh-artifacts/{writer.id}.python.log"
    assert cm.files[writer.api_path] == "hello\né\n".encode()
    assert "xcsh-artifacts" in cm.folders  # made through the manager, as the lab would see it
    assert list(staging.iterdir()) == []  # the staged file is gone
    assert store.directory == ""  # no local folder, for kernels (ARTIFACTS) either
    assert read(store, writer.id) == (f"{writer.id}.python.log", "hello\né\n".encode())
    assert store.size(writer.id) == len("hello\né\n".encode())
    assert store.resolve(writer.id) == writer.api_path
    assert [a.id for a in store.entries()] == [writer.id]


def test_a_nested_folder_is_made_level_by_level(cm, staging):
    store = ContentsArtifactStore(cm, folder="agent/outputs", staging_dir=str(staging))
    image = store.save("python", "png", b"\x89PNG fake")
    uploaded(store)
    assert {"agent", "agent/outputs"} <= cm.folders
    assert cm.files[f"agent/outputs/{image.id}.python.png"] == b"\x89PNG fake"
    assert read(store, image.id) == (f"{image.id}.python.png", b"\x89PNG fake")


def test_an_artifact_is_read_from_its_staged_file_until_its_upload_is_done(cm, store, staging):
    cm.gate.clear()
    writer = store.create("run")
    writer.write(b"first\n")
    writer.flush()
    # Still being written: what was flushed is there, as on disk.
    assert read(store, writer.id) == (f"{writer.id}.run.log", b"first\n")
    assert store.is_writing(writer.id)
    writer.write(b"second\n")
    writer.close()  # returns at once: the upload waits for the gate

    assert writer.api_path not in cm.files
    assert read(store, writer.id) == (f"{writer.id}.run.log", b"first\nsecond\n")
    assert store.size(writer.id) == 13
    assert store.is_writing(writer.id)  # retention leaves it alone
    assert len(list(staging.iterdir())) == 1

    cm.gate.set()
    uploaded(store)
    assert cm.files[writer.api_path] == b"first\nsecond\n"
    assert read(store, writer.id) == (f"{writer.id}.run.log", b"first\nsecond\n")
    assert not store.is_writing(writer.id)
    assert list(staging.iterdir()) == []


def test_output_past_the_bound_is_cut_at_a_character_with_a_notice(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging), upload_max_bytes=1000)
    writer = store.create("python")
    for _ in range(10):
        writer.write(("é" * 150 + "\n").encode())  # 301 bytes a line
    writer.write(b"x" * 5000)  # nothing more after the cut, not even what would fit
    writer.close()
    uploaded(store)

    text = cm.files[writer.api_path].decode("utf-8")  # no character cut in two
    head, notice = text.rsplit("\n[", 1)
    # Three lines and 48 characters of the fourth: byte 1000 is the middle of one.
    assert head == ("é" * 150 + "\n") * 3 + "é" * 48
    assert notice == (
        f"Artifact cut at {format_size(999)} of {format_size(8010)}: artifacts are saved whole "
        "through the server's contents manager, at most "
        "XcshSettings.artifacts_upload_max_bytes each]\n"
    )
    assert list(staging.iterdir()) == []


def test_anything_but_text_past_the_bound_is_not_kept(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging), upload_max_bytes=1024)
    with pytest.raises(OSError, match=r"past the 1\.0KB"):
        store.save("python", "png", b"\x89PNG" + b"\0" * 2000)
    writer = store.create("python", "png")
    writer.write(b"\0" * 2000)
    with pytest.raises(OSError, match=r"past the 1\.0KB"):
        writer.close()
    uploaded(store)
    assert not [p for p in cm.files if p.startswith("xcsh-artifacts/")]
    assert list(staging.iterdir()) == []
    with pytest.raises(NotFoundError):
        store.open(writer.id)


def test_an_upload_that_fails_is_logged_and_leaves_nothing(cm, store, staging, caplog):
    cm.failure = OSError("the bucket is gone")
    writer = store.save("python", "log", b"lost\n")
    uploaded(store)
    assert "Could not save artifact" in caplog.text and "the bucket is gone" in caplog.text
    assert writer.api_path not in cm.files
    assert list(staging.iterdir()) == []
    with pytest.raises(NotFoundError):
        store.open(writer.id)
    # The next one goes through again.
    cm.failure = None
    again = store.save("python", "log", b"kept\n")
    uploaded(store)
    assert cm.files[again.api_path] == b"kept\n"


def test_a_file_past_the_bound_placed_in_the_folder_is_never_loaded(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging), upload_max_bytes=1024)
    artifact_id = "20240101T000000-0123456789ab"
    cm.save({"type": "directory"}, "xcsh-artifacts")
    cm.save(
        {"type": "file", "format": "text", "content": "x" * 200_000},
        store.folder + "/" + f"{artifact_id}.python.log",
    )
    assert store.size(artifact_id) == 200_000
    with pytest.raises(InvalidRequestError, match=r"past the 1\.0KB read through"):
        store.open(artifact_id)


def test_retention_by_age_and_size_deletes_through_the_manager(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging), max_bytes=250, max_age=3600)
    old = store.save("python", "log", b"o" * 100).id
    middle = store.save("python", "log", b"m" * 100).id
    newest = store.save("python", "log", b"n" * 100).id
    uploaded(store)
    now = time.time()
    for artifact_id, age in ((old, 7200), (middle, 60), (newest, 30)):
        path = f"xcsh-artifacts/{artifact_id}.python.log"
        cm.modified[path] = datetime.fromtimestamp(now - age, UTC)
    cm.gate.clear()
    writing = store.save("python", "log", b"w" * 100).id  # waiting for its upload

    assert store.prune(now) == [old]  # too old; the two left fit in 250 bytes
    assert [a.id for a in store.entries()] == [middle, newest]
    store.max_bytes = 150
    assert store.prune(now) == [middle]
    assert store.is_writing(writing)
    cm.gate.set()
    uploaded(store)
    assert sorted(a.id for a in store.entries()) == sorted([newest, writing])


def test_retention_runs_on_the_upload_thread_after_an_upload(cm, staging):
    store = ContentsArtifactStore(cm, staging_dir=str(staging), max_bytes=150, prune_interval=0)
    first = store.save("python", "log", b"1" * 100).id
    uploaded(store)
    second = store.save("python", "log", b"2" * 100).id
    uploaded(store)
    assert [a.id for a in store.entries()] == [second]
    assert first not in "".join(cm.files)


def test_staged_files_are_named_and_noted_as_the_tools_temporary_files(cm, staging, tmp_path):
    journal = tmp_path / "runtime" / "xcsh-temporary-folders.txt"
    store = ContentsArtifactStore(
        cm, staging_dir=str(staging), temporaries=TemporaryFiles(str(journal))
    )
    writer = store.create("python")
    (staged,) = staging.iterdir()
    # A server that crashes here leaves it; the next start removes it (TemporaryFiles).
    assert TEMPORARY_NAME.fullmatch(staged.name)
    assert staged.name.startswith(TemporaryFiles.prefix())
    assert journal.read_text() == f"{staging}\n"
    writer.abort()
    assert list(staging.iterdir()) == []
    uploaded(store)
    assert not [p for p in cm.files if p.startswith("xcsh-artifacts/")]


async def test_an_asynchronous_contents_manager_is_awaited_on_the_servers_loop(staging):
    cm = AsyncMemoryContentsManager()
    store = ContentsArtifactStore(
        cm, staging_dir=str(staging), loop=asyncio.get_running_loop(), max_bytes=150
    )
    first = store.save("python", "log", b"a" * 100)  # on the loop: staged, nothing awaited
    assert await asyncio.to_thread(store.close, 30)
    assert cm.files[first.api_path] == b"a" * 100
    second = store.save("python", "png", b"b" * 100)
    assert await asyncio.to_thread(store.close, 30)

    name, data = await asyncio.to_thread(read, store, second.id)
    assert (name, data) == (f"{second.id}.python.png", b"b" * 100)
    assert await asyncio.to_thread(store.prune) == [first.id]
    assert cm.threads == {threading.current_thread().name}  # every call ran on the loop
    # Waiting for the loop on the loop itself would never end: refused instead.
    with pytest.raises(RuntimeError, match="off the event loop"):
        store.entries()


# -- a server whose contents manager keeps nothing on disk ------------------------------------


@pytest.mark.filterwarnings("ignore:The synchronous ContentsManager:DeprecationWarning")
class TestOnAServer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = (
            "tests.support.memory_contents.MemoryContentsManager"
        )
        return config

    @pytest.mark.slow
    async def test_spilled_output_and_images_go_through_the_manager_and_read_back(
        self, jp_fetch, jp_serverapp, jp_root_dir
    ):
        cm = jp_serverapp.contents_manager
        store = jp_serverapp.web_app.settings["xcsh"].artifact_store
        assert isinstance(store, ContentsArtifactStore)
        before = sorted(p.name for p in jp_root_dir.iterdir())

        result = await run(
            jp_fetch,
            KERNEL_HELPERS,
            "import os\nprint(repr(os.environ['ARTIFACTS']))\n"
            "for i in range(20000):\n    print('line', i)\n"
            "show(png(32, 16))",
            session="memory",
        )
        text_id = result["artifactId"]
        (image,) = result["images"]
        assert result["truncated"] is True
        assert result["artifactPath"] == f"xcsh-artifacts/{text_id}.python.log"

        # Read back at once, whether the upload has finished or not: the same bytes.
        whole = await jp_fetch("api", "xcsh", "artifacts", text_id)
        lines = whole.body.decode().splitlines()
        assert lines[:2] == ["''", "line 0"] and lines[-2:] == ["line 19999", "<image>"]
        assert await asyncio.to_thread(store.close, 30)
        assert cm.files[result["artifactPath"]] == whole.body
        page = await jp_fetch(
            "api", "xcsh", "artifacts", text_id, params={"offset": "3", "limit": "2"}
        )
        assert page.body == b"line 1\nline 2\n"
        tail = await jp_fetch("api", "xcsh", "artifacts", text_id, headers={"Range": "bytes=-8"})
        assert tail.code == 206 and tail.body == b"<image>\n"
        png = cm.files[f"xcsh-artifacts/{image['artifactId']}.python.png"]
        assert base64.b64decode(image["data"]) == png
        fetched = await jp_fetch("api", "xcsh", "artifacts", image["artifactId"])
        assert fetched.headers["Content-Type"] == "image/png" and fetched.body == png

        artifact_tool = tool_via_mcp(jp_fetch, "artifact")
        status, read_back = await artifact_tool({"id": f"artifact://{text_id}", "limit": 1})
        assert status == 200 and read_back["text"] == "''\n"

        # Nothing on the disk: not the artifacts, not their staged copies.
        assert sorted(p.name for p in jp_root_dir.iterdir()) == before
        staged = [n for n in os.listdir(store.staging_dir) if TEMPORARY_NAME.fullmatch(n)]
        assert not [n for n in staged if n.startswith(TemporaryFiles.prefix())]

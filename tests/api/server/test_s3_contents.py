"""Every tool with contents off the local disk: s3contents on a local S3 (moto's server).

The server's contents manager is s3contents' ``S3ContentsManager``, its bucket on a moto
server on 127.0.0.1 (``tests/support/s3.py``). Notebooks (read, edit, insert, batch, find), runs in
place (outputs written back), the files tool's actions, and the python tool's artifacts
(spilled output, images: saved through the contents manager, ``ContentsArtifactStore``) and
the artifact tool reading them back, each checked in the bucket itself. After each test nothing
is on the local disk where a copy could appear: the server's root, the contents manager's own
root (s3contents keeps checkpoints there) and the staged files' folder.

Marked ``s3``: run in ``.venv-s3`` (``scripts/check.sh``: s3contents and ``moto[server]``) with
``-m s3``; deselected elsewhere (``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.artifacts.store import ContentsArtifactStore
from jupyter_xcsh.notebook.storage.atomic import TemporaryFiles
from tests.support.images import KERNEL_HELPERS
from tests.support.inplace import run_ok
from tests.support.mcp_client import tool_via_mcp
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.python_tool import run
from tests.support.s3 import (
    CREDENTIALS,
    bucket_keys,
    local_files,
    new_bucket,
    s3_client,
    s3_endpoint,
)

__all__ = ["s3_endpoint"]  # the session's S3 server, a fixture used below

pytestmark = [
    pytest.mark.s3,
    pytest.mark.timeout(180),
    # s3contents' manager is synchronous, and calls the server's deprecated pre-save hook.
    pytest.mark.filterwarnings("ignore:The synchronous ContentsManager:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:run_pre_save_hook is deprecated:DeprecationWarning"),
]

MiB = 1024 * 1024


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    return new_bucket(s3_endpoint)


@pytest.fixture
def cm_root(tmp_path: Path) -> Path:
    """s3contents' own ``root_dir``: where its checkpoints (local files) would go."""
    return tmp_path / "s3contents-root"


@pytest.fixture
def jp_server_config(jp_server_config, s3_endpoint, bucket, cm_root):
    config = Config(jp_server_config)
    config.ServerApp.contents_manager_class = "s3contents.S3ContentsManager"
    s3 = config.S3ContentsManager
    s3.bucket = bucket
    s3.endpoint_url = s3_endpoint
    s3.access_key_id = CREDENTIALS["access_key_id"]
    s3.secret_access_key = CREDENTIALS["secret_access_key"]
    s3.root_dir = str(cm_root)
    return config


@pytest.fixture
def s3_object(s3_endpoint: str, bucket: str):
    """The bytes of a key of the bucket, read behind the server's back."""

    def read(key: str) -> bytes:
        return s3_client(s3_endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()  # type: ignore[no-any-return]

    return read


@pytest.fixture
def store(jp_serverapp) -> ContentsArtifactStore:
    store = jp_serverapp.web_app.settings["xcsh"].artifact_store
    assert isinstance(store, ContentsArtifactStore)
    return store


@pytest.fixture
def nothing_local(jp_root_dir, cm_root, store):
    """After the test: no file in the server's root, s3contents' root, or staged by the store."""
    yield
    assert store.close(60)  # every upload done
    assert local_files(jp_root_dir, *([cm_root] if cm_root.exists() else [])) == []
    prefix = TemporaryFiles.prefix()
    assert [n for n in os.listdir(store.staging_dir) if n.startswith(prefix)] == []


async def call(jp_fetch, tool: str, body: dict[str, Any]) -> tuple[int, Any]:
    try:
        response = await jp_fetch("api", "xcsh", tool, method="POST", body=json.dumps(body))
    except HTTPClientError as e:
        assert e.response is not None
        return e.code, json.loads(e.response.body)
    return response.code, json.loads(response.body)


async def put_notebook(jp_fetch, path: str, nb: Any) -> None:
    """Create a notebook through the server (so, in the bucket)."""
    body = {"type": "notebook", "content": json.loads(jupyter_text(nb))}
    await jp_fetch("api", "contents", path, method="PUT", body=json.dumps(body))


async def test_the_notebook_tool_reads_changes_and_finds_in_a_notebook_in_s3(
    jp_fetch, notebook_tool, events, s3_object, store, nothing_local
):
    nb = sample_notebook()
    # A cell whose JSON is past what an event carries inline: its edit keeps the cell as it
    # was in an artifact, through the contents manager too.
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="o" * 100_000)]
    await jp_fetch("api", "contents", "work", method="PUT", body=json.dumps({"type": "directory"}))
    await put_notebook(jp_fetch, "work/nb.ipynb", nb)
    path = {"notebook_path": "work/nb.ipynb"}

    status, read = await notebook_tool({"action": "read", **path})
    assert status == 200 and "# Title" in read["text"]
    status, _ = await notebook_tool(
        {"action": "insert", **path, "cell_index": 0, "content": "print('from s3')"}
    )
    assert status == 200
    status, edited = await notebook_tool(
        {"action": "edit", **path, "cell_index": 2, "content": "y = 2\nprint(y)"}
    )
    assert status == 200
    status, _ = await notebook_tool(
        {
            "changes": [
                {"action": "edit", "cell_index": 1, "content": "# Title, renamed"},
                {"action": "insert", "cell_index": 5, "content": "end", "cell_type": "raw"},
            ],
            **path,
        }
    )
    assert status == 200
    status, found = await notebook_tool({"action": "find", **path, "pattern": "print"})
    assert status == 200
    assert [m["index"] for m in found["details"]["matches"]] == [0, 2]

    saved = nbformat.reads(s3_object("work/nb.ipynb").decode(), as_version=4)
    nbformat.validate(saved)
    assert [c.source for c in saved.cells] == [
        "print('from s3')",
        "# Title, renamed",
        "y = 2\nprint(y)",
        "x",
        "raw text",
        "end",
    ]
    assert saved.cells[2].outputs[0]["text"] == "o" * 100_000  # an edit keeps outputs
    # The lab's revert of the edit reads the cell as it was, kept in the bucket.
    (event,) = [e for e in events if e["callId"] == edited["callId"]]
    assert store.close(60)
    key = f".xcsh-artifacts/{event['previousCellArtifactId']}.notebook.log"
    previous = json.loads(s3_object(key))
    assert "".join(previous["source"]) == "x = 1\nprint(x)"
    assert "".join(previous["outputs"][0]["text"]) == "o" * 100_000
    fetched = await jp_fetch("api", "xcsh", "artifacts", event["previousCellArtifactId"])
    assert json.loads(fetched.body) == previous


async def test_a_run_in_place_writes_its_outputs_back_to_s3(
    jp_fetch, s3_object, s3_endpoint, bucket, store, nothing_local
):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 40\nprint(x + 2)", id="small"),
            nbformat.v4.new_code_cell(
                "for i in range(30000):\n    print(f'{i:06d}', 'y' * 20)", id="big"
            ),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    await put_notebook(jp_fetch, "run.ipynb", nb)

    small = await run_ok(jp_fetch, notebook_path="run.ipynb", cell_index=0)
    big = await run_ok(jp_fetch, notebook_path="run.ipynb", cell_id="big")

    assert small["text"] == "42" and small["cells"][0]["outputsWritten"] is True
    assert big["truncated"] is True and big["cells"][0]["outputsWritten"] is True
    saved = nbformat.reads(s3_object("run.ipynb").decode(), as_version=4)
    assert saved.cells[0].outputs[0]["text"] == "42\n"
    assert [c.execution_count for c in saved.cells] == [1, 2]
    notice, tail = saved.cells[1].outputs
    assert f"artifact://{big['artifactId']}" in notice["data"]["text/plain"]
    assert tail["text"].endswith(f"029999 {'y' * 20}\n")
    # The whole output, in the bucket.
    assert store.close(60)
    assert big["artifactPath"] == f".xcsh-artifacts/{big['artifactId']}.run.log"
    whole = s3_object(big["artifactPath"]).decode()
    assert whole.count("\n") == 30000 and whole.startswith(f"000000 {'y' * 20}\n")


async def test_the_files_tool_works_on_s3(jp_fetch, s3_endpoint, bucket, s3_object, nothing_local):
    files = tool_via_mcp(jp_fetch, "files")  # MCP, as agents call it; REST is the same path

    status, result = await files({"action": "write", "path": "pkg/mod.py", "content": "a = 1\n"})
    assert status == 200, result
    assert s3_object("pkg/mod.py") == b"a = 1\n"
    status, result = await files(
        {"action": "write", "path": "pkg/mod.py", "old_content": "a = 1", "content": "b = 2"}
    )
    assert status == 200 and s3_object("pkg/mod.py") == b"b = 2\n"
    status, listed = await files({"action": "list", "path": "pkg"})
    assert status == 200 and [e["name"] for e in listed["details"]["entries"]] == ["mod.py"]
    status, read = await files({"action": "read", "path": "pkg/mod.py"})
    assert status == 200 and read["details"]["content"] == "b = 2\n"
    status, found = await files({"action": "search", "pattern": r"b = \d", "regex": True})
    assert status == 200
    assert [(m["path"], m["line"]) for m in found["details"]["matches"]] == [("pkg/mod.py", 1)]
    status, _ = await files({"action": "rename", "path": "pkg/mod.py", "new_path": "lib/mod.py"})
    assert status == 200
    assert "lib/mod.py" in bucket_keys(s3_endpoint, bucket)
    assert "pkg/mod.py" not in bucket_keys(s3_endpoint, bucket)
    status, _ = await files(
        {"action": "delete", "path": "lib/mod.py", "expected_hash": read["details"]["hash"]}
    )
    assert status == 200
    assert not [k for k in bucket_keys(s3_endpoint, bucket) if k.endswith("mod.py")]


async def test_the_files_tool_keeps_out_of_the_artifacts_folder_on_s3(
    jp_fetch, bucket, s3_endpoint, store, nothing_local
):
    # s3contents has no hidden paths: the folder is refused as the artifacts', not as hidden.
    result = await run(jp_fetch, "for i in range(20000):\n    print('line', i)", session="s3")
    assert store.close(60)
    name = f".xcsh-artifacts/{result['artifactId']}.python.log"
    assert name in bucket_keys(s3_endpoint, bucket)
    files = tool_via_mcp(jp_fetch, "files")

    _, listed = await files({"action": "list"})
    read = await files({"action": "read", "path": name})
    write = await files({"action": "write", "path": ".xcsh-artifacts/x.txt", "content": "x"})
    _, found = await files({"action": "search", "pattern": "line 19999"})

    assert ".xcsh-artifacts" not in [e["name"] for e in listed["details"]["entries"]]
    assert (read[0], write[0]) == (403, 403)
    assert found["details"]["matches"] == []
    assert ".xcsh-artifacts/x.txt" not in bucket_keys(s3_endpoint, bucket)


async def test_python_artifacts_are_saved_in_s3_and_read_back(
    jp_fetch, s3_endpoint, bucket, s3_object, store, nothing_local
):
    result = await run(
        jp_fetch,
        KERNEL_HELPERS,
        "import os\nprint(repr(os.environ['ARTIFACTS']))\n"
        "for i in range(20000):\n    print('line', i)\n"
        "show(png(32, 16))",
        session="s3",
    )
    text_id, (image,) = result["artifactId"], result["images"]
    assert result["truncated"] is True

    # Read back at once (from the staged file while the upload runs, else from the bucket).
    whole = (await jp_fetch("api", "xcsh", "artifacts", text_id)).body
    assert whole.decode().splitlines()[:2] == ["''", "line 0"]  # no local folder for kernels
    assert store.close(60)
    assert s3_object(f".xcsh-artifacts/{text_id}.python.log") == whole
    png = s3_object(f".xcsh-artifacts/{image['artifactId']}.python.png")
    assert base64.b64decode(image["data"]) == png

    # From the bucket now: the endpoint (whole, lines, bytes) and the artifact tool.
    assert (await jp_fetch("api", "xcsh", "artifacts", text_id)).body == whole
    page = await jp_fetch("api", "xcsh", "artifacts", text_id, params={"offset": 3, "limit": 2})
    assert page.body == b"line 1\nline 2\n"
    tail = await jp_fetch("api", "xcsh", "artifacts", text_id, headers={"Range": "bytes=-8"})
    assert tail.code == 206 and tail.body == b"<image>\n"
    fetched = await jp_fetch("api", "xcsh", "artifacts", image["artifactId"])
    assert fetched.headers["Content-Type"] == "image/png" and fetched.body == png
    status, paged = await tool_via_mcp(jp_fetch, "artifact")(
        {"id": f"artifact://{text_id}", "offset": 20001, "limit": 5}
    )
    assert status == 200 and paged["text"] == "line 19999\n<image>\n"
    status, described = await tool_via_mcp(jp_fetch, "artifact")({"id": image["artifactId"]})
    assert status == 200 and described["details"]["width"] == 32

    # Retention deletes through the contents manager too.
    store.max_bytes = 1
    removed = await asyncio.to_thread(store.prune)
    assert sorted(removed) == sorted([text_id, image["artifactId"]])
    assert [k for k in bucket_keys(s3_endpoint, bucket) if k.startswith(".xcsh-artifacts/2")] == []
    with pytest.raises(HTTPClientError) as gone:
        await jp_fetch("api", "xcsh", "artifacts", text_id)
    assert gone.value.code == 404


class TestTheUploadBound:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.artifacts_upload_max_bytes = MiB
        return config

    async def test_a_long_stream_stays_bounded_and_its_artifact_is_cut_at_the_bound(
        self, jp_fetch, s3_object, store, nothing_local
    ):
        await run(jp_fetch, "pass", session="bound")  # the kernel started before the peak
        with open("/proc/self/clear_refs", "w") as f:  # the server runs in this process
            f.write("5")
        before = _status_kib("VmRSS")

        # 64 MiB of 1 KiB lines.
        result = await run(
            jp_fetch,
            "import sys\nfor i in range(64 * 1024):\n"
            "    sys.stdout.write(f'{i:09d}' + 'z' * 1014 + '\\n')",
            session="bound",
            timeout=120,
        )

        assert store.close(60)
        peak = _status_kib("VmHWM")
        assert result["totalBytes"] == 64 * MiB
        kept = s3_object(f".xcsh-artifacts/{result['artifactId']}.python.log").decode()
        head, notice = kept.rsplit("\n[", 1)
        assert len(head.encode()) == MiB and head.startswith(f"{0:09d}")
        assert notice.startswith("Artifact cut at 1.0MB of 64.0MB:")
        # The stream was never held: the peak grew by the messages in flight and the upload,
        # not by the 64 MiB printed.
        assert peak - before < 24 * 1024, (before, peak)

        # An image past the bound is not an artifact: the result has it from memory.
        result = await run(
            jp_fetch, KERNEL_HELPERS, "show(png(1200, 1200, noise=True))", session="bound"
        )
        (image,) = result["images"]
        assert image["artifactId"] is None and image["bytes"] > MiB


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

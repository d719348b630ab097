"""Artifacts out of the person's way (issue 41): the default folder ``.xcsh-artifacts`` is hidden
from the file browser and the contents API, the artifact endpoint (and tool) reads it, the files
tool keeps to the hidden-file policy, and artifacts of the earlier folder ``xcsh-artifacts`` are
moved in at start-up with their ids (docs/developers/contract.md §7.3)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

from jupyter_xcsh.artifacts.store import DEFAULT_FOLDER, LEGACY_FOLDER

OLD_ID = "20250101T000000-0123456789ab"


async def fetch(jp_fetch: Any, *parts: str, **kwargs: Any) -> tuple[int, bytes]:
    try:
        response = await jp_fetch(*parts, **kwargs)
    except HTTPClientError as e:
        assert e.response is not None
        return e.code, e.response.body
    return response.code, response.body


@pytest.fixture
def artifact_id(jp_serverapp) -> str:
    store = jp_serverapp.web_app.settings["xcsh"].artifact_store
    with store.create("python") as writer:
        writer.write(b"the whole output\n")
    return writer.id


async def test_the_artifacts_folder_is_hidden_but_read_by_the_artifact_endpoint(
    jp_fetch, jp_root_dir, artifact_id
):
    assert DEFAULT_FOLDER == ".xcsh-artifacts"
    assert (jp_root_dir / DEFAULT_FOLDER / f"{artifact_id}.python.log").is_file()

    # The file browser's listing of the root: no artifacts folder.
    status, body = await fetch(jp_fetch, "api", "contents", "")
    assert status == 200
    assert [e["name"] for e in json.loads(body)["content"] if "artifacts" in e["name"]] == []
    # Nor through the contents API by path, under the server's hidden-file policy.
    status, _ = await fetch(jp_fetch, "api", "contents", DEFAULT_FOLDER)
    assert status == 404

    # The artifact endpoint (what the lab and the artifact tool use) reads it.
    status, body = await fetch(jp_fetch, "api", "xcsh", "artifacts", artifact_id)
    assert (status, body) == (200, b"the whole output\n")


async def test_the_files_tool_keeps_the_hidden_folder_out_of_reach(jp_fetch, artifact_id):
    async def files(body: dict[str, Any]) -> tuple[int, Any]:
        status, text = await fetch(
            jp_fetch, "api", "xcsh", "files", method="POST", body=json.dumps(body)
        )
        return status, json.loads(text)

    _, listed = await files({"action": "list"})
    assert DEFAULT_FOLDER not in [e["name"] for e in listed["details"]["entries"]]
    status, refused = await files(
        {"action": "read", "path": f"{DEFAULT_FOLDER}/{artifact_id}.python.log"}
    )
    # Refused as the artifacts folder, before the hidden-file policy: the same on every
    # contents manager, whether it hides dot-names or not.
    assert status == 403
    assert refused["message"].endswith(
        "read an artifact with the artifact tool (its id, artifact://<id>)"
    )


async def files_call(jp_fetch: Any, body: dict[str, Any]) -> tuple[int, Any]:
    status, text = await fetch(
        jp_fetch, "api", "xcsh", "files", method="POST", body=json.dumps(body)
    )
    return status, json.loads(text)


class TestAServerShowingHiddenFiles:
    """allow_hidden: the hidden-file policy no longer keeps the folder away, as on a manager
    without hidden paths (s3contents): the files tool refuses it all the same."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ContentsManager.allow_hidden = True
        return config

    async def test_the_files_tool_neither_shows_reads_changes_nor_searches_it(
        self, jp_fetch, jp_root_dir, artifact_id
    ):
        name = f"{DEFAULT_FOLDER}/{artifact_id}.python.log"
        (jp_root_dir / "notes.txt").write_text("the whole output, noted\n")

        _, listed = await files_call(jp_fetch, {"action": "list"})
        _, found = await files_call(jp_fetch, {"action": "search", "pattern": "the whole output"})
        read = await files_call(jp_fetch, {"action": "read", "path": name})
        listing = await files_call(jp_fetch, {"action": "list", "path": DEFAULT_FOLDER})
        write = await files_call(
            jp_fetch, {"action": "write", "path": f"{DEFAULT_FOLDER}/x.txt", "content": "x"}
        )
        rename = await files_call(
            jp_fetch, {"action": "rename", "path": "notes.txt", "new_path": name}
        )
        delete = await files_call(jp_fetch, {"action": "delete", "path": DEFAULT_FOLDER})

        assert [e["name"] for e in listed["details"]["entries"]] == ["notes.txt"]
        assert [m["path"] for m in found["details"]["matches"]] == ["notes.txt"]
        assert [status for status, _ in (read, listing, write, rename, delete)] == [403] * 5
        assert (jp_root_dir / name).read_bytes() == b"the whole output\n"
        assert not (jp_root_dir / DEFAULT_FOLDER / "x.txt").exists()
        # The contents API itself shows it (the server's policy); the artifact tool reads it.
        status, _ = await fetch(jp_fetch, "api", "contents", DEFAULT_FOLDER)
        assert status == 200


async def test_a_manager_without_hidden_paths_keeps_it_out_of_the_files_tool(tmp_path):
    from jupyter_xcsh.errors import RefusedError
    from jupyter_xcsh.tools.files.request import parse_request
    from jupyter_xcsh.tools.files.workspace import Workspace
    from tests.support.memory_contents import MemoryContentsManager

    # A synchronous manager that shows dot-names, as s3contents does.
    cm = MemoryContentsManager(allow_hidden=True)
    cm.save({"type": "directory"}, DEFAULT_FOLDER)
    cm.save({"type": "file", "format": "text", "content": "out\n"}, f"{DEFAULT_FOLDER}/a.log")
    workspace = Workspace(cm, artifacts=DEFAULT_FOLDER)

    listed = await workspace.list(parse_request({"action": "list"}))
    assert listed["details"]["entries"] == []
    for path in (DEFAULT_FOLDER, f"{DEFAULT_FOLDER}/a.log", f"/{DEFAULT_FOLDER}/b/../a.log"):
        with pytest.raises(RefusedError, match="artifacts folder"):
            await workspace.resolve(path)
    assert (
        await workspace.resolve(f"{DEFAULT_FOLDER}-notes/a.log") == f"{DEFAULT_FOLDER}-notes/a.log"
    )


class TestTheEarlierFolder:
    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir):
        # Artifacts the earlier default left at the root, and a file of the person's there.
        legacy = jp_root_dir / LEGACY_FOLDER
        legacy.mkdir()
        (legacy / f"{OLD_ID}.python.log").write_bytes(b"from before\n")
        return Config(jp_server_config)

    async def test_its_artifacts_move_into_the_hidden_folder_with_their_ids(
        self, jp_fetch, jp_root_dir
    ):
        status, body = await fetch(jp_fetch, "api", "xcsh", "artifacts", OLD_ID)
        assert (status, body) == (200, b"from before\n")
        assert (jp_root_dir / DEFAULT_FOLDER / f"{OLD_ID}.python.log").is_file()
        # Emptied, it is gone from the root.
        assert not (jp_root_dir / LEGACY_FOLDER).exists()


class TestTheEarlierFolderWithTheOwnersFiles:
    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir):
        legacy = jp_root_dir / LEGACY_FOLDER
        legacy.mkdir()
        (legacy / f"{OLD_ID}.python.log").write_bytes(b"from before\n")
        (legacy / "notes.txt").write_text("mine\n")
        return Config(jp_server_config)

    async def test_only_artifacts_move_and_the_rest_stays(self, jp_fetch, jp_root_dir):
        status, _ = await fetch(jp_fetch, "api", "xcsh", "artifacts", OLD_ID)
        assert status == 200
        assert (jp_root_dir / LEGACY_FOLDER / "notes.txt").read_text() == "mine\n"
        assert not (jp_root_dir / LEGACY_FOLDER / f"{OLD_ID}.python.log").exists()


class TestTheEarlierFolderAsALink:
    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir, tmp_path):
        # A link where the earlier folder was: to a folder outside the root (another
        # server's artifacts, or anything else). Nothing is taken through it.
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (outside / f"{OLD_ID}.python.log").write_bytes(b"not this root's\n")
        (jp_root_dir / LEGACY_FOLDER).symlink_to(outside, target_is_directory=True)
        return Config(jp_server_config)

    async def test_nothing_moves_through_it(self, jp_fetch, jp_root_dir, tmp_path):
        status, _ = await fetch(jp_fetch, "api", "xcsh", "artifacts", OLD_ID)
        assert status == 404
        assert (tmp_path / "elsewhere" / f"{OLD_ID}.python.log").is_file()
        assert (jp_root_dir / LEGACY_FOLDER).is_symlink()


class TestAVisibleFolderByChoice:
    @pytest.fixture
    def jp_server_config(self, jp_server_config, jp_root_dir):
        config = Config(jp_server_config)
        config.XcshSettings.artifacts_dir = LEGACY_FOLDER
        legacy = jp_root_dir / LEGACY_FOLDER
        legacy.mkdir()
        (legacy / f"{OLD_ID}.python.log").write_bytes(b"from before\n")
        return config

    async def test_the_configured_folder_is_used_as_it_is(self, jp_fetch, jp_root_dir):
        status, body = await fetch(jp_fetch, "api", "xcsh", "artifacts", OLD_ID)
        assert (status, body) == (200, b"from before\n")
        assert (jp_root_dir / LEGACY_FOLDER / f"{OLD_ID}.python.log").is_file()
        assert not (jp_root_dir / DEFAULT_FOLDER).exists()
        status, body = await fetch(jp_fetch, "api", "contents", "")
        assert LEGACY_FOLDER in [e["name"] for e in json.loads(body)["content"]]


@pytest.mark.parametrize(
    ("allow_hidden", "folder"), [(False, LEGACY_FOLDER), (True, DEFAULT_FOLDER)]
)
def test_a_contents_manager_that_refuses_hidden_paths_keeps_the_visible_folder(
    tmp_path, allow_hidden, folder
):
    from jupyter_xcsh.artifacts.store import ContentsArtifactStore
    from tests.support.memory_contents import MemoryContentsManager

    # The memory manager applies the hidden-file policy in its methods, as the file managers do.
    cm = MemoryContentsManager(allow_hidden=allow_hidden)
    store = ContentsArtifactStore(cm, staging_dir=str(tmp_path))
    try:
        assert store.folder == folder
        with store.create("python") as writer:
            writer.write(b"kept\n")
        store.close()
        assert cm.files[f"{folder}/{writer.id}.python.log"] == b"kept\n"
    finally:
        store.close()

"""The notebook tool's ``create`` action (docs/developers/contract.md §2.16), over REST and MCP."""

from __future__ import annotations

import nbformat
import pytest
from traitlets.config import Config

from jupyter_xcsh.notebook.model import notebook_revision
from tests.support.mcp_client import TRANSPORTS
from tests.support.notebooks import jupyter_text, sample_notebook
from tests.support.python_tool import eventually

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


def stored(path):
    """The notebook as saved, validated against its nbformat schema."""
    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


async def test_create_writes_an_empty_notebook_naming_the_default_kernel(
    notebook_tool, jp_root_dir, jp_serverapp, events
):
    (jp_root_dir / "work").mkdir()
    default = jp_serverapp.kernel_manager.default_kernel_name
    spec = jp_serverapp.kernel_spec_manager.get_kernel_spec(default)

    status, result = await notebook_tool(
        {"action": "create", "notebook_path": "work/analysis.ipynb"}
    )

    assert status == 200, result
    nb = stored(jp_root_dir / "work" / "analysis.ipynb")
    assert (nb.nbformat, nb.nbformat_minor, nb.cells) == (4, 5, [])
    assert nb.metadata.kernelspec == {
        "name": default,
        "display_name": spec.display_name,
        "language": "python",
    }
    assert nb.metadata.language_info == {"name": "python"}
    assert result["text"] == f"Created work/analysis.ipynb (kernel {default}, no cells)."
    assert result["details"] == {
        "action": "create",
        "path": "work/analysis.ipynb",
        "kernelName": default,
        "totalCells": 0,
        "revision": notebook_revision([]),
        "lastModified": result["details"]["lastModified"],
        "via": "file",
    }
    assert result["details"]["lastModified"]

    async def reported():
        return bool(events)

    await eventually(reported, timeout=5)
    assert [(e["action"], e["path"], e["status"]) for e in events] == [
        ("create", "work/analysis.ipynb", "ok")
    ]


async def test_create_names_the_kernel_spec_asked_for_and_the_notebook_takes_cells(
    notebook_tool, jp_root_dir
):
    status, result = await notebook_tool(
        {"action": "create", "notebook_path": "b.ipynb", "kernel_name": "echo"}
    )
    assert status == 200, result
    metadata = stored(jp_root_dir / "b.ipynb").metadata
    assert metadata.kernelspec == {"name": "echo", "display_name": "echo", "language": "echo"}
    assert metadata.language_info == {"name": "echo"}

    body = {"action": "insert", "notebook_path": "b.ipynb", "cell_index": 0, "content": "1 + 1"}
    status, inserted = await notebook_tool(body)

    assert status == 200, inserted
    nb = stored(jp_root_dir / "b.ipynb")
    assert [c.source for c in nb.cells] == ["1 + 1"]
    assert nb.cells[0].id == inserted["details"]["cellId"]


async def test_create_never_overwrites_a_notebook_or_a_folder(notebook_tool, jp_root_dir):
    existing = jp_root_dir / "a.ipynb"
    existing.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    before = existing.read_bytes()
    (jp_root_dir / "folder.ipynb").mkdir()

    for path in ("a.ipynb", "folder.ipynb"):
        status, result = await notebook_tool({"action": "create", "notebook_path": path})
        assert (status, result["message"]) == (409, f"Notebook already exists: {path}")
        assert result["reason"] == "exists"
    assert existing.read_bytes() == before
    assert (jp_root_dir / "folder.ipynb").is_dir()


async def test_create_refuses_what_it_cannot_write_and_writes_nothing(notebook_tool, jp_root_dir):
    cases = [
        ({"notebook_path": "missing/a.ipynb"}, 404, "Folder not found: missing"),
        ({"notebook_path": "a.ipynb", "kernel_name": "nope"}, 400, "No such kernel: nope"),
        ({"notebook_path": "a.txt"}, 400, "notebook_path must end with .ipynb, got a.txt"),
        ({"notebook_path": ".hidden.ipynb"}, 404, "Notebook not found: .hidden.ipynb"),
        ({"notebook_path": "../outside.ipynb"}, 403, None),
        ({"notebook_path": "a.ipynb", "cell_index": 0}, 400, None),
        ({"notebook_path": "a.ipynb", "kernel_name": ""}, 400, "kernel_name must not be empty"),
    ]
    for fields, code, message in cases:
        status, result = await notebook_tool({"action": "create", **fields})
        assert status == code, (fields, result)
        if message is not None:
            assert result["message"] == message
    assert sorted(p.name for p in jp_root_dir.iterdir()) == []
    assert not (jp_root_dir.parent / "outside.ipynb").exists()


async def test_create_is_no_action_of_a_batch(notebook_tool, jp_root_dir):
    (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    body = {"notebook_path": "a.ipynb", "changes": [{"action": "create"}]}

    status, result = await notebook_tool(body)

    assert status == 400
    assert result["message"] == (
        "Change 1 failed: Invalid action in a batch: create (a batch holds edit, insert, "
        "delete and move)"
    )


class TestDenyingWrites:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_create_is_a_write_of_contents(self, notebook_tool, jp_root_dir):
        status, result = await notebook_tool({"action": "create", "notebook_path": "a.ipynb"})

        assert status == 403
        assert result["message"] == "User is not authorized to write on resource: contents."
        assert not (jp_root_dir / "a.ipynb").exists()

"""Authentication and authorization of the notebook tool."""

from __future__ import annotations

import pytest
from traitlets.config import Config

from tests.support.notebooks import jupyter_text, sample_notebook


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / "a.ipynb"
    path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    return path


async def test_a_request_without_a_token_is_refused(notebook_tool, notebook):
    before = notebook.read_bytes()
    body = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}
    status, _ = await notebook_tool(body, headers={"Authorization": ""})
    assert status in (401, 403)
    assert notebook.read_bytes() == before


class TestDenyingWrites:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyWritesAuthorizer"
        return config

    async def test_a_write_is_forbidden_and_the_file_untouched(self, notebook_tool, notebook):
        before = notebook.read_bytes()
        for body in (
            {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"},
            {"action": "delete", "notebook_path": "a.ipynb", "cell_index": 0},
        ):
            status, result = await notebook_tool(body)
            assert status == 403
            assert result["message"] == "User is not authorized to write on resource: contents."
        assert notebook.read_bytes() == before

    async def test_a_read_is_still_allowed(self, notebook_tool, notebook):
        status, result = await notebook_tool({"action": "read", "notebook_path": "a.ipynb"})
        assert status == 200 and result["details"]["totalCells"] == 4


class TestDenyingEverything:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.authorizer_class = "tests.support.fakes.DenyAllAuthorizer"
        return config

    async def test_even_a_read_is_forbidden(self, notebook_tool, notebook):
        status, _ = await notebook_tool({"action": "read", "notebook_path": "a.ipynb"})
        assert status == 403


class TestServerAllowingHiddenFiles:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ContentsManager.allow_hidden = True
        return config

    async def test_hidden_notebooks_are_editable_when_the_server_shows_them(
        self, notebook_tool, jp_root_dir
    ):
        (jp_root_dir / ".h.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        body = {"action": "insert", "notebook_path": ".h.ipynb", "cell_index": 0, "content": "x"}
        status, result = await notebook_tool(body)
        assert status == 200, result


class TestContentsManagerRefusingToRead:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.UnreadableContentsManager"
        return config

    async def test_its_answer_is_passed_on_not_mistaken_for_bad_json(self, notebook_tool, notebook):
        before = notebook.read_bytes()
        body = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}
        status, result = await notebook_tool(body)
        assert (status, result["message"]) == (403, "Permission denied: a.ipynb")
        assert notebook.read_bytes() == before

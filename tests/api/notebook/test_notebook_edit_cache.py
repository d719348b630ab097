"""Edits reuse the notebook the tool last read or wrote while its file is unchanged (issue 28).

The kept document (``jupyter_xcsh/notebook/storage/cache.py``) must never hide a change made by
anyone
else: another program rewriting the file (same size, its modification time set back), a lab
save through the contents API, saves racing the tool's, a delete or a rename. Memory is
bounded: one document per file, least recently used dropped past a byte cap.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from jupyter_xcsh.notebook.storage.cache import CachedNotebook, FileStamp, NotebookCache, stamp_of
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import jupyter_text, load

pytestmark = pytest.mark.fast_path  # the save guard tells the kept copies of every save


def _notebook(cells: int = 6):
    return new_notebook(cells=[new_code_cell(f"cell_{i} = {i}") for i in range(cells)])


@pytest.fixture
def store(jp_serverapp):
    return jp_serverapp.web_app.settings["xcsh"].notebook_store


@pytest.fixture
def notebook(jp_root_dir):
    path = jp_root_dir / "a.ipynb"
    path.write_text(jupyter_text(_notebook()), encoding="utf-8")
    return path


def _edit(index, content, path="a.ipynb"):
    return {"action": "edit", "notebook_path": path, "cell_index": index, "content": content}


async def _settle(path):
    """Wait until the file's last write is out of the racy window (so it can be kept)."""
    await asyncio.sleep(0.05)


async def _sources(notebook_tool, path="a.ipynb"):
    status, result = await notebook_tool(
        {"action": "read", "notebook_path": path, "max_chars": 100_000}
    )
    assert status == 200, result
    return result["text"]


async def _kept_edit(notebook_tool, store, notebook, index, content):
    """Edit through the tool, then wait until the saved file may be kept; return the entry."""
    status, result = await notebook_tool(_edit(index, content))
    assert status == 200, result
    await _settle(notebook)
    key = store.guard.key("a.ipynb")
    # The save may have been racy (same clock tick): a read keeps the file as it is then.
    if key not in store.cache._entries:
        await _sources(notebook_tool)
    return store.cache._entries.get(key)


async def test_repeated_edits_reuse_the_document_the_tool_last_wrote(
    notebook_tool, store, notebook
):
    first = await _kept_edit(notebook_tool, store, notebook, 0, "one = 1")
    assert first is not None
    status, result = await notebook_tool(_edit(1, "two = 2"))
    assert status == 200, result
    # The kept document itself was changed and saved: the file was not parsed again.
    assert "".join(first.document.cells[1]["source"]) == "two = 2"
    assert not first.document.changed
    second = store.cache._entries.get(store.guard.key("a.ipynb"))
    assert second is None or second.document is first.document  # kept unless the save was racy
    cells = load(notebook.read_text()).cells
    assert [cells[0].source, cells[1].source] == ["one = 1", "two = 2"]
    nbformat.validate(nbformat.reads(notebook.read_text(), as_version=4))


async def test_another_program_rewriting_the_file_same_size_same_mtime_is_seen(
    notebook_tool, store, notebook
):
    entry = await _kept_edit(notebook_tool, store, notebook, 0, "one = 1")
    assert entry is not None
    before = os.stat(notebook)
    text = notebook.read_text()
    changed = text.replace("cell_3 = 3", "cell_3 = 9")
    assert len(changed) == len(text)
    with open(notebook, "r+", encoding="utf-8") as f:  # in place: same inode, same size
        f.write(changed)
    os.utime(notebook, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    after = os.stat(notebook)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert "cell_3 = 9" in await _sources(notebook_tool)
    status, result = await notebook_tool(_edit(5, "five = 5"))
    assert status == 200, result
    cells = load(notebook.read_text()).cells
    assert [cells[0].source, cells[3].source, cells[5].source] == [
        "one = 1",
        "cell_3 = 9",
        "five = 5",
    ]


async def test_another_program_replacing_the_file_is_seen(notebook_tool, store, notebook):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    replacement = notebook.with_name("other.tmp")
    replacement.write_text(
        notebook.read_text().replace("cell_2 = 2", "cell_2 = 7"), encoding="utf-8"
    )
    os.replace(replacement, notebook)
    status, result = await notebook_tool(_edit(4, "four = 4"))
    assert status == 200, result
    cells = load(notebook.read_text()).cells
    assert [cells[0].source, cells[2].source, cells[4].source] == [
        "one = 1",
        "cell_2 = 7",
        "four = 4",
    ]


async def test_a_lab_save_through_the_contents_api_is_seen(
    notebook_tool, store, notebook, jp_fetch
):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    response = await jp_fetch("api", "contents", "a.ipynb", params={"type": "notebook"})
    model = json.loads(response.body)["content"]
    model["cells"][1]["source"] = "typed_in_lab = 1"
    body = json.dumps({"type": "notebook", "format": "json", "content": model})
    await jp_fetch("api", "contents", "a.ipynb", method="PUT", body=body)
    assert store.guard.key("a.ipynb") not in store.cache._entries  # forgotten before the write
    status, result = await notebook_tool(_edit(2, "two = 2"))
    assert status == 200, result
    cells = load(notebook.read_text()).cells
    assert [c.source for c in cells[:3]] == ["one = 1", "typed_in_lab = 1", "two = 2"]


async def test_saves_racing_the_tools_edits_are_all_kept(notebook_tool, store, notebook, jp_fetch):
    for round_ in range(5):
        response = await jp_fetch("api", "contents", "a.ipynb", params={"type": "notebook"})
        model = json.loads(response.body)["content"]
        model["cells"][5]["source"] = f"lab = {round_}"
        body = json.dumps({"type": "notebook", "format": "json", "content": model})
        lab = jp_fetch("api", "contents", "a.ipynb", method="PUT", body=body)
        (status, result), _ = await asyncio.gather(
            notebook_tool(_edit(0, f"agent = {round_}")), lab
        )
        assert status == 200, result
        # Whichever saved last, the tool's next read and edit start from the file as it is.
        on_disk = load(notebook.read_text()).cells
        text = await _sources(notebook_tool)
        assert on_disk[5].source in text and on_disk[0].source in text
        status, result = await notebook_tool(_edit(3, f"after = {round_}"))
        assert status == 200, result
        cells = load(notebook.read_text()).cells
        assert cells[3].source == f"after = {round_}"
        assert cells[5].source == on_disk[5].source and cells[0].source == on_disk[0].source


async def test_a_look_on_a_worker_thread_is_never_changed_under_it(notebook_tool, store, notebook):
    """Reads look at the kept notebook on a worker thread (``view(in_thread=True)``): an edit
    meanwhile changes a copy of its own, never the document being read."""
    await _settle(notebook)
    await _sources(notebook_tool)  # the file is kept now
    assert store.guard.key("a.ipynb") in store.cache._entries
    looking, edited = threading.Event(), threading.Event()

    def look(document):
        looking.set()
        assert edited.wait(30)
        return "".join(document.cells[0]["source"])

    view = asyncio.ensure_future(store.view("a.ipynb", look, in_thread=True))
    assert await asyncio.to_thread(looking.wait, 30)
    status, result = await notebook_tool(_edit(0, "changed = 1"))
    edited.set()
    assert status == 200, result
    assert (await view).value == "cell_0 = 0"
    assert load(notebook.read_text()).cells[0].source == "changed = 1"


async def test_a_deleted_notebook_is_forgotten_and_not_found(
    notebook_tool, store, notebook, jp_fetch
):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    await jp_fetch("api", "contents", "a.ipynb", method="DELETE")
    assert store.guard.key("a.ipynb") not in store.cache._entries
    status, result = await notebook_tool(_edit(1, "two = 2"))
    assert status == 404, result


async def test_a_renamed_notebook_is_forgotten_and_a_new_file_at_its_path_is_read(
    notebook_tool, store, notebook, jp_fetch, jp_root_dir
):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    body = json.dumps({"path": "b.ipynb"})
    await jp_fetch("api", "contents", "a.ipynb", method="PATCH", body=body)
    assert store.guard.key("a.ipynb") not in store.cache._entries
    fresh = new_notebook(cells=[new_code_cell("fresh = 1"), new_code_cell("x")])
    notebook.write_text(jupyter_text(fresh), encoding="utf-8")
    status, result = await notebook_tool(_edit(1, "y"))
    assert status == 200, result
    assert [c.source for c in load(notebook.read_text()).cells] == ["fresh = 1", "y"]
    moved = load((jp_root_dir / "b.ipynb").read_text()).cells
    assert moved[0].source == "one = 1" and len(moved) == 6


async def test_a_change_that_fails_leaves_no_half_changed_copy(notebook_tool, store, notebook):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    batch = {
        "notebook_path": "a.ipynb",
        "changes": [
            {"action": "edit", "cell_index": 1, "content": "half = 1"},
            {"action": "edit", "cell_index": 99, "content": "nowhere"},
        ],
    }
    status, result = await notebook_tool(batch)
    assert status != 200, result
    assert "half = 1" not in await _sources(notebook_tool)
    assert "half = 1" not in notebook.read_text()


async def test_trusting_an_unchanged_notebook_is_seen_by_the_next_edit(
    notebook_tool, store, notebook, jp_serverapp
):
    assert await _kept_edit(notebook_tool, store, notebook, 0, "one = 1") is not None
    entry = store.cache._entries[store.guard.key("a.ipynb")]
    # Found not trusted (signature not computed again) until the notary's store changes.
    assert entry.signature is None
    notary = jp_serverapp.contents_manager.notary
    notary.sign(nbformat.reads(notebook.read_text(), as_version=4))  # `jupyter trust a.ipynb`
    status, result = await notebook_tool(_edit(1, "two = 2"))
    assert status == 200, result
    assert notary.check_signature(nbformat.reads(notebook.read_text(), as_version=4))


# -- memory bounds -----------------------------------------------------------------------------


def _entry(tmp_path, name, cells):
    path = tmp_path / name
    path.write_text(jupyter_text(_notebook(cells)), encoding="utf-8")
    document = NotebookDocument.parse(path.read_text())
    stamp = stamp_of(str(path))
    assert stamp is not None
    old = FileStamp(**{**stamp.__dict__, "noted_ns": stamp.mtime_ns + 10**9})  # not racy
    return str(path), CachedNotebook(document, old, None)


def test_the_cache_keeps_one_notebook_per_file_and_drops_the_least_recently_used(tmp_path):
    a_key, a = _entry(tmp_path, "a.ipynb", 20)
    b_key, b = _entry(tmp_path, "b.ipynb", 20)
    c_key, c = _entry(tmp_path, "c.ipynb", 20)
    cache = NotebookCache(max_bytes=a.size + b.size + c.size // 2)
    cache.put(a_key, a)
    cache.put(a_key, a)  # one per file
    assert len(cache) == 1 and cache.size == a.size
    cache.put(b_key, b)
    assert cache.get(a_key, a.stamp) is a  # a is now the most recently used
    cache.put(c_key, c)
    assert cache.get(b_key, b.stamp) is None and len(cache) == 2
    assert cache.size == a.size + c.size <= cache.max_bytes
    assert NotebookCache(max_bytes=a.size - 1).put(a_key, a) is None
    small = NotebookCache(max_bytes=a.size - 1)
    small.put(a_key, a)
    assert len(small) == 0


def test_a_racy_stamp_is_never_kept(tmp_path):
    key, entry = _entry(tmp_path, "a.ipynb", 3)
    racy = FileStamp(**{**entry.stamp.__dict__, "noted_ns": entry.stamp.mtime_ns + 1000})
    cache = NotebookCache(max_bytes=10**9)
    cache.put(key, CachedNotebook(entry.document, racy, None))
    assert len(cache) == 0
    whole_seconds = FileStamp(
        **{**entry.stamp.__dict__, "mtime_ns": 5 * 10**18, "noted_ns": 5 * 10**18 + 10**9}
    )
    assert whole_seconds.racy  # second timestamps: a write a second later may look the same


class TestNothingKept:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.XcshSettings.notebook_cache_bytes = 0
        return config

    async def test_a_zero_byte_cap_keeps_nothing(self, notebook_tool, store, notebook):
        for i in range(2):
            status, result = await notebook_tool(_edit(i, f"v = {i}"))
            assert status == 200, result
            await _settle(notebook)
        assert len(store.cache) == 0
        assert [c.source for c in load(notebook.read_text()).cells[:2]] == ["v = 0", "v = 1"]


async def test_the_edit_right_after_an_edit_starts_from_the_document_the_tool_wrote(
    notebook_tool, store, notebook
):
    """The tool stamps the file it saves out of the racy window: the very next edit, however
    soon, is not a read of the file (a small notebook's save is over within the window)."""
    # The fixture's file was written just now: the first save may not stamp its file before
    # that one's time (a room would miss the change), so it would not be kept. Let it age.
    await _settle(notebook)
    kept = []
    for i in range(5):
        status, result = await notebook_tool(_edit(i, f"quick = {i}"))  # no wait in between
        assert status == 200, result
        entry = store.cache._entries.get(store.guard.key("a.ipynb"))
        assert entry is not None and entry.stamp is not None and not entry.stamp.racy
        kept.append(entry.document)
    assert all(document is kept[0] for document in kept)
    assert [c.source for c in load(notebook.read_text()).cells[:5]] == [
        f"quick = {i}" for i in range(5)
    ]

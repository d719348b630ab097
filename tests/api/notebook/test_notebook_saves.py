"""Saves racing JupyterLab's own, half-written files, atomic writes and trust (issue 8)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import tempfile
import threading
import time
import urllib.request

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets.config import Config

from jupyter_xcsh.notebook.storage.saves import SaveGuard
from tests.support.fakes import HeldSaveContentsManager
from tests.support.inplace import wait_until
from tests.support.notebooks import jupyter_text, load, sample_notebook


def _race_notebook(cells: int = 40):
    """A small notebook (~40 KB): a JupyterLab save spends most of its time serialising and
    validating after truncating the file, which is the window the race needs."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    for i in range(cells):
        nb.cells.append(
            new_code_cell(
                f"value_{i} = {i}\nprint(value_{i})",
                execution_count=i,
                outputs=[new_output("stream", name="stdout", text=f"line {i}\n" * 100)],
            )
        )
    return nb


class LabSaver(threading.Thread):
    """A JupyterLab tab saving a notebook again and again: GET the model, PUT it back."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.headers = {**headers, "Content-Type": "application/json"}
        self.stop = threading.Event()
        self.saves = 0
        self.failures: list[str] = []

    def _call(self, method: str, url: str, body: bytes | None = None) -> bytes:
        request = urllib.request.Request(url, data=body, method=method, headers=self.headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read()  # type: ignore[no-any-return]

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                model = json.loads(self._call("GET", self.url + "?type=notebook&content=1"))
                body = {"type": "notebook", "format": "json", "content": model["content"]}
                self._call("PUT", self.url, json.dumps(body).encode())
                self.saves += 1
            except Exception as e:  # every failure is a finding: the lab could not read or save
                self.failures.append(repr(e))


@pytest.mark.slow
@pytest.mark.fast_path  # the save_guard (XcshSettings.guard_saves); docs/operators/interventions.md
async def test_agent_changes_racing_lab_saves_never_leave_a_corrupt_notebook(
    notebook_tool, jp_root_dir, jp_http_port, jp_base_url, jp_auth_header
):
    """20 agent changes against a thread saving the notebook through the contents API, 50 times.

    Without a shared lock the two in-place writers interleave (a whole document followed by a
    stale tail) and readers meet half-written files (422s, "Unreadable Notebook").
    """
    path = jp_root_dir / "race.ipynb"
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/contents/race.ipynb"
    corrupt, agent_errors, lab_failures, lab_saves = 0, [], [], 0
    for round_ in range(50):
        path.write_text(jupyter_text(_race_notebook()), encoding="utf-8")
        saver = LabSaver(url, jp_auth_header)
        saver.start()
        try:
            for i in range(20):
                if i % 2:
                    body = {"action": "edit", "cell_index": i, "content": f"edited {round_}.{i}"}
                else:
                    body = {"action": "insert", "cell_index": 1, "content": f"new {round_}.{i}"}
                status, result = await notebook_tool({"notebook_path": "race.ipynb", **body})
                if status != 200:
                    agent_errors.append((status, result.get("message")))
        finally:
            saver.stop.set()
            await asyncio.to_thread(saver.join, 60)
        lab_failures += saver.failures
        lab_saves += saver.saves
        try:
            load(path.read_text(encoding="utf-8"))
        except Exception:
            corrupt += 1
    assert (corrupt, agent_errors, lab_failures) == (0, [], [])
    assert lab_saves > 0  # the race did happen


class TestHalfWrittenFiles:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.HalfWrittenContentsManager"
        config.HalfWrittenContentsManager.half_written_reads = 2
        return config

    async def test_a_read_meeting_a_half_written_file_reads_it_again(
        self, notebook_tool, jp_root_dir
    ):
        (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        status, result = await notebook_tool({"action": "read", "notebook_path": "a.ipynb"})
        assert status == 200, result
        assert result["details"]["totalCells"] == 4
        body = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}
        (jp_root_dir / "b.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        status, result = await notebook_tool({**body, "notebook_path": "b.ipynb"})
        assert status == 200, result
        assert len(load((jp_root_dir / "b.ipynb").read_text()).cells) == 5

    async def test_a_file_that_stays_invalid_is_still_a_422(self, notebook_tool, jp_root_dir):
        (jp_root_dir / "bad.ipynb").write_text('{"cells": [', encoding="utf-8")
        status, result = await notebook_tool({"action": "read", "notebook_path": "bad.ipynb"})
        assert (status, result["message"]) == (422, "Invalid JSON in notebook: bad.ipynb")


class TestALabSaveBetweenLoadAndSave:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.SaveAfterLoadContentsManager"
        return config

    async def test_the_change_is_applied_on_top_of_the_saved_version(
        self, notebook_tool, jp_root_dir
    ):
        (jp_root_dir / "a.ipynb").write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        body = {"action": "insert", "notebook_path": "a.ipynb", "cell_index": 0, "content": "agent"}
        status, result = await notebook_tool(body)
        assert status == 200, result
        sources = [c.source for c in load((jp_root_dir / "a.ipynb").read_text()).cells]
        assert sources[0] == "agent" and sources[-1] == "lab"


@pytest.mark.fast_path  # save_guard: the tool renames its saves into place
async def test_a_save_replaces_the_file_whole_keeping_its_mode_and_links(
    notebook_tool, jp_root_dir
):
    (jp_root_dir / "real").mkdir()
    target = jp_root_dir / "real" / "a.ipynb"
    target.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    target.chmod(0o640)
    os.symlink(target, jp_root_dir / "link.ipynb")
    inode = target.stat().st_ino
    body = {"action": "edit", "notebook_path": "link.ipynb", "cell_index": 0, "content": "linked"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert (jp_root_dir / "link.ipynb").is_symlink()
    assert load(target.read_text()).cells[0].source == "linked"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed over the old one, not rewritten
    leftovers = [p.name for p in jp_root_dir.rglob("*") if p.name.startswith(".~")]
    assert leftovers == []


async def test_a_save_that_cannot_be_encoded_past_its_first_slice_leaves_the_file_as_it_was(
    notebook_tool, jp_root_dir
):
    """A cell whose source holds a lone surrogate (valid JSON: an escape) cannot be written
    once an edit serialises that source again: the save fails with jupyter_server's 400,
    whichever slice of the text it is in (the text is encoded a slice at a time), and leaves
    nothing behind."""
    from jupyter_xcsh.notebook.storage.saves import WRITE_CHUNK_CHARS

    nb = new_notebook()
    nb.cells.append(new_markdown_cell("x" * (WRITE_CHUNK_CHARS + 10)))  # the first slice
    nb.cells.append(new_code_cell("print(1) # LONE"))
    text = jupyter_text(nb).replace("LONE", "\\ud800")
    target = jp_root_dir / "lone.ipynb"
    target.write_text(text, encoding="utf-8")
    body = {
        "action": "edit",
        "notebook_path": "lone.ipynb",
        "cell_index": 1,
        "old_content": "print(1)",
        "content": "print(2)",
    }
    status, result = await notebook_tool(body)
    assert status == 400, result
    assert "Encoding error saving" in result["message"]
    assert target.read_text(encoding="utf-8") == text
    leftovers = [p.name for p in jp_root_dir.rglob("*") if p.name.startswith(".~")]
    assert leftovers == []


async def test_an_edit_of_a_source_keeps_the_cells_outputs_as_written(notebook_tool, jp_root_dir):
    """The values an edit does not change are not serialised again: an output holding a lone
    surrogate (a JSON escape) stays that escape, and the edit is saved."""
    nb = new_notebook()
    nb.cells.append(new_code_cell("print(1)", outputs=[new_output("stream", text="LONE")]))
    text = jupyter_text(nb).replace("LONE", "\\ud800")
    target = jp_root_dir / "lone.ipynb"
    target.write_text(text, encoding="utf-8")
    body = {"action": "edit", "notebook_path": "lone.ipynb", "cell_index": 0, "content": "x = 2"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert target.read_text(encoding="utf-8") == text.replace('"print(1)"', '"x = 2"')


@pytest.mark.parametrize("how", ["registered", "trait"])
async def test_a_pre_save_hook_is_shown_the_whole_text_the_tool_saves(
    notebook_tool, jp_root_dir, jp_serverapp, how
):
    """Without a hook the tool hands its text to the save in pieces (never joined whole); a
    hook reads the model's content, so with one the content is the whole text, as written."""
    seen = []

    def hook(model, path, **kwargs):
        seen.append((path, model["type"], model["content"]))

    cm = jp_serverapp.contents_manager
    if how == "registered":
        cm.register_pre_save_hook(hook)
    else:
        cm.pre_save_hook = hook
    target = jp_root_dir / "hooked.ipynb"
    target.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
    body = {"action": "edit", "notebook_path": "hooked.ipynb", "cell_index": 0, "content": "h"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert seen == [("hooked.ipynb", "file", target.read_text(encoding="utf-8"))]
    assert load(target.read_text(encoding="utf-8")).cells[0].source == "h"


class TestInPlaceWritingWhenTheServerAsksForIt:
    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.FileContentsManager.use_atomic_writing = False
        return config

    async def test_the_file_is_rewritten_in_place(self, notebook_tool, jp_root_dir):
        path = jp_root_dir / "a.ipynb"
        path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        inode = path.stat().st_ino
        body = {"action": "edit", "notebook_path": "a.ipynb", "cell_index": 0, "content": "x"}
        status, result = await notebook_tool(body)
        assert status == 200, result
        assert path.stat().st_ino == inode
        assert load(path.read_text()).cells[0].source == "x"


def _html_notebook():
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Report"),
            new_code_cell(
                "show()",
                execution_count=1,
                outputs=[
                    new_output(
                        "display_data",
                        data={"text/html": "<b>bold</b><script>alert(1)</script>"},
                    )
                ],
            ),
        ]
    )
    return nb


async def _trusted_cells(jp_fetch, name):
    response = await jp_fetch("api", "contents", name, params={"type": "notebook"})
    cells = json.loads(response.body)["content"]["cells"]
    return [c["metadata"].get("trusted") for c in cells if c["cell_type"] == "code"]


async def test_a_trusted_notebook_stays_trusted_after_an_agent_edit(
    notebook_tool, jp_root_dir, jp_serverapp, jp_fetch
):
    nb = _html_notebook()
    (jp_root_dir / "signed.ipynb").write_text(jupyter_text(nb), encoding="utf-8")
    # `jupyter trust signed.ipynb`, with the server's own notary.
    notary = jp_serverapp.contents_manager.notary
    notary.sign(nbformat.reads((jp_root_dir / "signed.ipynb").read_text(), as_version=4))
    assert await _trusted_cells(jp_fetch, "signed.ipynb") == [True]
    for body in (
        {"action": "edit", "cell_index": 0, "content": "# Report, edited"},
        {"action": "insert", "cell_index": 2, "content": "more()"},
        {"action": "move", "cell_index": 2, "to_index": 0},
    ):
        status, result = await notebook_tool({"notebook_path": "signed.ipynb", **body})
        assert status == 200, result
    assert await _trusted_cells(jp_fetch, "signed.ipynb") == [True, True]
    saved = nbformat.reads((jp_root_dir / "signed.ipynb").read_text(), as_version=4)
    assert notary.check_signature(saved)


async def test_an_untrusted_notebook_is_never_signed_by_an_agent_edit(
    notebook_tool, jp_root_dir, jp_serverapp, jp_fetch
):
    (jp_root_dir / "plain.ipynb").write_text(jupyter_text(_html_notebook()), encoding="utf-8")
    body = {"action": "edit", "notebook_path": "plain.ipynb", "cell_index": 0, "content": "# x"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert await _trusted_cells(jp_fetch, "plain.ipynb") == [False]


# --- temporary files a crash left (notebook/storage/atomic.py TemporaryFiles; issue 20) ----------

#: Seconds since the epoch a day ago: before any server of the test started.
A_DAY_AGO = time.time() - 86_400


def _file(path, when=A_DAY_AGO):
    path.write_text("")
    os.utime(path, (when, when))
    return path


@pytest.fixture
def crashed_saves(jp_root_dir, jp_runtime_dir):
    """Files a server killed mid-save left in a folder its journal names, beside others."""
    folder = jp_root_dir / "work"
    folder.mkdir()
    gone = folder / ".~xcsh-4194399-ab_c12.tmp"  # above Linux's highest pid: nobody's
    files = {
        "leftover": _file(gone),
        "legacy leftover": _file(folder / ".~xcsh-q1w2e3.tmp"),  # named before the pid was
        "a running writer's": _file(folder / f".~xcsh-{os.getppid()}-zz9.tmp"),
        "newer than the server": _file(folder / ".~xcsh-4194399-new.tmp", time.time() + 3600),
        "not the tool's": _file(folder / ".~xcsh-notes.txt"),
        "a person's": _file(folder / "draft.tmp"),
    }
    journal = jp_runtime_dir / "xcsh-temporary-folders.txt"
    journal.write_text(f"{folder}\n{jp_root_dir / 'deleted-since'}\n{folder}\n")
    return files, journal


async def test_a_starting_server_removes_only_the_leftovers_of_crashed_saves(
    crashed_saves, jp_serverapp, jp_root_dir
):
    files, journal = crashed_saves
    leftovers = [files["leftover"], files["legacy leftover"]]
    await wait_until(lambda: not any(p.exists() for p in leftovers))
    others = [p for name, p in files.items() if p not in leftovers]
    assert all(p.exists() for p in others), [p.name for p in others if not p.exists()]
    # The journal keeps the folders that still exist, once each.
    await wait_until(lambda: journal.read_text() == f"{jp_root_dir / 'work'}\n", timeout=5)


@pytest.mark.fast_path  # save_guard: only the guarded saves use the tool's temporary files
async def test_a_save_notes_its_folder_and_names_its_file_with_the_pid(
    notebook_tool, jp_root_dir, jp_runtime_dir, monkeypatch
):
    (jp_root_dir / "sub").mkdir()
    (jp_root_dir / "sub" / "a.ipynb").write_text(jupyter_text(sample_notebook()))
    made = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        made.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    body = {"action": "edit", "notebook_path": "sub/a.ipynb", "cell_index": 0, "content": "x"}
    status, result = await notebook_tool(body)
    assert status == 200, result
    assert [name.startswith(f".~xcsh-{os.getpid()}-") for name in made] == [True]
    journal = jp_runtime_dir / "xcsh-temporary-folders.txt"
    assert str(jp_root_dir.resolve() / "sub") in journal.read_text().splitlines()


class TestASaveSlowOnDisk:
    """The tool's save is written on a worker thread: the server answers others meanwhile."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config):
        config = Config(jp_server_config)
        config.ServerApp.contents_manager_class = "tests.support.fakes.HeldSaveContentsManager"
        return config

    @pytest.fixture
    def held(self):
        """The manager's events, cleared; released at the end whatever happens."""
        HeldSaveContentsManager.entered.clear()
        HeldSaveContentsManager.release.clear()
        yield HeldSaveContentsManager
        HeldSaveContentsManager.release.set()

    @pytest.mark.fast_path  # save_guard: the tool's own saves are the guard's
    async def test_the_server_answers_other_requests_while_a_save_is_written(
        self, held, jp_fetch, jp_root_dir
    ):
        path = jp_root_dir / "held.ipynb"
        path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        (jp_root_dir / "other.ipynb").write_text(jupyter_text(sample_notebook()))
        before = path.read_text()
        body = {"action": "edit", "notebook_path": "held.ipynb", "cell_index": 0, "content": "x"}
        edit = asyncio.ensure_future(
            jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(body))
        )
        await wait_until(held.entered.is_set)
        # The save is held in its thread: the loop still answers, the file is the old one.
        status = await jp_fetch("api", "status")
        read = {"action": "read", "notebook_path": "other.ipynb"}
        other = await jp_fetch("api", "xcsh", "notebook", method="POST", body=json.dumps(read))
        assert (status.code, other.code, edit.done()) == (200, 200, False)
        assert path.read_text() == before
        held.release.set()
        response = await edit
        assert response.code == 200
        assert load(path.read_text()).cells[0].source == "x"
        assert [p.name for p in jp_root_dir.iterdir() if p.name.startswith(".~")] == []

    async def test_a_cancelled_save_keeps_the_file_locked_until_written(self, held, tmp_path):
        manager = HeldSaveContentsManager(root_dir=str(tmp_path))
        guard = SaveGuard(manager)
        path = tmp_path / "held.ipynb"
        path.write_text(jupyter_text(sample_notebook()), encoding="utf-8")
        text = jupyter_text(_race_notebook(3))
        model = {"type": "file", "format": "text", "content": text}
        save = asyncio.ensure_future(guard.save_replacing(model, "held.ipynb"))
        await wait_until(held.entered.is_set)
        save.cancel()
        locked = asyncio.ensure_future(_hold(guard, guard.key("held.ipynb")))
        await asyncio.sleep(0.2)
        # The writing thread holds on: no other save of the file may start.
        assert not locked.done() and not save.done()
        held.release.set()
        with pytest.raises(asyncio.CancelledError):
            await save
        await locked
        assert path.read_text() == text  # written whole, then renamed into place


async def _hold(guard: SaveGuard, key: str) -> None:
    async with guard.holding(key):
        pass


def _deleted_files_held(folder) -> list[str]:
    """The files of ``folder`` this process still has open though they were replaced."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(folder)) and target.endswith(" (deleted)"):
                held.append(target)
    return held


async def test_the_file_a_large_save_replaces_is_let_go_after_the_save(notebook_tool, jp_root_dir):
    """The rename does not wait for the replaced file's blocks to be freed (another thread
    closes it): every replaced file is let go all the same."""
    nb = new_notebook(
        cells=[
            new_code_cell(f"c{i}", outputs=[new_output("stream", text="x" * 5000)])
            for i in range(400)
        ]
    )
    path = jp_root_dir / "big.ipynb"
    path.write_text(jupyter_text(nb), encoding="utf-8")
    assert path.stat().st_size > 2 * 2**20
    for i in range(3):
        status, result = await notebook_tool(
            {"action": "edit", "notebook_path": "big.ipynb", "cell_index": i, "content": f"e{i}"}
        )
        assert status == 200, result
    await wait_until(lambda: not _deleted_files_held(jp_root_dir), 10)
    assert [c.source for c in load(path.read_text()).cells[:3]] == ["e0", "e1", "e2"]


def test_the_text_is_written_whole_whatever_its_pieces(tmp_path):
    """``_write_text`` joins and encodes the pieces a chunk at a time: many small pieces, a
    piece longer than a chunk, pieces across chunk ends and characters of every width come
    out as the text joined."""
    from jupyter_server.services.contents.largefilemanager import LargeFileManager

    from jupyter_xcsh.notebook.storage.saves import WRITE_CHUNK_CHARS, _write_text

    manager = LargeFileManager(root_dir=str(tmp_path))
    pieces = [f"{i}é,\n" for i in range(50_000)]  # ~6 bytes each: many pieces per chunk
    pieces.insert(1000, "ü" * (2 * WRITE_CHUNK_CHARS + 7))  # three slices of one piece
    pieces.insert(30_000, "𝄞 " * (WRITE_CHUNK_CHARS // 3))  # four bytes a character
    pieces.append("")
    target = tmp_path / "big.txt"
    target.write_bytes(b"old")
    _write_text(manager, str(target), pieces)
    assert target.read_bytes() == "".join(pieces).encode("utf-8")

"""The notary's signature computed on the parsed notebook, cut into segments (issues 8, 14)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_xcsh.notebook.storage import trust
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from jupyter_xcsh.notebook.storage.trust import NotebookTrust


def _notebook(cells: int):
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "answer": [1, 2.5, None],
        }
    )
    for i in range(cells):
        if i % 7 == 0:
            nb.cells.append(new_markdown_cell(f"# Überschrift {i} — ☃\n" * 3))
            continue
        cell = new_code_cell(
            f"value_{i} = {i}\nprint('é' * {i})",
            execution_count=i,
            outputs=[
                new_output("stream", name="stdout", text="é\n" * (i % 5 + 1)),
                new_output("execute_result", data={"text/plain": str(i)}, execution_count=i),
            ],
        )
        cell.metadata["trusted"] = True  # dropped by nbformat when it reads: not signed
        cell.metadata["tags"] = ["a", "b"]
        nb.cells.append(cell)
    return nbformat.writes(nb)


@pytest.fixture
def notary(tmp_path):
    return NotebookNotary(secret=b"s" * 32, data_dir=str(tmp_path))


@pytest.mark.parametrize("segment", [1, 7, 100, trust.SEGMENT_PIECES])
def test_the_signature_is_the_notarys_whatever_the_segments(notary, monkeypatch, segment):
    text = _notebook(120)
    monkeypatch.setattr(trust, "SEGMENT_PIECES", segment)
    ours = NotebookTrust(SimpleNamespace(notary=notary))
    expected = notary.compute_signature(nbformat.reads(text, as_version=4))
    assert ours.signature(NotebookDocument.parse(text).data) == expected


@pytest.mark.parametrize("feed", [64, 1000, trust.FEED_CHARS])
def test_the_signature_of_a_large_cell_is_the_notarys_however_it_is_fed(notary, monkeypatch, feed):
    # A cell with many output lines (taken as one list) and an image longer than a feed (cut).
    nb = nbformat.reads(_notebook(3), as_version=4)
    lines = "".join(f"line {i} é\n" for i in range(3000))
    image = "iVBO" * 20_000
    nb.cells[1].outputs.append(new_output("stream", name="stderr", text=lines))
    nb.cells[1].outputs.append(new_output("display_data", data={"image/png": image}))
    text = nbformat.writes(nb)
    monkeypatch.setattr(trust, "FEED_CHARS", feed)
    monkeypatch.setattr(trust, "SEGMENT_PIECES", 500)
    ours = NotebookTrust(SimpleNamespace(notary=notary))
    expected = notary.compute_signature(nbformat.reads(text, as_version=4))
    assert ours.signature(NotebookDocument.parse(text).data) == expected


def test_segments_are_digested_on_another_thread_in_order(notary, monkeypatch):
    text = _notebook(60)
    monkeypatch.setattr(trust, "SEGMENT_PIECES", 5)
    threads: set[str] = set()
    submit = trust._DIGESTER.submit

    def recording_submit(fn, *args):
        def run():
            threads.add(threading.current_thread().name)
            return fn(*args)

        return submit(run)

    monkeypatch.setattr(trust._DIGESTER, "submit", recording_submit)
    ours = NotebookTrust(SimpleNamespace(notary=notary))
    expected = notary.compute_signature(nbformat.reads(text, as_version=4))
    assert ours.signature(NotebookDocument.parse(text).data) == expected
    assert threads and all(name.startswith("xcsh-signature") for name in threads)


def test_a_value_without_utf8_form_gives_no_signature(notary, monkeypatch):
    monkeypatch.setattr(trust, "SEGMENT_PIECES", 1)
    text = _notebook(10).replace("Überschrift 0", "\\ud800 lone")
    assert (
        NotebookTrust(SimpleNamespace(notary=notary)).signature(NotebookDocument.parse(text).data)
        is None
    )

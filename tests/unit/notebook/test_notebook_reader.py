"""The read view: agent-friendly, rich outputs described not inlined, bounded by a budget."""

from __future__ import annotations

import base64

import nbformat
import pytest

from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.notebook.edit.cells import parse_request
from jupyter_xcsh.notebook.reader import ReadLimits, read_view
from jupyter_xcsh.notebook.storage.document import NotebookDocument
from tests.support.notebooks import PNG_1x1, jupyter_text, sample_notebook


def _read(nb, limits=None, **body):
    doc = NotebookDocument.parse(jupyter_text(nb))
    request = parse_request({"action": "read", "notebook_path": "a.ipynb", **body})
    return read_view(doc, request, limits or ReadLimits())


def test_read_shows_index_id_type_source_and_output_summaries():
    nb = sample_notebook()
    result = _read(nb)
    text = result["text"]
    assert text.startswith("Notebook a.ipynb · nbformat 4.5 · 4 cells · showing cells 0-3\n")
    assert f"--- cell 1 · code · id {nb.cells[1].id} · [3] ---\nx = 1\nprint(x)" in text
    assert "[stdout] 1" in text
    assert "[execute_result] 1" in text
    png_bytes = len(base64.b64decode(PNG_1x1))
    assert f"[image/png {png_bytes}B, 1x1 not shown]" in text
    assert PNG_1x1 not in text
    assert [c["cellType"] for c in result["details"]["cells"]] == [
        "markdown",
        "code",
        "code",
        "raw",
    ]
    assert result["details"]["truncated"] is False


def test_html_and_json_outputs_are_described_never_inlined():
    nb = sample_notebook()
    nb.cells[2].outputs[0]["data"] = nbformat.from_dict(
        {"text/html": "<table>" + "x" * (5120 - 15) + "</table>"}
    )
    text = _read(nb)["text"]
    assert "[text/html 5.0KB not shown]" in text
    assert "<table>" not in text


def test_a_budget_stops_at_a_cell_boundary_with_a_notice_saying_where_to_continue():
    nb = sample_notebook()
    nb.cells = [nb.cells[0].copy() for _ in range(50)]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"
        cell["source"] = "y" * 100
    result = _read(nb, max_chars=1000)
    details = result["details"]
    assert details["truncated"] is True
    assert 0 < details["endIndex"] < 50
    assert len(result["text"]) < 1200
    end = details["endIndex"]
    assert result["text"].endswith(
        f"[Showing cells 0-{end - 1} of 50 (1000 character budget). Continue with cell_index={end}]"
    )
    following = _read(nb, max_chars=1000, cell_index=end)
    assert following["details"]["startIndex"] == end


def test_a_range_reads_only_those_cells():
    result = _read(sample_notebook(), cell_index=1, end_index=3)
    assert [c["index"] for c in result["details"]["cells"]] == [1, 2]
    assert "--- cell 0" not in result["text"] and "--- cell 3" not in result["text"]


def test_huge_sources_and_outputs_are_clipped_in_the_middle():
    nb = sample_notebook()
    nb.cells[1].source = "a" * 10000 + "END"
    nb.cells[1].outputs[0]["text"] = "b" * 10000
    text = _read(nb, ReadLimits(max_source_chars=200, max_output_chars=200))["text"]
    assert "characters omitted" in text and "END" in text
    assert len(text) < 2000


def test_an_end_before_the_start_is_refused():
    with pytest.raises(InvalidRequestError):
        _read(sample_notebook(), cell_index=3, end_index=1)


def test_ansi_escapes_in_tracebacks_are_removed():
    nb = sample_notebook()
    error = {"output_type": "error", "ename": "\x1b[31mValueError\x1b[0m", "evalue": "bad"}
    nb.cells[1].outputs = [nbformat.from_dict({**error, "traceback": []})]
    text = _read(nb)["text"]
    assert "[error] ValueError: bad" in text and "\x1b" not in text


def test_a_read_with_images_leaves_a_placeholder_per_image_and_collects_them():
    nb = sample_notebook()
    svg = "<svg xmlns='http://www.w3.org/2000/svg' width='2' height='2'/>"
    # One figure offered as PNG and SVG is one image; an SVG alone is one too.
    nb.cells[1].outputs.append(
        nbformat.v4.new_output(
            "display_data", data={"image/svg+xml": svg, "image/png": PNG_1x1, "text/plain": "f"}
        )
    )
    nb.cells[2].outputs.append(nbformat.v4.new_output("display_data", data={"image/svg+xml": svg}))

    result = _read(nb, images=True)

    images = result["images"]
    assert [(i.cell_index, i.mime_type) for i in images] == [
        (1, "image/png"),
        (2, "image/png"),
        (2, "image/svg+xml"),
    ]
    assert images[0].value == PNG_1x1 and "".join(images[2].value) == svg
    text = result["text"]
    assert "[stdout] 1\n[display_data] f\n\ue0000\ue001" in text
    assert "[display_data] <Fig>\n\ue0001\ue001\n[display_data] \ue0002\ue001" in text
    assert "not shown" not in text and PNG_1x1 not in text
    # Without images, the view is as it always was, and has no images.
    assert "images" not in _read(nb)


def test_a_read_with_images_collects_only_the_cells_it_shows():
    nb = sample_notebook()
    nb.cells = [nb.cells[2].copy() for _ in range(30)]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"

    result = _read(nb, images=True, max_chars=600)

    shown = result["details"]["endIndex"]
    assert 0 < shown < 30
    assert [i.cell_index for i in result["images"]] == list(range(shown))

"""Notebook builders shared by the tests."""

from __future__ import annotations

import base64
import json
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

# A 1x1 transparent PNG.
PNG_1x1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6300010000050001a5f645400000000049454e44ae426082"
    )
).decode()


def sample_notebook(minor: int = 5) -> Any:
    """A small notebook with code (with outputs), markdown and raw cells."""
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Title\nSome text"),
            new_code_cell(
                "x = 1\nprint(x)",
                execution_count=3,
                outputs=[new_output("stream", name="stdout", text="1\n")],
            ),
            new_code_cell(
                "x",
                execution_count=4,
                outputs=[
                    new_output("execute_result", data={"text/plain": "1"}, execution_count=4),
                    new_output("display_data", data={"image/png": PNG_1x1, "text/plain": "<Fig>"}),
                ],
            ),
            new_raw_cell("raw text"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    return nb


def jupyter_text(nb: Any) -> str:
    """The text Jupyter itself writes for ``nb``."""
    return nbformat.writes(nb) + "\n"


def load(text: str) -> Any:
    """Parse notebook text, validating it against the nbformat schema."""
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


def raw_cells(text: str) -> list[Any]:
    """The cells of notebook text, exactly as stored (no nbformat normalisation)."""
    return json.loads(text)["cells"]  # type: ignore[no-any-return]


def cell_texts(text: str) -> list[str]:
    """The exact text of each element of the ``cells`` array of notebook ``text``."""
    decoder = json.JSONDecoder()
    index = text.index("[", text.index('"cells"'))
    texts: list[str] = []
    while True:
        index = len(text) - len(text[index + 1 :].lstrip())
        if text[index] == "]":
            return texts
        _, end = decoder.raw_decode(text, index)
        texts.append(text[index:end])
        index = len(text) - len(text[end:].lstrip())
        if text[index] == "]":
            return texts

"""A read with ``images: true``: the image outputs of the cells read, as the python tool returns
images (docs/developers/contract.md §2.9, §7.5), over REST and MCP."""

from __future__ import annotations

import base64

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests.support.images import png
from tests.support.mcp_client import TRANSPORTS, call_tool
from tests.support.notebooks import jupyter_text
from tests.support.openapi_check import assert_response_matches

SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='4' height='3'/>"


def figure(width, height, seed=0):
    """A display_data output of a PNG of that size, with its text."""
    data = base64.b64encode(png(width, height, seed)).decode()
    return new_output("display_data", data={"image/png": data, "text/plain": "<Figure>"})


@pytest.fixture
def plots(jp_root_dir):
    """A notebook of six figures in four cells, an SVG drawing, and text around them."""
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Plots", id="m0"),
            new_code_cell("plot(1)", id="c1", execution_count=1, outputs=[figure(30, 20)]),
            new_code_cell(
                "plot(2, 3)",
                id="c2",
                execution_count=2,
                outputs=[
                    new_output("stream", name="stdout", text="two plots\n"),
                    figure(40, 30, 1),
                    figure(50, 40, 2),
                ],
            ),
            new_code_cell(
                "draw()",
                id="c3",
                execution_count=3,
                outputs=[new_output("display_data", data={"image/svg+xml": SVG})],
            ),
            new_code_cell(
                "plot(4, 5, 6)",
                id="c4",
                execution_count=4,
                outputs=[figure(60, 50, 3), figure(70, 60, 4), figure(80, 70, 5)],
            ),
        ]
    )
    (jp_root_dir / "plots.ipynb").write_text(jupyter_text(nb), encoding="utf-8")
    return nb


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_read_returns_the_cells_images_within_the_image_budget(
    notebook_tool, transport, plots
):
    body = {"action": "read", "notebook_path": "plots.ipynb", "images": True}

    status, result = await notebook_tool(body)

    assert status == 200, result
    if transport == "rest":
        assert_response_matches("/api/xcsh/notebook", "post", 200, result)
    images = result["images"]
    assert [(i["width"], i["height"], i["omitted"]) for i in images] == [
        (30, 20, False),
        (40, 30, False),
        (50, 40, False),
        (4, 3, True),  # an SVG: never inlined
        (60, 50, False),
        (70, 60, True),  # past the 4 a result inlines
        (80, 70, True),
    ]
    assert all(i["artifactId"] for i in images)
    assert base64.b64decode(images[0]["data"]) == png(30, 20)
    text = result["text"]
    # Each image is named where its cell's output summary is, in order.
    summary = "[stdout] two plots\n[display_data] <Figure>\n[image 2: 40x30 PNG"
    assert f"plot(2, 3)\n>>> outputs (3):\n{summary}" in text
    assert f"[image 4 omitted (svg): artifact://{images[3]['artifactId']}]" in text
    assert f"[image 6 omitted (budget): artifact://{images[5]['artifactId']}]" in text
    assert "\ue000" not in text and "not shown" not in text


async def test_over_mcp_the_images_are_image_content(jp_fetch, plots):
    arguments = {"action": "read", "notebook_path": "plots.ipynb", "images": True, "cell_index": 2}

    result = await call_tool(jp_fetch, "notebook", arguments)

    images = [c for c in result["content"] if c["type"] == "image"]
    assert [base64.b64decode(c["data"]) for c in images] == [
        png(40, 30, 1),
        png(50, 40, 2),
        png(60, 50, 3),
        png(70, 60, 4),
    ]
    assert all(c["mimeType"] == "image/png" for c in images)
    text = result["content"][0]["text"]
    assert "[image 1: 40x30 PNG" in text and "plot(1)" not in text  # from cell 2 on


async def test_a_read_without_images_describes_them_as_before(notebook_tool, plots):
    status, result = await notebook_tool({"action": "read", "notebook_path": "plots.ipynb"})

    assert status == 200 and "images" not in result
    assert "[image/png 601B, 70x60 not shown]" in result["text"]
    assert "[image 1" not in result["text"]

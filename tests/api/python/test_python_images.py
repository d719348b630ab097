"""Images displayed by python tool calls on real kernels: artifacts and the inline budget (§8).

The kernel builds its images with zlib alone. Pillow matters only in the server: the ``pillow``
tests run where the ``images`` extra is installed (``.venv-images`` in ``scripts/check.sh``),
the ``without_pillow`` ones where it is not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from jupyter_xcsh.outputs.imageinfo import image_size
from jupyter_xcsh.outputs.sizes import format_size
from tests.support.images import KERNEL_HELPERS, SVG_200x100
from tests.support.python_tool import REQUEST_TIMEOUT, run

pytestmark = pytest.mark.timeout(300)

MiB = 1024 * 1024

#: A 4000x3000 gradient, displayed; its sha256 printed so the artifact can be compared.
LARGE_PNG = "data = png(4000, 3000)\nshow(data)\nprint(len(data), hashlib.sha256(data).hexdigest())"


async def define_helpers(jp_fetch, **options):
    result = await run(jp_fetch, KERNEL_HELPERS, **options)
    assert result["isError"] is False, result["text"]


async def artifact(jp_fetch, artifact_id):
    response = await jp_fetch(
        "api", "xcsh", "artifacts", artifact_id, request_timeout=REQUEST_TIMEOUT
    )
    return response.headers["Content-Type"], response.body


def printed(result):
    size, digest = result["cells"][0]["output"].split()[-2:]
    return int(size), digest


@pytest.mark.slow
async def test_an_image_is_inlined_named_in_the_text_and_kept_as_an_artifact(jp_fetch):
    await define_helpers(jp_fetch)
    result = await run(jp_fetch, "data = png(64, 48)\nshow(data)\nprint(len(data))")

    (image,) = result["images"]
    data = base64.b64decode(image["data"])
    assert image == {
        "mimeType": "image/png",
        "data": image["data"],
        "width": 64,
        "height": 48,
        "bytes": len(data),
        "artifactId": image["artifactId"],
        "omitted": False,
    }
    assert image_size(data) == (64, 48)
    assert result["text"] == f"<image>\n{len(data)}\n[image 1: 64x48 PNG, {format_size(len(data))}]"
    assert await artifact(jp_fetch, image["artifactId"]) == ("image/png", data)


@pytest.mark.pillow
async def test_with_pillow_a_4000x3000_png_is_inlined_downscaled_and_kept_whole(jp_fetch):
    await define_helpers(jp_fetch)
    result = await run(jp_fetch, LARGE_PNG, timeout=120)

    (image,) = result["images"]
    inline = base64.b64decode(image["data"])
    width, height = image["width"], image["height"]
    assert image["omitted"] is False
    assert max(width, height) <= 1568 and width * height <= 1_150_000
    assert image_size(inline) == (width, height) and width / height == pytest.approx(4 / 3, 0.01)
    assert image["bytes"] == len(inline) <= MiB
    size, digest = printed(result)
    assert image["original"] == {
        "mimeType": "image/png",
        "width": 4000,
        "height": 3000,
        "bytes": size,
    }
    marker = re.search(r"\[image 1: (\d+)x(\d+) PNG, [^\]]*\]", result["text"])
    assert marker is not None and (int(marker[1]), int(marker[2])) == (width, height)
    assert f"downscaled from 4000x3000; original: artifact://{image['artifactId']}]" in marker[0]
    content_type, body = await artifact(jp_fetch, image["artifactId"])
    assert content_type == "image/png"
    assert (len(body), hashlib.sha256(body).hexdigest()) == (size, digest)


@pytest.mark.slow
@pytest.mark.without_pillow
async def test_without_pillow_a_4000x3000_png_is_not_inlined_but_kept_whole(jp_fetch):
    await define_helpers(jp_fetch)
    result = await run(jp_fetch, LARGE_PNG, timeout=120)

    (image,) = result["images"]
    size, digest = printed(result)
    assert image == {
        "mimeType": "image/png",
        "width": 4000,
        "height": 3000,
        "bytes": size,
        "artifactId": image["artifactId"],
        "omitted": True,
    }
    assert result["text"].endswith(f"[image 1 omitted (budget): artifact://{image['artifactId']}]")
    _, body = await artifact(jp_fetch, image["artifactId"])
    assert (len(body), hashlib.sha256(body).hexdigest()) == (size, digest)


@pytest.mark.slow
async def test_six_figures_inline_four_and_link_two(jp_fetch):
    await define_helpers(jp_fetch)
    code = "for i in range(6):\n    show(png(40, 30, seed=40 * i))"
    result = await run(jp_fetch, code)

    images = result["images"]
    assert [i["omitted"] for i in images] == [False] * 4 + [True] * 2
    assert all("data" in i for i in images[:4]) and not any("data" in i for i in images[4:])
    assert len({i["artifactId"] for i in images}) == 6
    markers = [line for line in result["text"].splitlines() if line.startswith("[image ")]
    assert markers[:4] == [
        f"[image {k}: 40x30 PNG, {format_size(images[k - 1]['bytes'])}]" for k in range(1, 5)
    ]
    assert markers[4:] == [
        f"[image {k} omitted (budget): artifact://{images[k - 1]['artifactId']}]" for k in (5, 6)
    ]
    for image in images:  # every figure is kept whole, inlined or not
        _, body = await artifact(jp_fetch, image["artifactId"])
        assert image_size(body) == (40, 30) and len(body) == image["bytes"]


@pytest.mark.slow
async def test_a_results_inline_images_stay_within_4_mib(jp_fetch):
    # Random pixels do not compress: each PNG is about 0.9 MiB, under the 1 MiB of one image.
    await define_helpers(jp_fetch)
    code = "for i in range(5):\n    show(png(560, 560, level=0, noise=True))"
    result = await run(jp_fetch, code, timeout=120)

    inline = [base64.b64decode(i["data"]) for i in result["images"] if not i["omitted"]]
    assert len(inline) == 4
    assert all(0.85 * MiB < len(data) <= MiB for data in inline)
    assert sum(len(data) for data in inline) <= 4 * MiB
    assert [i["omitted"] for i in result["images"]] == [False] * 4 + [True]


async def test_images_are_numbered_across_cells_and_named_in_their_cell(jp_fetch):
    await define_helpers(jp_fetch)
    result = await run(jp_fetch, "show(png(8, 8))", "print('no image')", "show(png(9, 9))")

    first, last = result["images"]
    assert result["text"] == (
        f"[1/3]\n<image>\n[image 1: 8x8 PNG, {format_size(first['bytes'])}]\n\n"
        "[2/3]\nno image\n\n"
        f"[3/3]\n<image>\n[image 2: 9x9 PNG, {format_size(last['bytes'])}]"
    )


@pytest.mark.slow
async def test_svg_gif_and_a_figure_in_two_formats(jp_fetch):
    await define_helpers(jp_fetch)
    code = (
        f"show({SVG_200x100!r}.encode(), 'image/svg+xml')\n"
        "show(base64.b64decode('R0lGODlhAwACAIAAAAAAAP///yH5BAAAAAAALAAAAAADAAIAAAICjF8AOw=='),"
        " 'image/gif')\n"
        "from IPython.display import display\n"
        "display({'image/png': base64.b64encode(png(5, 5)).decode(),"
        " 'image/svg+xml': '<svg/>'}, raw=True)"
    )
    result = await run(jp_fetch, code)

    svg, gif, figure = result["images"]
    assert (svg["mimeType"], svg["omitted"], svg["width"], svg["height"]) == (
        "image/svg+xml",
        True,
        200,
        100,
    )
    assert f"[image 1 omitted (svg): artifact://{svg['artifactId']}]" in result["text"]
    content_type, body = await artifact(jp_fetch, svg["artifactId"])
    assert (content_type, body.decode()) == ("image/svg+xml", SVG_200x100)
    response = await jp_fetch("api", "xcsh", "artifacts", svg["artifactId"])
    assert "sandbox" in response.headers["Content-Security-Policy"]
    assert (gif["mimeType"], gif["width"], gif["height"], gif["omitted"]) == (
        "image/gif",
        3,
        2,
        False,
    )
    assert (await artifact(jp_fetch, gif["artifactId"]))[0] == "image/gif"
    assert figure["mimeType"] == "image/png" and len(result["images"]) == 3


async def test_lines_of_an_image_artifact_are_a_400(jp_fetch):
    await define_helpers(jp_fetch)
    result = await run(jp_fetch, "show(png(4, 4))")
    artifact_id = result["images"][0]["artifactId"]
    with pytest.raises(Exception) as caught:
        await jp_fetch("api", "xcsh", "artifacts", artifact_id, params={"offset": "1"})
    assert caught.value.code == 400
    assert json.loads(caught.value.response.body)["message"] == (
        f"Artifact {artifact_id} is an image: it has no lines"
    )


async def test_streamed_displays_carry_the_image_and_its_artifact(jp_fetch):
    await define_helpers(jp_fetch)
    response = await jp_fetch(
        "api",
        "xcsh",
        "python",
        method="POST",
        body=json.dumps({"cells": [{"code": "show(png(6, 4))"}]}),
        headers={"Accept": "application/x-ndjson"},
        request_timeout=REQUEST_TIMEOUT,
    )
    lines = [json.loads(line) for line in response.body.decode().splitlines()]
    (display,) = [line for line in lines if line["type"] == "display"]
    image = lines[-1]["result"]["images"][0]
    assert display["kind"] == "image"
    assert display["data"] == {
        "mimeType": "image/png",
        "data": image["data"],
        "width": 6,
        "height": 4,
        "bytes": image["bytes"],
        "artifactId": image["artifactId"],
        "artifactPath": f".xcsh-artifacts/{image['artifactId']}.python.png",
    }

"""Image sizes from headers, image artifacts and the inline budget (pure parts, no server)."""

from __future__ import annotations

import asyncio
import base64
import io
import os

import pytest

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.outputs.imageinfo import image_size, svg_size
from jupyter_xcsh.outputs.images import ImageCapture, ImageLimits, budget_images, pick_image
from jupyter_xcsh.outputs.sizes import format_size
from jupyter_xcsh.tools import ArtifactTool, Caller
from tests.support.images import (
    GIF_3x2,
    JPEG_640x480,
    SVG_200x100,
    WEBP_VP8_300x200,
    WEBP_VP8L_300x200,
    WEBP_VP8X_300x200,
    png,
)


@pytest.fixture
def store(tmp_path) -> ArtifactStore:
    return ArtifactStore(str(tmp_path))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (png(7, 5), (7, 5)),
        (GIF_3x2, (3, 2)),
        (JPEG_640x480, (640, 480)),
        (WEBP_VP8_300x200, (300, 200)),
        (WEBP_VP8L_300x200, (300, 200)),
        (WEBP_VP8X_300x200, (300, 200)),
    ],
    ids=["png", "gif", "jpeg", "webp-vp8", "webp-vp8l", "webp-vp8x"],
)
def test_pixel_sizes_are_read_from_the_header_of_each_format(data, size):
    assert image_size(data) == size


@pytest.mark.parametrize("data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff"])
def test_unreadable_headers_have_no_size(data):
    assert image_size(data) is None


def test_an_svg_size_is_its_root_width_and_height_in_pixels():
    assert svg_size(SVG_200x100.encode()) == (200, 100)
    assert svg_size(b'<svg viewBox="0 0 10 10"></svg>') is None


def test_a_bundle_offering_one_figure_in_several_formats_is_one_image():
    bundle = {"image/svg+xml": "<svg/>", "image/png": "AAAA", "text/plain": "<Figure>"}
    assert pick_image(bundle) == ("image/png", "AAAA")
    assert pick_image({"image/svg+xml": "<svg/>"}) == ("image/svg+xml", "<svg/>")
    assert pick_image({"text/plain": "x"}) is None


def test_every_captured_image_is_saved_whole_as_an_artifact_of_its_type(store):
    capture = ImageCapture(store, "python")
    data = png(20, 10)
    image = capture.capture(0, "image/png", b64(data))
    svg = capture.capture(1, "image/svg+xml", SVG_200x100)

    assert image is not None and svg is not None
    assert (image.width, image.height, image.size) == (20, 10, len(data))
    assert image.artifact_path == f".xcsh-artifacts/{image.artifact_id}.python.png"
    with store.open(image.artifact_id) as file:
        assert file.read() == data
    assert svg.artifact_path.endswith(".python.svg")
    assert (svg.width, svg.height) == (200, 100)
    assert {a.id: a.media_type for a in store.entries()} == {
        image.artifact_id: "image/png",
        svg.artifact_id: "image/svg+xml",
    }
    assert image.data is None  # kept on disk, not in memory


def test_image_artifacts_are_pruned_like_output_artifacts(store):
    image = ImageCapture(store).capture(0, "image/gif", b64(GIF_3x2))
    store.max_age = 1
    assert image is not None
    assert store.prune(now=10**12) == [image.artifact_id]


def budget(store, images, **limits):
    return asyncio.run(budget_images(images, store, ImageLimits(**limits)))


def test_images_within_the_budget_are_inlined_unchanged_and_named_in_order(store):
    capture = ImageCapture(store)
    data = png(30, 20)
    images = [
        capture.capture(0, "image/png", b64(data)),
        capture.capture(0, "image/gif", b64(GIF_3x2)),
    ]

    results = budget(store, images)

    assert [r.to_json() for r in results] == [
        {
            "mimeType": "image/png",
            "width": 30,
            "height": 20,
            "bytes": len(data),
            "artifactId": images[0].artifact_id,
            "omitted": False,
            "data": b64(data),
        },
        {
            "mimeType": "image/gif",
            "width": 3,
            "height": 2,
            "bytes": len(GIF_3x2),
            "artifactId": images[1].artifact_id,
            "omitted": False,
            "data": b64(GIF_3x2),
        },
    ]
    assert [r.marker() for r in results] == [
        f"[image 1: 30x20 PNG, {format_size(len(data))}]",
        f"[image 2: 3x2 GIF, {len(GIF_3x2)}B]",
    ]


def test_past_the_count_images_are_linked_not_inlined(store):
    capture = ImageCapture(store)
    images = [capture.capture(i, "image/png", b64(png(4, 4, seed=i))) for i in range(6)]

    results = budget(store, images)

    assert [r.omitted for r in results] == [None] * 4 + ["budget"] * 2
    assert "data" not in results[4].to_json()
    assert results[5].marker() == f"[image 6 omitted (budget): artifact://{images[5].artifact_id}]"


def test_the_total_inline_size_is_bounded_across_images(store):
    capture = ImageCapture(store)
    images = [capture.capture(0, "image/png", b64(png(40, 40, seed=i))) for i in range(3)]
    size = images[0].size

    results = budget(store, images, max_total_bytes=2 * size + 10)

    assert [r.omitted for r in results] == [None, None, "budget"]
    assert sum(r.size for r in results if r.omitted is None) <= 2 * size + 10


def test_svg_images_are_never_inlined(store):
    image = ImageCapture(store).capture(0, "image/svg+xml", SVG_200x100)
    (result,) = budget(store, [image])
    assert result.omitted == "svg"
    assert result.marker() == f"[image 1 omitted (svg): artifact://{image.artifact_id}]"


def test_an_image_whose_size_cannot_be_read_is_not_inlined(store):
    image = ImageCapture(store).capture(0, "image/jpeg", b64(b"\xff\xd8garbage"))
    (result,) = budget(store, [image])
    assert result.omitted == "budget"
    assert result.to_json()["width"] is None


@pytest.mark.without_pillow
def test_without_pillow_an_image_past_the_pixel_limits_is_only_linked(store):
    image = ImageCapture(store).capture(0, "image/png", b64(png(200, 100)))
    (result,) = budget(store, [image], max_edge=100)
    assert result.omitted == "budget"
    assert result.width == 200


@pytest.mark.pillow
def test_with_pillow_an_image_past_the_pixel_limits_is_downscaled(store):
    image = ImageCapture(store).capture(0, "image/png", b64(png(200, 100)))
    (result,) = budget(store, [image], max_edge=100)
    body = result.to_json()
    assert (result.omitted, result.width, result.height) == (None, 100, 50)
    assert body["original"] == {
        "mimeType": "image/png",
        "width": 200,
        "height": 100,
        "bytes": image.size,
    }
    assert image_size(base64.b64decode(body["data"])) == (100, 50)
    assert result.marker().startswith("[image 1: 100x50 PNG, ")
    assert result.marker().endswith(
        f", downscaled from 200x100; original: artifact://{image.artifact_id}]"
    )


@pytest.mark.pillow
def test_with_pillow_an_image_too_large_in_bytes_is_re_encoded_within_the_limit(store):
    from PIL import Image

    noise = Image.frombytes("RGB", (300, 300), os.urandom(300 * 300 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, "PNG")
    image = ImageCapture(store).capture(0, "image/png", b64(buffer.getvalue()))
    (result,) = budget(store, [image], max_bytes=100_000)
    assert result.omitted is None
    assert result.size <= 100_000
    assert result.mime_type == "image/jpeg"


def test_an_image_artifact_read_through_the_artifact_tool_is_described(store):
    image = ImageCapture(store).capture(0, "image/png", b64(png(64, 48)))
    tool = ArtifactTool(store)
    result = asyncio.run(tool.call({"id": f"artifact://{image.artifact_id}"}, Caller.trusted()))
    assert result["details"] == {
        "artifactId": image.artifact_id,
        "mimeType": "image/png",
        "width": 64,
        "height": 48,
        "bytes": image.size,
    }
    assert result["text"].startswith(f"artifact://{image.artifact_id} is an image (64x48 PNG, ")


def test_the_package_has_one_size_formatter():
    from jupyter_xcsh.notebook import reader
    from jupyter_xcsh.outputs import sink

    assert reader.format_size is sink.format_size is format_size

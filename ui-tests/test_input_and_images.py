"""What the agent sees, seen by a person (docs/developers/contract.md §8, §7.5): prompts, images."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.images import KERNEL_HELPERS

#: First python call of a session starts its kernel: allow for a slow machine.
KERNEL_START = 60000


def python_calls(panel):
    return panel.locator('.jp-xcsh-Call[data-kind="python"]')


def test_a_person_answers_an_agents_input_from_the_activity_panel(lab, lab_page):
    lab_page.open()
    panel = lab_page.open_activity()
    code = "print('Which dataset?', flush=True)\nname = input('name? ')\nprint('hello', name)"
    # The agent asks: its call returns at the first prompt, the kernel keeps waiting.
    waiting = lab.python([{"code": code}], session="ui-ask", stdin="ask", timeout=60).result(120)
    prompt = waiting["awaitingInput"]
    assert prompt["prompt"] == "name? " and prompt["password"] is False

    call = python_calls(panel).first
    form = call.locator("form.jp-xcsh-InputPrompt")
    expect(form).to_be_visible(timeout=KERNEL_START)
    expect(form).to_contain_text("The code waits for input: name?")
    expect(call.locator(".jp-xcsh-Output")).to_contain_text("Which dataset?")
    lab_page.screenshot("waiting")

    field = form.locator("input")
    field.fill("Ada")
    field.press("Enter")

    expect(call).to_have_attribute("data-status", "ok", timeout=30000)
    expect(call.locator("form.jp-xcsh-InputPrompt")).to_have_count(0)
    expect(call.locator(".jp-xcsh-Output")).to_contain_text("hello Ada")
    lab_page.screenshot("answered")
    # The agent's call completed with the person's answer.
    result = lab.api("GET", f"api/xcsh/runs/{prompt['runId']}")
    assert result["isError"] is False and "awaitingInput" not in result
    assert result["text"] == "Which dataset?\nname? Ada\nhello Ada"


def test_images_show_as_thumbnails_that_open_the_whole_image(lab, lab_page):
    lab_page.open()
    panel = lab_page.open_activity()
    code = KERNEL_HELPERS + "show(png(640, 480))"
    result = lab.python([{"code": code}], session="ui-images").result(120)
    (image,) = result["images"]
    name = f"{image['artifactId']}.python.png"

    call = python_calls(panel).first
    expect(call).to_have_attribute("data-status", "ok", timeout=KERNEL_START)
    # A finished call is one line: a click on it shows its output.
    call.locator(".jp-xcsh-CallHeader .jp-xcsh-Time").click()
    thumbnail = call.locator("img.jp-xcsh-Thumbnail")
    expect(thumbnail).to_be_visible(timeout=KERNEL_START)
    expect(call.locator(".jp-xcsh-ImageCaption")).to_have_text(
        re.compile(r"^640x480 PNG, [0-9.]+ (B|KiB)$")
    )
    assert thumbnail.evaluate("img => img.naturalWidth") == 640
    assert thumbnail.bounding_box()["width"] <= 240  # a thumbnail, not the whole image
    lab_page.screenshot("thumbnail")

    call.locator("button.jp-xcsh-ImageLink").click()
    page = lab_page.page
    current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
    expect(current).to_contain_text(name)
    # The lab's own artifact view (artifacts live in a hidden folder the file viewers do not
    # open), showing the whole image.
    whole = page.locator("#jp-main-dock-panel .jp-xcsh-ArtifactView img.jp-xcsh-ArtifactImage")
    expect(whole.first).to_be_visible()
    assert whole.first.evaluate("img => img.naturalWidth") == 640
    lab_page.screenshot("opened")


def test_a_thumbnail_fits_the_panel_at_its_default_width(lab, lab_page):
    lab_page.open()
    panel = lab_page.open_activity()
    lab.python([{"code": KERNEL_HELPERS + "show(png(640, 480))"}], session="ui-images").result(120)

    call = python_calls(panel).first
    expect(call).to_have_attribute("data-status", "ok", timeout=KERNEL_START)
    call.locator(".jp-xcsh-CallHeader .jp-xcsh-Time").click()  # expanded from its line
    cell = call.locator(".jp-xcsh-Cell")
    expect(cell.locator("img.jp-xcsh-Thumbnail")).to_be_visible(timeout=KERNEL_START)
    lab_page.screenshot("fits")
    box, frame = cell.locator(".jp-xcsh-ImageLink").bounding_box(), cell.bounding_box()
    assert box["x"] + box["width"] <= frame["x"] + frame["width"]
    # Nothing scrolls sideways in the panel.
    assert panel.evaluate(
        "p => [p, ...p.querySelectorAll('*')].every(e => e.scrollWidth <= e.clientWidth"
        " || !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))"
    )

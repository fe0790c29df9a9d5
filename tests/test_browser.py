"""The UI in a real browser: Playwright for Python driving Debian's Chromium (never a browser
download), against the launched app on the micro checkpoint.

Needs `/usr/bin/chromium` (`apt-get install chromium`; `.ci/run` installs it) and the
`playwright` package (requirements-test.txt); skipped with the reason otherwise.
"""

import io
import os
import re

import numpy as np
import pytest
from PIL import Image

import overlays

CHROMIUM = "/usr/bin/chromium"
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.set_default_timeout(60_000)
            yield tab
        finally:
            browser.close()


def open_app(page, server, tab_name: str) -> None:
    page.goto(server)
    page.get_by_role("tab", name=tab_name).click()


def element_pixels(locator) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(locator.screenshot())).convert("RGB")).astype(int)


def loaded(page, selector: str) -> None:
    """Wait until the image `selector` shows a decoded picture, and the layout has settled."""
    page.wait_for_function("(s) => { const i = document.querySelector(s); "
                           "return i && i.complete && i.naturalWidth > 0 && !i.src.startsWith('blob:'); }",
                           arg=selector)
    page.wait_for_timeout(300)


def click_at(locator, fx: float, fy: float) -> None:
    """Click at a fraction of the element's current size (measured just before the click)."""
    box = locator.bounding_box()
    locator.click(position={"x": box["width"] * fx, "y": box["height"] * fy})


def wait_for_text(locator, pattern: str, timeout_s: float = 60) -> str:
    """The element's text once it matches `pattern` (gradio fills outputs asynchronously)."""
    locator.page.wait_for_function(
        "([el, re]) => new RegExp(re).test(el.innerText)", arg=[locator.element_handle(), pattern],
        timeout=timeout_s * 1000)
    return locator.inner_text()


def test_image_click_draws_the_mask_and_the_click_where_it_landed(page, server):
    open_app(page, server, "Images")
    page.locator("input[type=file]").first.set_input_files(os.path.join(EXAMPLES, "shapes.png"))
    canvas = page.locator("#image-canvas img")
    loaded(page, "#image-canvas img")
    before = element_pixels(canvas)
    fx, fy = 0.25, 0.35  # on the red disc
    click_at(canvas, fx, fy)
    objects = page.locator("#image-objects")
    assert "#0" in wait_for_text(objects, r"#0")
    loaded(page, "#image-canvas img")
    after = element_pixels(canvas)
    assert after.shape == before.shape
    assert np.abs(after - before).mean() > 5  # the mask overlay changed the picture
    # the include marker is drawn where the click landed (display and image pixels agree to within
    # the browser's rounding): its colour is found within 2 pixels of the click
    cy, cx = round(fy * after.shape[0]), round(fx * after.shape[1])
    window = after[cy - 2:cy + 3, cx - 2:cx + 3]
    assert np.abs(window - np.array(overlays.INCLUDE_COLOUR)).max(axis=-1).min() <= 30, window

    page.get_by_role("button", name="New object").click()
    click_at(canvas, 0.6, 0.7)  # the rectangle
    text = wait_for_text(objects, r"#1")
    assert "#0" in text and "#1" in text


def test_video_pick_track_and_play(page, server):
    open_app(page, server, "Videos")
    page.locator("#video-input input[type=file]").set_input_files(os.path.join(EXAMPLES, "moving_shapes.webm"))
    canvas = page.locator("#video-canvas img")
    loaded(page, "#video-canvas img")
    click_at(canvas, 0.25, 0.35)
    wait_for_text(page.locator("#video-objects"), r"#0")
    page.locator("#track-button").click()
    page.wait_for_function(
        "() => { const v = document.querySelector('#video-output video');"
        " return v && v.readyState >= 1 && isFinite(v.duration) && v.duration > 0; }", timeout=180_000)
    duration = page.evaluate("() => document.querySelector('#video-output video').duration")
    assert duration > 0
    listed = page.locator("#video-detections")
    page.locator("#video-detections").click()  # expand the collapsed JSON
    text = wait_for_text(listed, r'"frame"')
    frames = {int(f) for f in re.findall(r'"frame"\s*:\s*(\d+)', text)}
    assert frames == set(range(40)), sorted(frames)


def test_everything_click_selects_a_mask_and_shows_its_numbers(page, server):
    open_app(page, server, "Everything")
    page.locator("input[type=file]").last.set_input_files(os.path.join(EXAMPLES, "shapes.png"))
    page.get_by_text("Thresholds and limits").click()
    for label, value in (("Points per side", "2"), ("Predicted IoU threshold", "0"), ("Stability score threshold", "0")):
        field = page.get_by_label(label)
        field.fill(value)
        field.press("Tab")
    page.get_by_role("button", name="Segment everything").click()
    canvas = page.locator("#everything-canvas img")
    loaded(page, "#everything-canvas img")
    picked = page.locator("#everything-picked")
    text = picked.inner_text()
    for fx, fy in ((0.25, 0.35), (0.5, 0.5), (0.7, 0.3), (0.1, 0.9)):  # random weights: masks have holes
        click_at(canvas, fx, fy)
        page.wait_for_function("([el, before]) => el.innerText !== before && /\"picked\"/.test(el.innerText)",
                               arg=[picked.element_handle(), text])
        text = picked.inner_text()
        if re.search(r'"picked"\s*:\s*\d', text):
            break
    assert re.search(r'"area"\s*:\s*\d+', text) and re.search(r'"predicted_iou"', text), text

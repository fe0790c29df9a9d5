"""Take the README's screenshots of each tab with Playwright and Debian's Chromium.

    python docs/screenshots.py

Builds the micro random-weights test checkpoint in a temporary directory (no weights are
downloaded), launches the app on it, drives each tab as a person would, and writes
docs/images.png, docs/videos.png and docs/everything.png. With random weights the masks are
noise: the screenshots show the interface, not SAM 2's quality.
"""

import os
import re
import socket
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
HERE = os.path.join(ROOT, "docs")
CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    from micro import build_checkpoint

    with tempfile.TemporaryDirectory() as work:
        os.environ.update(SAM2_MODEL=build_checkpoint(work), HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
        import app
        from playwright.sync_api import sync_playwright

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        app.demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_kwargs())
        url = f"http://127.0.0.1:{port}/"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                     args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                page.set_default_timeout(120_000)
                shoot_images(page, url)
                shoot_videos(page, url)
                shoot_everything(page, url)
                browser.close()
        finally:
            app.demo.close()


def click_at(locator, fx: float, fy: float) -> None:
    box = locator.bounding_box()
    locator.click(position={"x": box["width"] * fx, "y": box["height"] * fy})


def settle(page, selector: str, pattern: str) -> None:
    page.wait_for_function("([s, re]) => new RegExp(re).test(document.querySelector(s).innerText)",
                           arg=[selector, pattern])
    page.wait_for_timeout(800)


def shoot_images(page, url: str) -> None:
    page.goto(url)
    page.locator("input[type=file]").first.set_input_files(os.path.join(ROOT, "examples", "shapes.png"))
    canvas = page.locator("#image-canvas img")
    canvas.wait_for()
    click_at(canvas, 0.25, 0.35)
    settle(page, "#image-objects", "#0")
    page.get_by_role("button", name="New object").click()
    page.get_by_label("Box (two corners)").check()
    click_at(canvas, 0.53, 0.53)
    click_at(canvas, 0.73, 0.8)
    settle(page, "#image-objects", "#1")
    page.screenshot(path=os.path.join(HERE, "images.png"))


def shoot_videos(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("tab", name="Videos").click()
    page.locator("#video-input input[type=file]").set_input_files(
        os.path.join(ROOT, "examples", "moving_shapes.webm"))
    canvas = page.locator("#video-canvas img")
    canvas.wait_for()
    click_at(canvas, 0.25, 0.35)
    settle(page, "#video-objects", "#0")
    page.locator("#track-button").click()
    page.wait_for_function("() => { const v = document.querySelector('#video-output video');"
                           " return v && v.readyState >= 2 && v.duration > 0; }")
    page.evaluate("() => { const v = document.querySelector('#video-output video'); v.currentTime = v.duration / 2; }")
    page.wait_for_timeout(800)
    page.screenshot(path=os.path.join(HERE, "videos.png"), full_page=True)


def shoot_everything(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("tab", name="Everything").click()
    page.locator("input[type=file]").last.set_input_files(os.path.join(ROOT, "examples", "shapes.png"))
    page.get_by_text("Thresholds and limits").click()
    for label, value in (("Points per side", "4"), ("Predicted IoU threshold", "0"), ("Stability score threshold", "0")):
        field = page.get_by_label(label)
        field.fill(value)
        field.press("Tab")  # commit the value to gradio before the click
        page.wait_for_timeout(300)
    with page.expect_response(lambda r: "queue/data" in r.url):
        page.get_by_role("button", name="Segment everything").click()
    canvas = page.locator("#everything-canvas img")
    canvas.wait_for()
    page.wait_for_timeout(1500)
    for fx, fy in ((0.25, 0.35), (0.3, 0.4), (0.5, 0.5), (0.7, 0.3), (0.1, 0.9)):  # until one lands on a mask
        click_at(canvas, fx, fy)
        page.wait_for_timeout(1500)
        if re.search(r'"picked"\s*:\s*\d', page.locator("body").inner_text()):
            break
    page.screenshot(path=os.path.join(HERE, "everything.png"))


if __name__ == "__main__":
    main()

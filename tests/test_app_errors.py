"""Every bad input becomes a gr.Error naming the argument, and leaves no request files behind."""

import os

import gradio as gr
import numpy as np
import pytest
from PIL import Image

import app
import samv2_handler
from mask_codec import encode_png_b64
from micro import rect_mask

IMAGE = Image.fromarray(np.zeros((240, 320, 3), np.uint8))
BOX = [{"x0": 10, "y0": 10, "x1": 100, "y1": 100}]

IMAGE_CASES = {
    "no prompts": (dict(), "bboxes"),
    "points without labels": (dict(points=[{"x": 5, "y": 5}]), "point_labels"),
    "length mismatch": (dict(points=[{"x": 5, "y": 5}], point_labels=[1, 0]), "point_labels"),
    "malformed JSON": (dict(bboxes='[{"x0": 1'), "bboxes"),
    "inverted box": (dict(bboxes=[{"x0": 100, "y0": 10, "x1": 10, "y1": 100}]), "bboxes[0]"),
    "box outside": (dict(bboxes=[{"x0": 10, "y0": 10, "x1": 400, "y1": 100}]), "bboxes[0]"),
    "bad label": (dict(points=[{"x": 5, "y": 5}], point_labels=[3]), "point_labels[0]"),
    "unknown variant": (dict(variant="huge", bboxes=BOX), "variant"),
    "unknown output format": (dict(bboxes=BOX, output_format="svg"), "output_format"),
}


@pytest.mark.parametrize("case", list(IMAGE_CASES))
def test_process_image_bad_input(case, request_tmp):
    kwargs, argument = IMAGE_CASES[case]
    kwargs = {"variant": "tiny", **kwargs}
    with pytest.raises(gr.Error) as error:
        app.process_image(IMAGE, **kwargs)
    assert f"`{argument}`" in error.value.message
    assert not os.listdir(request_tmp)


def test_process_image_missing_and_oversized_image(monkeypatch):
    with pytest.raises(gr.Error, match="`im`: no image"):
        app.process_image(None, "tiny", BOX)
    monkeypatch.setenv("SAM2_MAX_IMAGE_PIXELS", "1000")
    with pytest.raises(gr.Error, match="`im`.*76800 pixels exceeds the limit of 1000"):
        app.process_image(IMAGE, "tiny", BOX)


def test_model_load_failure_is_a_user_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SAM2_MODEL", str(tmp_path / "missing"))
    with pytest.raises(gr.Error, match="Could not load SAM 2 variant 'tiny'.*Set SAM2_MODEL"):
        app.process_image(IMAGE, "tiny", BOX)


@pytest.fixture(scope="module")
def good_mask():
    return encode_png_b64(rect_mask(320, 240, (40, 30, 100, 90)))


def video_cases(good_mask, tmp_path):
    not_video = tmp_path / "notes.mp4"
    not_video.write_text("plain text, not a video\n" * 50)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    return {
        "no masks": (dict(masks=None), "masks"),
        "mask not decodable": (dict(masks=["%%%not-base64%%%"]), "masks[0]"),
        "mask wrong size": (dict(masks=[encode_png_b64(np.ones((10, 10), bool))]), "masks[0]"),
        "ref negative": (dict(ref_frame_idx=-1), "ref_frame_idx"),
        "ref past the end": (dict(ref_frame_idx=12), "ref_frame_idx"),
        "ref past the end after sampling": (dict(ref_frame_idx=3, every_x=4), "ref_frame_idx"),
        "sample_fps negative": (dict(sample_fps=-1.5), "sample_fps"),
        "every_x negative": (dict(every_x=-2), "every_x"),
        "empty video": (dict(video_path=str(empty)), "video_path"),
        "not a video": (dict(video_path=str(not_video)), "video_path"),
        "missing video": (dict(video_path=None), "video_path"),
        "bad device": (dict(video_load_device="tpu"), "video_load_device"),
        "unknown variant": (dict(variant="giant"), "variant"),
    }


@pytest.mark.parametrize("case", ["no masks", "mask not decodable", "mask wrong size", "ref negative",
                                  "ref past the end", "ref past the end after sampling",
                                  "sample_fps negative", "every_x negative", "empty video", "not a video",
                                  "missing video", "bad device", "unknown variant"])
def test_process_video_bad_input(case, good_mask, video_factory, tmp_path, request_tmp):
    kwargs, argument = video_cases(good_mask, tmp_path)[case]
    call = {"video_path": video_factory(320, 240, 12), "variant": "tiny", "masks": [good_mask], **kwargs}
    with pytest.raises(gr.Error) as error:
        app.process_video(**call)
    assert f"`{argument}`" in error.value.message, error.value.message
    assert not os.listdir(request_tmp)


def test_cuda_without_gpu(good_mask, video_factory, monkeypatch):
    monkeypatch.setattr(samv2_handler, "cuda_available", lambda: False)
    with pytest.raises(gr.Error, match="`video_load_device`.*no GPU"):
        app.process_video(video_factory(320, 240, 12), "tiny", [good_mask], video_load_device="cuda")


def test_frame_limit(good_mask, video_factory, monkeypatch, request_tmp):
    monkeypatch.setenv("SAM2_MAX_FRAMES", "5")
    video = video_factory(320, 240, 12)
    with pytest.raises(gr.Error, match="`video_path`.*more than the limit of 5.*SAM2_MAX_FRAMES"):
        app.process_video(video, "tiny", [good_mask])
    assert not os.listdir(request_tmp)
    assert app.process_video(video, "tiny", [good_mask], drop_masks=True, every_x=3)  # 4 frames pass


def test_gpu_duration_estimate():
    estimate = samv2_handler.estimate_video_gpu_seconds
    assert estimate(1, 0, "tiny") == samv2_handler.GPU_MIN_S
    assert estimate(100, 0, "tiny") == 31  # 15 s overhead + 101 steps * 0.15 s
    assert estimate(100, 40, "tiny") == 31  # reverse pass included: forward 60 + reverse 40 + seed
    assert estimate(100, 0, "large") > estimate(100, 0, "small") > estimate(100, 0, "tiny")
    assert estimate(100_000, 0, "large") == samv2_handler.GPU_MAX_S
    # the ZeroGPU callable receives _track_video_gpu's arguments
    assert app._video_gpu_duration("base_plus", ["f"] * 300, [], 10, False, True, "cpu") == \
        estimate(300, 10, "base_plus") == 106



"""generate_masks ("segment everything"): grid coverage, equivalence with transformers'
mask-generation pipeline, the output contract, and bad input."""

import numpy as np
import pytest
import torch
from PIL import Image
from pycocotools import mask as coco

import app
import mask_generation
import samv2_handler
from mask_codec import decode_mask, decode_png_b64, mask_box
from stage_times import StageTimer


def scene(width, height, seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 60, (height, width, 3), dtype=np.uint8)
    pixels[height // 5:height // 2, width // 4:width * 3 // 4] = (220, 200, 40)
    return Image.fromarray(pixels)


@pytest.mark.parametrize("width, height", [(400, 300), (300, 400), (320, 320), (1920, 1080)])
def test_prompt_grid_spans_the_whole_image(width, height, models):
    """In original pixels, the first and last grid points lie within one grid step of every border."""
    n, target = 16, models.image_processor.target_size
    points = mask_generation.crop_point_grid(n, width, height, target)
    xs, ys = points[:, 0] * width / target, points[:, 1] * height / target  # the model squashes to a square
    step_x, step_y = width / n, height / n
    assert xs.min() <= step_x and xs.max() >= width - step_x
    assert ys.min() <= step_y and ys.max() >= height - step_y
    assert torch.allclose(xs.reshape(n, n)[0], torch.linspace(step_x / 2, width - step_x / 2, n), atol=1e-3)


def test_the_pipeline_grid_misses_the_bottom_of_a_4_3_image(models):
    """Why the pipeline's own grid is not used: scaled by the longest edge, it stops at 3/4 of the height."""
    width, height, n = 400, 300, 16
    processor = models.image_processor.image_processor
    target = models.image_processor.target_size
    _, points, _, _ = processor.generate_crop_boxes(scene(width, height), target, 0, points_per_crop=n)
    ys = points[0, :, 0, 1] * height / target
    assert ys.max() < 0.76 * height  # the bottom quarter is never prompted


def test_equals_the_transformers_pipeline_on_a_square_image(models, micro_checkpoint):
    from transformers import pipeline

    image = scene(256, 256)
    thresholds = dict(pred_iou_thresh=0.5, stability_score_thresh=0.0)
    generator = pipeline("mask-generation", model=models.image_model,
                         image_processor=models.image_processor.image_processor, device="cpu")
    expected = generator(image, points_per_crop=8, **thresholds)
    ours = mask_generation.generate_masks(models, image, mask_generation.EverythingParams(
        points_per_side=8, max_masks=1000, **thresholds))
    assert len(expected["masks"]) >= 1 and len(ours["masks"]) == len(expected["masks"])
    remaining = [(decode_mask(m["segmentation"]), m["predicted_iou"]) for m in ours["masks"]]
    for mask, score in zip(expected["masks"], expected["scores"].tolist()):
        match = [i for i, (candidate, _) in enumerate(remaining) if np.array_equal(candidate, np.asarray(mask))]
        assert match, "a pipeline mask has no identical mask in ours"
        # predicted_iou is rounded to 4 decimals: that is the stated tolerance
        assert abs(remaining.pop(match[0])[1] - score) <= 5e-5


def synthetic_candidates(height=240, width=320):
    """Masks of known areas (and one empty, one tiny) standing in for model output: random
    weights give one near-full-image mask after NMS, too few to exercise the contract."""
    boxes = [(10, 10, 110, 60), (0, 0, 320, 240), (200, 100, 230, 140), (50, 150, 52, 151), (5, 5, 5, 5)]
    candidates = []
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        mask = np.zeros((height, width), bool)
        mask[y0:y1, x0:x1] = True
        candidates.append((mask, 0.9 - i / 10, 0.8 + i / 100))
    return candidates


def params(**overrides):
    return mask_generation.EverythingParams(**{"max_masks": 1000, **overrides})


@pytest.mark.parametrize("output_format", ["rle", "png"])
def test_output_contract(output_format):
    result = mask_generation.assemble_result(synthetic_candidates(), 240, 320, params(output_format=output_format))
    assert result["image_size"] == [240, 320] and result["truncated"] is False
    assert [m["area"] for m in result["masks"]] == [76800, 5000, 1200, 2]  # largest first, the empty one dropped
    for m in result["masks"]:
        assert set(m) == {"bbox", "area", "predicted_iou", "stability_score", "segmentation"}
        if output_format == "rle":
            rle = m["segmentation"]
            mask = coco.decode({"size": rle["size"], "counts": rle["counts"].encode()}).astype(bool)
        else:
            mask = decode_png_b64(m["segmentation"])
        assert m["area"] == int(mask.sum()) and m["bbox"] == list(mask_box(mask))
    assert result["masks"][1]["bbox"] == [10, 10, 100, 50]
    assert result["masks"][1]["predicted_iou"] == 0.9 and result["masks"][1]["stability_score"] == 0.8


def test_max_masks_and_min_area():
    full = mask_generation.assemble_result(synthetic_candidates(), 240, 320, params())["masks"]
    capped = mask_generation.assemble_result(synthetic_candidates(), 240, 320, params(max_masks=2))
    assert capped["truncated"] is True and capped["masks"] == full[:2]
    exact = mask_generation.assemble_result(synthetic_candidates(), 240, 320, params(max_masks=4))
    assert exact["truncated"] is False and exact["masks"] == full
    large = mask_generation.assemble_result(synthetic_candidates(), 240, 320, params(min_area=1200))
    assert large["masks"] == full[:3] and not large["truncated"]


def test_real_model_result_keeps_the_contract():
    image = scene(320, 240)
    kwargs = dict(points_per_side=4, pred_iou_thresh=0, stability_score_thresh=0, crop_n_layers=1)
    rle = app.generate_masks(image, "tiny", output_format="rle", **kwargs)
    png = app.generate_masks(image, "tiny", output_format="png", **kwargs)
    assert rle["image_size"] == [240, 320] and len(rle["masks"]) == len(png["masks"]) >= 1
    for r, p in zip(rle["masks"], png["masks"]):
        mask = decode_mask(r["segmentation"])
        np.testing.assert_array_equal(mask, decode_png_b64(p["segmentation"]))
        assert r["area"] == int(mask.sum()) and r["bbox"] == list(mask_box(mask))
        assert 0.0 <= r["predicted_iou"] <= 1.0 and 0.0 <= r["stability_score"] <= 1.0


def test_stability_replay_agrees_with_filter_masks(models):
    """filter_masks returns no stability scores; generate_masks replays its selection (thresholds,
    then the crop-edge filter, active here with a crop layer) and raises if the counts disagree."""
    image = scene(256, 256)
    result = mask_generation.generate_masks(models, image, mask_generation.EverythingParams(
        points_per_side=4, pred_iou_thresh=0.5, stability_score_thresh=0.0, crop_n_layers=1))
    assert result["masks"] and all(0.0 <= m["stability_score"] <= 1.0 for m in result["masks"])


def test_nothing_passes_gives_an_empty_list():
    result = app.generate_masks(scene(200, 150), "tiny", points_per_side=4, pred_iou_thresh=0.99,
                                stability_score_thresh=0.99)
    assert result == {"image_size": [150, 200], "masks": [], "truncated": False}


def test_stage_times_are_reported(models):
    timer = StageTimer()
    mask_generation.generate_masks(models, scene(131, 97), mask_generation.EverythingParams(
        points_per_side=2, pred_iou_thresh=0, stability_score_thresh=0), timer=timer)
    # a new image: a cache miss, so the encoder and its preprocessing run too
    assert set(timer.seconds) == {"preprocess", "encoder", "decoder", "postprocess", "nms", "encoding"}


@pytest.mark.parametrize("kwargs, argument", [
    (dict(points_per_side=0), "points_per_side"), (dict(points_per_side=1000), "points_per_side"),
    (dict(points_per_side=2.5), "points_per_side"),
    (dict(pred_iou_thresh=-0.1), "pred_iou_thresh"), (dict(stability_score_thresh=1.5), "stability_score_thresh"),
    (dict(min_area=-1), "min_area"), (dict(max_masks=0), "max_masks"),
    (dict(crop_n_layers=3), "crop_n_layers"), (dict(crop_n_layers=-1), "crop_n_layers"),
    (dict(output_format="svg"), "output_format"), (dict(variant="huge"), "variant"),
])
def test_bad_input(kwargs, argument):
    import gradio as gr

    call = {"variant": "tiny", **kwargs}
    with pytest.raises(gr.Error) as error:
        app.generate_masks(scene(64, 48), **call)
    assert f"`{argument}`" in error.value.message


def test_gpu_duration_estimate():
    small = mask_generation.EverythingParams(points_per_side=8)
    big = mask_generation.EverythingParams(points_per_side=64, crop_n_layers=2)
    assert 20 <= mask_generation.estimate_gpu_seconds(small, "tiny", 640, 480) \
        < mask_generation.estimate_gpu_seconds(big, "large", 4096, 4096) <= 300
    assert mask_generation.crop_count(2) == 21
    assert app._everything_gpu_duration("tiny", scene(64, 48), small) >= 20
    assert samv2_handler.get_models("tiny") is not None

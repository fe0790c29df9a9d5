"""process_image equals a direct transformers Sam2Model + Sam2Processor call on the micro checkpoint."""

import numpy as np
import pytest
import torch
from PIL import Image

import app
import samv2_handler
from mask_codec import decode_mask
from prompts import parse_image_prompt

W, H = 320, 240


@pytest.fixture(scope="module")
def reference(micro_checkpoint):
    from transformers import Sam2Model, Sam2Processor

    return Sam2Model.from_pretrained(micro_checkpoint).eval(), Sam2Processor.from_pretrained(micro_checkpoint)


@pytest.fixture(scope="module")
def image():
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 80, (H, W, 3), dtype=np.uint8)
    pixels[60:180, 100:220] = (200, 180, 40)
    return Image.fromarray(pixels)


def reference_masks(reference, image, **prompt) -> np.ndarray:
    model, processor = reference
    inputs = processor(images=image, return_tensors="pt", **prompt)
    with torch.inference_mode():
        outputs = model(**inputs, multimask_output=False)
    return processor.post_process_masks(outputs.pred_masks, inputs["original_sizes"])[0][:, 0].numpy()


BOX_A = {"x0": 100, "y0": 60, "x1": 220, "y1": 180}
BOX_B = {"x0": 10, "y0": 10, "x1": 90, "y1": 200}
CASES = {
    "one box": (dict(bboxes=[BOX_A]), dict(input_boxes=[[[100, 60, 220, 180]]])),
    "points with a negative": (
        dict(points=[{"x": 160, "y": 120}, {"x": 30, "y": 30}], point_labels=[1, 0]),
        dict(input_points=[[[[160, 120], [30, 30]]]], input_labels=[[[1, 0]]])),
    "several boxes": (dict(bboxes=[BOX_A, BOX_B]),
                      dict(input_boxes=[[[100, 60, 220, 180], [10, 10, 90, 200]]])),
    # boxes and points together: every box is an object, refined by all the points
    "boxes and points": (
        dict(bboxes=[BOX_A, BOX_B], points=[{"x": 160, "y": 120}, {"x": 50, "y": 100}], point_labels=[1, 0]),
        dict(input_boxes=[[[100, 60, 220, 180], [10, 10, 90, 200]]],
             input_points=[[[[160, 120], [50, 100]]] * 2], input_labels=[[[1, 0]] * 2])),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("output_format", ["png", "rle"])
def test_process_image_equals_transformers(case, output_format, reference, image):
    ours, theirs = CASES[case]
    expected = reference_masks(reference, image, **theirs)
    result = app.process_image(image, "tiny", output_format=output_format, **ours)
    assert len(result) == len(expected) == max(len(ours.get("bboxes", [])), 1)
    for encoded, mask in zip(result, expected):
        decoded = decode_mask(encoded)
        assert decoded.shape == (H, W)
        np.testing.assert_array_equal(decoded, mask)
    if output_format == "rle":
        assert result[0]["size"] == [H, W] and isinstance(result[0]["counts"], str)


def test_points_refine_boxes_changes_the_masks(models, image):
    """With boxes and points, the points take part in every box's prompt (the result differs)."""
    boxes_only = samv2_handler.segment_image(models, image, parse_image_prompt([BOX_A, BOX_B], None, None, W, H))
    both = samv2_handler.segment_image(models, image, parse_image_prompt(
        [BOX_A, BOX_B], [{"x": 160, "y": 120}, {"x": 50, "y": 100}], [1, 0], W, H))
    assert both.shape == boxes_only.shape == (2, H, W)
    assert not np.array_equal(both, boxes_only)


def test_json_strings_equal_lists(image):
    as_lists = app.process_image(image, "tiny", [BOX_A], [{"x": 160, "y": 120}], [1])
    as_text = app.process_image(image, "tiny", '[{"x0": 100, "y0": 60, "x1": 220, "y1": 180}]',
                                '[{"x": 160, "y": 120}]', "[1]")
    assert as_lists == as_text

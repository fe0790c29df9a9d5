"""Argument parsing and validation: every bad input names its argument and says what to do."""

import numpy as np
import pytest

import prompts
from errors import InputError
from mask_codec import encode_png_b64, encode_rle

W, H = 320, 240


def parse(bboxes=None, points=None, labels=None):
    return prompts.parse_image_prompt(bboxes, points, labels, W, H)


def test_json_text_and_parsed_lists_are_equivalent():
    text = parse('[{"x0": 1, "y0": 2, "x1": 30, "y1": 40}]', '[{"x": 5, "y": 6}]', "[0]")
    parsed = parse([{"x0": 1, "y0": 2, "x1": 30, "y1": 40}], [{"x": 5, "y": 6}], [0])
    assert text == parsed
    assert text.boxes == [[1, 2, 30, 40]] and text.points == [[5, 6]] and text.labels == [0]


def test_python_reprs_of_lists_are_accepted():
    """gradio text boxes turn a list sent by gradio_client or MCP into its Python repr."""
    sent = [{"x0": 1, "y0": 2, "x1": 30, "y1": 40}]
    assert parse(str(sent), str([{"x": 5, "y": 6}]), str([1])) == parse(sent, [{"x": 5, "y": 6}], [1])
    with pytest.raises(InputError, match="not valid JSON"):
        parse("[__import__('os')]")


def test_plain_coordinate_lists_are_accepted():
    assert parse([[1, 2, 30, 40]], [[5, 6]], [1]) == parse([{"x0": 1, "y0": 2, "x1": 30, "y1": 40}],
                                                           [{"x": 5, "y": 6}], [1])


def test_empty_strings_mean_absent():
    prompt = parse("", '[{"x": 5, "y": 6}]', "[1]")
    assert prompt.boxes == [] and prompt.points == [[5, 6]]


@pytest.mark.parametrize("kwargs, argument, fragment", [
    (dict(), "bboxes", "no prompt"),
    (dict(bboxes="", points=""), "bboxes", "no prompt"),
    (dict(points='[{"x": 5, "y": 6}]'), "point_labels", "required"),
    (dict(points='[{"x": 5, "y": 6}, {"x": 7, "y": 8}]', labels="[1]"), "point_labels", "has 2 entries"),
    (dict(bboxes='[{"x0": 1,'), "bboxes", "not valid JSON"),
    (dict(points="{oops}", labels="[1]"), "points", "not valid JSON"),
    (dict(bboxes='{"x0": 1}'), "bboxes", "must be a JSON list"),
    (dict(bboxes=[{"x0": 50, "y0": 2, "x1": 30, "y1": 40}]), "bboxes[0]", "x1 > x0"),
    (dict(bboxes=[{"x0": 5, "y0": 40, "x1": 30, "y1": 40}]), "bboxes[0]", "y1 > y0"),
    (dict(bboxes=[{"x0": 5, "y0": 4, "x1": 330, "y1": 40}]), "bboxes[0]", "outside"),
    (dict(bboxes=[{"x0": -1, "y0": 4, "x1": 30, "y1": 40}]), "bboxes[0]", "outside"),
    (dict(bboxes=[{"x0": 5, "y0": 4, "x1": 30}]), "bboxes[0]", "missing"),
    (dict(bboxes=[{"x0": "a", "y0": 4, "x1": 30, "y1": 9}]), "bboxes[0].x0", "not a number"),
    (dict(points=[{"x": 5, "y": 6}], labels=[2]), "point_labels[0]", "not 0 or 1"),
    (dict(points=[{"x": 5, "y": 6}], labels=[True]), "point_labels[0]", "not 0 or 1"),
    (dict(points=[{"x": 500, "y": 6}], labels=[1]), "points[0]", "outside"),
    (dict(bboxes=[[1, 2, 3, 4]], labels=[1]), "points", "without `points`"),
])
def test_bad_image_prompts(kwargs, argument, fragment):
    with pytest.raises(InputError) as info:
        parse(kwargs.get("bboxes"), kwargs.get("points"), kwargs.get("labels"))
    assert info.value.argument == argument
    assert fragment in str(info.value) and argument in str(info.value)


def test_variant_format_and_size_checks():
    assert prompts.check_variant("base_plus") == "base_plus"
    with pytest.raises(InputError, match="variant"):
        prompts.check_variant("huge")
    assert prompts.check_output_format(None) == "png"
    with pytest.raises(InputError, match="output_format"):
        prompts.check_output_format("jpeg")
    prompts.check_image_size(100, 100, 10_000)
    with pytest.raises(InputError, match="SAM2_MAX_IMAGE_PIXELS"):
        prompts.check_image_size(101, 100, 10_000)


def test_masks_parsing():
    mask = np.zeros((H, W), bool)
    mask[10:20, 30:40] = True
    png = encode_png_b64(mask)
    for value in ([png], f'["{png}"]', [f"b'{png}'"], [encode_rle(mask)]):
        (decoded,) = prompts.parse_masks(value)
        np.testing.assert_array_equal(decoded, mask)
    prompts.check_mask_sizes([mask], W, H)


@pytest.mark.parametrize("value, argument, fragment", [
    (None, "masks", "no mask"),
    ("[]", "masks", "no mask"),
    ("[not json", "masks", "not valid JSON"),
    (["@@@"], "masks[0]", "does not decode"),
    ([12], "masks[0]", "base64 PNG string"),
    ([encode_png_b64(np.zeros((4, 4), bool))], "masks[0]", "empty"),
])
def test_bad_masks(value, argument, fragment):
    with pytest.raises(InputError) as info:
        prompts.parse_masks(value)
    assert info.value.argument == argument and fragment in str(info.value)


def test_mask_size_mismatch_names_both_sizes():
    with pytest.raises(InputError, match=r"masks\[0\].*is 40x30 but the video frames are 320x240"):
        prompts.check_mask_sizes([np.ones((30, 40), bool)], W, H)


def test_video_scalar_checks():
    assert prompts.check_ref_frame_idx(None) == 0
    assert prompts.check_ref_frame_idx(3.0) == 3
    with pytest.raises(InputError, match="ref_frame_idx.*negative"):
        prompts.check_ref_frame_idx(-1)
    with pytest.raises(InputError, match="ref_frame_idx.*whole number"):
        prompts.check_ref_frame_idx(1.5)
    with pytest.raises(InputError, match=r"ref_frame_idx.*valid: 0\.\.9"):
        prompts.check_ref_in_range(10, 10)
    assert prompts.check_video_load_device(None, False) == "cpu"
    with pytest.raises(InputError, match="video_load_device.*\"cpu\" or \"cuda\""):
        prompts.check_video_load_device("tpu", True)
    with pytest.raises(InputError, match="video_load_device.*no GPU"):
        prompts.check_video_load_device("cuda", False)
    assert prompts.optional_float("", "sample_fps") is None
    with pytest.raises(InputError, match="sample_fps"):
        prompts.optional_float("fast", "sample_fps")


def test_input_error_pickles_for_zerogpu():
    import pickle

    error = pickle.loads(pickle.dumps(InputError("masks[1]", "is empty")))
    assert error.argument == "masks[1]" and str(error) == "Invalid `masks[1]`: is empty"

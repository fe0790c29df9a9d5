"""Round trips of the pure mask codecs, against pycocotools as the reference RLE implementation."""

import base64
import io

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as coco

from mask_codec import (decode_mask, decode_png_b64, decode_rle, encode_mask, encode_png_b64, encode_rle,
                        mask_box)


def cases():
    rng = np.random.default_rng(7)
    one = np.zeros((17, 23), bool)
    one[16, 0] = True
    return {
        "empty": np.zeros((5, 9), bool),
        "full": np.ones((8, 3), bool),
        "random_odd": rng.random((31, 47)) > 0.5,
        "one_pixel": one,
        "wide": rng.random((1, 101)) > 0.3,
    }


@pytest.mark.parametrize("name", list(cases()))
def test_png_round_trip_is_exact_and_1bit(name):
    mask = cases()[name]
    text = encode_png_b64(mask)
    assert text.isascii()
    with Image.open(io.BytesIO(base64.b64decode(text))) as image:
        assert image.mode == "1" and image.size == (mask.shape[1], mask.shape[0])
        assert set(np.unique(np.array(image).astype(np.uint8))) <= {0, 1}
    np.testing.assert_array_equal(decode_png_b64(text), mask)


@pytest.mark.parametrize("name", list(cases()))
def test_rle_round_trip_matches_pycocotools(name):
    mask = cases()[name]
    rle = encode_rle(mask)
    assert rle["size"] == list(mask.shape) and isinstance(rle["counts"], str)
    reference = coco.decode({"size": rle["size"], "counts": rle["counts"].encode()})
    np.testing.assert_array_equal(reference.astype(bool), mask)
    np.testing.assert_array_equal(decode_rle(rle), mask)
    assert coco.area({"size": rle["size"], "counts": rle["counts"].encode()}) == mask.sum()


def test_uncompressed_rle_is_accepted():
    mask = cases()["random_odd"]
    flat = mask.flatten(order="F").astype(np.uint8)
    counts, current, run = [], 0, 0
    for value in flat:
        if value == current:
            run += 1
        else:
            counts.append(run)
            current, run = value, 1
    counts.append(run)
    np.testing.assert_array_equal(decode_rle({"size": list(mask.shape), "counts": counts}), mask)


def test_wrappers_are_stripped():
    mask = cases()["random_odd"]
    text = encode_png_b64(mask)
    for wrapped in (f"b'{text}'", f'b"{text}"', f"data:image/png;base64,{text}", f"  {text[:10]}\n{text[10:]} "):
        np.testing.assert_array_equal(decode_png_b64(wrapped), mask)
    np.testing.assert_array_equal(decode_png_b64(text.encode()), mask)


def test_greyscale_and_rgba_pngs_nonzero_is_inside():
    mask = cases()["random_odd"]
    for mode, array in (("L", mask.astype(np.uint8) * 255), ("RGBA", np.dstack([mask * 255] * 3 + [np.full(mask.shape, 255)]).astype(np.uint8))):
        buffer = io.BytesIO()
        Image.fromarray(array, mode=None).convert(mode).save(buffer, format="PNG")
        np.testing.assert_array_equal(decode_png_b64(base64.b64encode(buffer.getvalue()).decode()), mask)


@pytest.mark.parametrize("text, reason", [("", "empty"), ("not base64 !!", "base64"),
                                          (base64.b64encode(b"hello world").decode(), "PNG")])
def test_bad_png_text_says_why(text, reason):
    with pytest.raises(ValueError, match=reason):
        decode_png_b64(text)


def test_encode_mask_dispatch():
    mask = cases()["random_odd"]
    np.testing.assert_array_equal(decode_mask(encode_mask(mask, "png")), mask)
    np.testing.assert_array_equal(decode_mask(encode_mask(mask, "rle")), mask)
    with pytest.raises(ValueError):
        encode_mask(mask, "jpeg")


def test_mask_box_covers_whole_pixels():
    mask = np.zeros((240, 320), bool)
    mask[30:90, 40:100] = True
    assert mask_box(mask) == (40, 30, 60, 60)
    assert mask_box(cases()["one_pixel"]) == (0, 16, 1, 1)
    assert mask_box(cases()["empty"]) is None
    assert mask_box(cases()["full"]) == (0, 0, 3, 8)

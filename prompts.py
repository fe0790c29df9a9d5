"""Parsing and validation of request arguments (pure; raises `InputError` naming the argument).

JSON arguments arrive either as JSON text (the UI's text boxes, old gradio_client callers)
or already parsed (lists from MCP agents and new scripts); both are accepted.
"""

import ast
import json
import math
from dataclasses import dataclass, field

from errors import InputError

VARIANTS = ("tiny", "small", "base_plus", "large")
VIDEO_LOAD_DEVICES = ("cpu", "cuda")


def is_empty(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or (
        isinstance(value, (list, tuple)) and len(value) == 0
    )


def parse_json_list(value, argument: str) -> list | None:
    """Return a list (or None when empty/absent) from JSON text or an already-parsed list."""
    if is_empty(value):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            value = _python_literal(value)
            if value is None:
                raise InputError(argument, f"is not valid JSON ({exc.msg} at character {exc.pos}); "
                                 "send a JSON list, e.g. " + _EXAMPLES.get(argument, "[...]")) from None
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise InputError(argument, f"must be a JSON list, got {type(value).__name__}; e.g. "
                         + _EXAMPLES.get(argument, "[...]"))
    return value or None


def _python_literal(text: str):
    """A list sent by gradio_client or MCP into a text box arrives as its Python repr
    ("[{'x': 1}]"); read it back as a literal (never evaluated as code)."""
    text = text.strip()
    if not text.startswith("["):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


_EXAMPLES = {
    "bboxes": '[{"x0": 10, "y0": 20, "x1": 110, "y1": 220}]',
    "points": '[{"x": 50, "y": 60}]',
    "point_labels": "[1]",
    "masks": '["iVBORw0KGgo..."]',
}


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _number(value, argument: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(argument, f"{value!r} is not a number")
    if not math.isfinite(value):
        raise InputError(argument, f"{value!r} is not a finite number")
    return float(value)


def _coords(item, keys: tuple[str, ...], argument: str) -> list[float]:
    """Read coordinates from a dict with `keys` or a plain list of len(keys) numbers."""
    if isinstance(item, dict):
        missing = [k for k in keys if k not in item]
        if missing:
            raise InputError(argument, f"is missing key(s) {missing}; expected keys {list(keys)}")
        values = [item[k] for k in keys]
    elif isinstance(item, (list, tuple)) and len(item) == len(keys):
        values = list(item)
    else:
        raise InputError(argument, f"{item!r} must be an object with keys {list(keys)}")
    return [_number(v, f"{argument}.{k}") for k, v in zip(keys, values)]


@dataclass
class ImagePrompt:
    """Validated prompts for one image, in absolute pixels of that image."""

    boxes: list[list[float]] = field(default_factory=list)  # [[x0, y0, x1, y1], ...]
    points: list[list[float]] = field(default_factory=list)  # [[x, y], ...]
    labels: list[int] = field(default_factory=list)  # 1 include, 0 exclude


def parse_image_prompt(bboxes, points, point_labels, width: int, height: int) -> ImagePrompt:
    boxes_in = parse_json_list(bboxes, "bboxes")
    points_in = parse_json_list(points, "points")
    labels_in = parse_json_list(point_labels, "point_labels")
    if boxes_in is None and points_in is None:
        raise InputError("bboxes", "no prompt given: pass `bboxes` (one object per box) and/or `points` "
                         "with `point_labels`")
    prompt = ImagePrompt()
    for i, item in enumerate(boxes_in or []):
        x0, y0, x1, y1 = _coords(item, ("x0", "y0", "x1", "y1"), f"bboxes[{i}]")
        if x1 <= x0 or y1 <= y0:
            raise InputError(f"bboxes[{i}]", f"needs x1 > x0 and y1 > y0 (top-left then bottom-right "
                             f"corner), got x0={x0:g}, y0={y0:g}, x1={x1:g}, y1={y1:g}")
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
            raise InputError(f"bboxes[{i}]", f"({x0:g}, {y0:g}, {x1:g}, {y1:g}) lies outside the "
                             f"{width}x{height} image; coordinates are absolute pixels within 0..{width} "
                             f"(x) and 0..{height} (y)")
        prompt.boxes.append([x0, y0, x1, y1])
    if points_in is not None:
        if labels_in is None:
            raise InputError("point_labels", f"is required with `points`: give one label per point "
                             f"(1 = include, 0 = exclude), e.g. {[1] * len(points_in)}")
        if len(labels_in) != len(points_in):
            raise InputError("point_labels", f"`points` has {_entries(len(points_in))} but "
                             f"`point_labels` has {len(labels_in)}; give one label per point")
        for i, item in enumerate(points_in):
            x, y = _coords(item, ("x", "y"), f"points[{i}]")
            if not (0 <= x <= width and 0 <= y <= height):
                raise InputError(f"points[{i}]", f"({x:g}, {y:g}) lies outside the {width}x{height} image")
            prompt.points.append([x, y])
        for i, label in enumerate(labels_in):
            if isinstance(label, bool) or label not in (0, 1):
                raise InputError(f"point_labels[{i}]", f"{label!r} is not 0 or 1 (1 = include, 0 = exclude)")
            prompt.labels.append(int(label))
    elif labels_in is not None:
        raise InputError("points", "`point_labels` was given without `points`; send both or neither")
    return prompt


def check_variant(variant) -> str:
    if variant not in VARIANTS:
        raise InputError("variant", f"{variant!r} is not a SAM 2 variant; use one of {list(VARIANTS)}")
    return variant


def check_output_format(output_format) -> str:
    if output_format is None or output_format == "":
        return "png"
    if output_format not in ("png", "rle"):
        raise InputError("output_format", f"{output_format!r} is not supported; use \"png\" or \"rle\"")
    return output_format


def check_image(im, max_pixels: int) -> None:
    """The `im` argument: present, and within the pixel limit."""
    if im is None:
        raise InputError("im", "no image given; upload an image (over MCP: an http(s) URL or data: URI)")
    check_image_size(im.width, im.height, max_pixels)


def check_image_size(width: int, height: int, max_pixels: int, argument: str = "im") -> None:
    if width < 1 or height < 1:
        raise InputError(argument, "the image is empty")
    if width * height > max_pixels:
        raise InputError(argument, f"{width}x{height} = {width * height} pixels exceeds the limit of "
                         f"{max_pixels} pixels (SAM2_MAX_IMAGE_PIXELS); downscale the input")


def optional_int(value, argument: str) -> int | None:
    """An optional whole number: None or "" gives None; 3.0 and "3" give 3; 1.5 is an error."""
    number = optional_float(value, argument)
    if number is None:
        return None
    if number != int(number):
        raise InputError(argument, f"{value!r} must be a whole number")
    return int(number)


def optional_float(value, argument: str) -> float | None:
    """An optional finite number, given as a number or as text; None or "" gives None."""
    if is_empty(value):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(argument, f"{value!r} is not a number") from None
    return _number(value, argument)


def parse_masks(masks) -> list:
    """Decode the reference-frame masks: base64 PNGs (a `b'...'` wrapper is stripped) or COCO RLE dicts."""
    from mask_codec import decode_mask

    items = parse_json_list(masks, "masks")
    if items is None:
        raise InputError("masks", "no mask given: send a JSON list with one base64 1-bit PNG mask per "
                         "object, drawn on the reference frame (`ref_frame_idx`) at the video's size")
    decoded = []
    for i, item in enumerate(items):
        if not isinstance(item, (str, dict)):
            raise InputError(f"masks[{i}]", f"must be a base64 PNG string (or a COCO RLE object), got "
                             f"{type(item).__name__}")
        try:
            mask = decode_mask(item)
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"masks[{i}]", f"does not decode as a mask: {exc}") from None
        if not mask.any():
            raise InputError(f"masks[{i}]", "is empty (no pixel set); draw the object with value 1")
        decoded.append(mask)
    return decoded


def check_mask_sizes(masks: list, width: int, height: int) -> None:
    for i, mask in enumerate(masks):
        if mask.shape != (height, width):
            raise InputError(f"masks[{i}]", f"is {mask.shape[1]}x{mask.shape[0]} but the video frames are "
                             f"{width}x{height}; masks must have the frame's width and height")


def check_ref_frame_idx(value) -> int:
    index = optional_int(value, "ref_frame_idx")
    if index is None:
        return 0
    if index < 0:
        raise InputError("ref_frame_idx", f"{index} is negative; frames count from 0 in the sampled sequence")
    return index


def check_ref_in_range(ref_frame_idx: int, num_frames: int) -> None:
    if not 0 <= ref_frame_idx < num_frames:
        raise InputError("ref_frame_idx", f"{ref_frame_idx} is past the last sampled frame: the video has "
                         f"{num_frames} frames after sampling (valid: 0..{num_frames - 1})")


def check_video_load_device(value, cuda_available: bool) -> str:
    device = value or "cpu"
    if device not in VIDEO_LOAD_DEVICES:
        raise InputError("video_load_device", f"{value!r} is not supported; use \"cpu\" or \"cuda\"")
    if device == "cuda" and not cuda_available:
        raise InputError("video_load_device", "\"cuda\" was asked for but this server has no GPU; use \"cpu\"")
    return device

"""Drawing for the browser UI: masks, boxes, clicks and object ids over an image (pure numpy/OpenCV).

Every function takes an RGB uint8 array (height, width, 3) and returns a new one; nothing here
knows about gradio or the model. Object `i` is drawn in `colour(i)` wherever it appears (image
masks, picked objects on a video's reference frame, tracked masks in the rendered video), so a
person can follow an object by its colour and its "#i" label.
"""

import cv2
import numpy as np

from mask_codec import decode_mask, mask_box

# Distinct, saturated colours that stay readable over photos (Kelly/Tableau-like), RGB.
PALETTE = [(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48),
           (145, 30, 180), (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212),
           (0, 128, 128), (170, 110, 40), (128, 0, 0), (170, 255, 195), (0, 0, 128), (128, 128, 0)]
INCLUDE_COLOUR = (40, 220, 60)
EXCLUDE_COLOUR = (235, 40, 40)
MASK_ALPHA = 0.45


def colour(index: int) -> tuple[int, int, int]:
    return PALETTE[index % len(PALETTE)]


def _check(image: np.ndarray) -> np.ndarray:
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an RGB uint8 array (height, width, 3), got {image.dtype} {image.shape}")
    return image


def blend_masks(image: np.ndarray, masks: list[tuple[int, np.ndarray]], alpha: float = MASK_ALPHA,
                outline: bool = True) -> np.ndarray:
    """`masks` as (object id, bool mask of the image's size), tinted in the object's colour, with a
    1-pixel outline in the full colour. Later masks are drawn over earlier ones."""
    out = _check(image).astype(np.float32)
    height, width = image.shape[:2]
    for obj_id, mask in masks:
        mask = np.asarray(mask, bool)
        if mask.shape != (height, width):
            raise ValueError(f"mask of object {obj_id} is {mask.shape[1]}x{mask.shape[0]}, the image "
                             f"{width}x{height}")
        out[mask] = out[mask] * (1 - alpha) + np.array(colour(obj_id), np.float32) * alpha
    out = out.round().astype(np.uint8)
    if outline:
        for obj_id, mask in masks:
            contours, _ = cv2.findContours(np.asarray(mask, np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
            cv2.drawContours(out, contours, -1, colour(obj_id), 1)
    return out


def label(image: np.ndarray, text: str, x: int, y: int, rgb: tuple[int, int, int]) -> np.ndarray:
    """`text` on a filled tag of colour `rgb` whose top-left corner is at (x, y), kept inside the image."""
    out = _check(image)
    scale = max(0.4, min(out.shape[:2]) / 800)
    thickness = max(1, round(scale * 2))
    (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    x = int(min(max(x, 0), max(out.shape[1] - tw - 4, 0)))
    y = int(min(max(y, 0), max(out.shape[0] - th - base - 4, 0)))
    cv2.rectangle(out, (x, y), (x + tw + 4, y + th + base + 4), rgb, -1)
    ink = (0, 0, 0) if sum(rgb) > 380 else (255, 255, 255)
    cv2.putText(out, text, (x + 2, y + th + 2), cv2.FONT_HERSHEY_SIMPLEX, scale, ink, thickness, cv2.LINE_AA)
    return out


def draw_boxes(image: np.ndarray, boxes: list[tuple[int, tuple[float, float, float, float]]],
               labels: bool = True) -> np.ndarray:
    """`boxes` as (object id, (x0, y0, x1, y1)) in pixels: the rectangle in the object's colour and,
    with `labels`, its "#id" tag above the top-left corner."""
    out = _check(image).copy()
    thickness = max(2, round(min(out.shape[:2]) / 300))
    for obj_id, (x0, y0, x1, y1) in boxes:
        cv2.rectangle(out, (round(x0), round(y0)), (round(x1) - 1, round(y1) - 1), colour(obj_id), thickness)
        if labels:
            out = label(out, f"#{obj_id}", round(x0), round(y0) - 22, colour(obj_id))
    return out


def draw_points(image: np.ndarray, points: list[tuple[float, float]], labels: list[int]) -> np.ndarray:
    """Clicks: include (label 1) as green discs, exclude (0) as red discs, both ringed in white."""
    out = _check(image).copy()
    radius = max(4, round(min(out.shape[:2]) / 90))
    for (x, y), point_label in zip(points, labels):
        centre = (round(x), round(y))
        cv2.circle(out, centre, radius + 2, (255, 255, 255), -1, cv2.LINE_AA)
        cv2.circle(out, centre, radius, INCLUDE_COLOUR if point_label else EXCLUDE_COLOUR, -1, cv2.LINE_AA)
    return out


def draw_corner(image: np.ndarray, x: float, y: float, rgb: tuple[int, int, int]) -> np.ndarray:
    """The first corner of a box being drawn: a cross in the object's colour."""
    out = _check(image).copy()
    size = max(6, round(min(out.shape[:2]) / 60))
    cv2.drawMarker(out, (round(x), round(y)), rgb, cv2.MARKER_CROSS, size * 2, max(2, size // 3))
    return out



def draw_annotation(image: np.ndarray, state: dict) -> np.ndarray:
    """A click-to-segment state (`annotation`) over its picture: each object's mask, prompt box and
    "#id" tag in its colour, every click, and a box's pending first corner."""
    objects = state["objects"] if state else []
    masked = [(i, decode_mask(obj["mask"])) for i, obj in enumerate(objects) if obj["mask"] is not None]
    out = blend_masks(image, masked)
    out = draw_boxes(out, [(i, obj["box"]) for i, obj in enumerate(objects) if obj["box"] is not None], labels=False)
    for obj in objects:
        out = draw_points(out, obj["points"], obj["labels"])
    for i, mask in masked:
        x, y, _, _ = mask_box(mask) or (0, 0, 0, 0)
        box = objects[i]["box"]
        out = label(out, f"#{i}", box[0] if box else x, (box[1] if box else y) - 22, colour(i))
    if state and state.get("corner") is not None:
        out = draw_corner(out, *state["corner"], colour(state["current"]))
    return out


def draw_detections(frame: np.ndarray, detections: list[dict]) -> np.ndarray:
    """One video frame with its `process_video` detections: mask (when "mask_b64" is present), box
    and "#track_id conf" tag, each in the object's colour."""
    height, width = _check(frame).shape[:2]
    masked = [(d["track_id"], decode_mask(d["mask_b64"])) for d in detections if "mask_b64" in d]
    out = blend_masks(frame, masked)
    boxes = [(d["track_id"], (d["x"] * width, d["y"] * height, (d["x"] + d["w"]) * width,
                              (d["y"] + d["h"]) * height)) for d in detections]
    out = draw_boxes(out, boxes, labels=False)
    for d, (_, (x0, y0, _, _)) in zip(detections, boxes):
        out = label(out, f"#{d['track_id']} {d['conf']:.2f}", round(x0), round(y0) - 22, colour(d["track_id"]))
    return out

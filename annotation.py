"""Click-to-segment state of one picture (an image, or a video's reference frame), per browser session.

A plain JSON-able dict, so gradio keeps one copy per session in a `gr.State`:

    {"objects": [{"points": [[x, y], ...], "labels": [1, 0, ...], "box": [x0, y0, x1, y1] | None,
                  "mask": COCO RLE of the object's last mask | None}, ...],
     "current": index of the object clicks go to,
     "corner": [x, y] of a box's first corner while the second is awaited | None,
     "undo": [earlier states without their own "undo"], ...}

Object i is "#i" in the UI and the i-th seed mask of a video. Clicks: "include" and "exclude"
add a point to the current object; "box" takes two clicks, the two corners. Every change can be
undone (masks included, so undo needs no model call). Pure functions: each returns a new state.
"""

import copy

MODES = ("include", "exclude", "box")
MAX_UNDO = 50


def new() -> dict:
    return {"objects": [_empty()], "current": 0, "corner": None, "undo": []}


def _empty() -> dict:
    return {"points": [], "labels": [], "box": None, "mask": None}


def _step(state: dict | None) -> dict:
    """A copy of `state` whose undo stack ends with `state` itself."""
    state = state or new()
    snapshot = {k: copy.deepcopy(v) for k, v in state.items() if k != "undo"}
    result = copy.deepcopy(snapshot)
    result["undo"] = ([*state.get("undo", []), snapshot])[-MAX_UNDO:]
    return result


def has_prompt(obj: dict) -> bool:
    return bool(obj["points"]) or obj["box"] is not None


def click(state: dict | None, x: int, y: int, mode: str, width: int, height: int) -> tuple[dict, int | None]:
    """Apply a click at pixel (x, y); returns (new state, index of the object to segment again or
    None when no prompt changed yet, i.e. the first corner of a box)."""
    if mode not in MODES:
        raise ValueError(f"unknown click mode {mode!r}; expected one of {MODES}")
    x = int(min(max(x, 0), width - 1))
    y = int(min(max(y, 0), height - 1))
    state = _step(state)
    obj = state["objects"][state["current"]]
    if mode == "box":
        if state["corner"] is None:
            state["corner"] = [x, y]
            return state, None
        cx, cy = state["corner"]
        state["corner"] = None
        x0, x1 = sorted((cx, x))
        y0, y1 = sorted((cy, y))
        obj["box"] = [x0, y0, min(x1 + 1, width), min(y1 + 1, height)]  # corners are pixels: both inside
    else:
        obj["points"].append([x, y])
        obj["labels"].append(1 if mode == "include" else 0)
    return state, state["current"]


def set_mask(state: dict, index: int, rle: dict | None) -> dict:
    """Record object `index`'s mask (part of the current step: not an undo step of its own)."""
    objects = list(state["objects"])
    objects[index] = {**objects[index], "mask": rle}
    return {**state, "objects": objects}


def undo(state: dict | None) -> dict:
    if not state or not state.get("undo"):
        return state or new()
    earlier = copy.deepcopy(state["undo"][-1])
    earlier["undo"] = state["undo"][:-1]  # snapshots are never changed in place: share them
    return earlier


def new_object(state: dict | None) -> dict:
    """Start object #n (clicks go to it; earlier objects keep their masks). No-op while the
    current object is still empty."""
    state = state or new()
    if not has_prompt(state["objects"][state["current"]]):
        return state
    state = _step(state)
    state["objects"].append(_empty())
    state["current"] = len(state["objects"]) - 1
    state["corner"] = None
    return state


def clear_object(state: dict | None) -> dict:
    """Remove the current object's clicks, box and mask (undoable)."""
    state = _step(state)
    state["objects"][state["current"]] = _empty()
    state["corner"] = None
    return state


def clear_all(state: dict | None) -> dict:
    """Forget every object (undoable)."""
    state = _step(state)
    state.update(objects=[_empty()], current=0, corner=None)
    return state


def prompt_arguments(obj: dict) -> tuple[list | None, list | None, list | None]:
    """(bboxes, points, point_labels) for `prompts.parse_image_prompt`: one object per call."""
    boxes = [dict(zip(("x0", "y0", "x1", "y1"), obj["box"]))] if obj["box"] is not None else None
    points = [{"x": x, "y": y} for x, y in obj["points"]] or None
    return boxes, points, (list(obj["labels"]) or None)


def masks(state: dict | None) -> list[tuple[int, dict]]:
    """(object id, RLE) of every object that has a mask, in id order."""
    if not state:
        return []
    return [(i, obj["mask"]) for i, obj in enumerate(state["objects"]) if obj["mask"] is not None]

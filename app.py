"""SAM 2 Space: image and video segmentation over the browser UI, gradio_client and MCP.

The UI and the API meet here: endpoints validate their arguments, run the model through
`samv2_handler` inside ZeroGPU functions, and translate domain errors into `gr.Error`; every
request is timed by stage, logged in one line and counted in /metrics (`served`); admission is
`serving`'s. The browser UI's own handlers (clicks, picking, rendering) draw with `overlays`
and keep their click state with `annotation`; they are hidden from the API.
"""

import spaces  # noqa: I001  (ZeroGPU wants to be imported before torch)

import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import cv2
import gradio as gr
import numpy as np
from PIL import Image

import annotation
import mask_generation
import mcp_patches
import metrics
import overlays
import prompts
import samv2_handler
import serving
import settings
import video_io
from errors import InputError, Sam2SpaceError
from mask_codec import decode_mask, encode_mask, mask_box
from stage_times import StageTimer, format_line

logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"),
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
logger = logging.getLogger("sam2space")

DEFAULT_VARIANT = "small"
mcp_patches.install()  # MCP tool results as JSON text, not Python reprs
metrics.watch_cache(samv2_handler.embedding_cache)


@dataclass
class Call:
    """One request as the serving layer sees it: its stage clocks, variant and answer size."""

    endpoint: str
    timer: StageTimer = field(default_factory=StageTimer)
    variant: str = "-"  # set once validated (a metrics label: never the caller's raw text)
    response_bytes: int | None = None

    def respond(self, result):
        with self.timer.stage("encoding"):
            self.response_bytes = len(json.dumps(result, separators=(",", ":")))
        return result


@contextmanager
def served(endpoint: str, request: gr.Request | None = None):
    """Run one request: time its stages, log them in one line, record its metrics, and turn
    domain errors into gr.Error (AppError for gradio_client, isError for MCP)."""
    call = Call(endpoint)
    wait = serving.queue_wait_s(request)
    if wait is not None:
        call.timer.add("queue_wait", wait)
    started = time.perf_counter()
    outcome, detail = "error", ""
    try:
        yield call
        outcome = "ok"
    except gr.Error:
        outcome = "rejected"
        raise
    except Sam2SpaceError as exc:
        outcome, detail = "rejected", f": {exc}"
        raise gr.Error(str(exc)) from exc
    except Exception as exc:
        logger.exception("%s failed", endpoint)
        raise gr.Error(f"Internal error in {endpoint} ({type(exc).__name__}: {exc}). "
                       "Retry once; if it persists, report it with the input that caused it.") from exc
    finally:
        metrics.observe(endpoint, call.variant, call.timer.seconds, call.response_bytes, outcome)
        logger.info("%s variant=%s %s in %.3fs %s bytes=%s%s", endpoint, call.variant, outcome,
                    time.perf_counter() - started, format_line(call.timer.seconds), call.response_bytes, detail)


# ---------------------------------------------------------------------------------------------
# GPU functions (ZeroGPU runs them in a worker with the GPU attached; elsewhere they run inline)


# Each returns (result, stage seconds): on ZeroGPU it runs in another process, so a timer passed
# in would not come back.


@spaces.GPU(duration=20)
def _segment_image_gpu(variant: str, image: Image.Image, prompt: prompts.ImagePrompt) -> tuple[np.ndarray, dict]:
    models = samv2_handler.get_models(variant).to(samv2_handler.inference_device())
    timer = samv2_handler.stage_timer(models.device)
    return samv2_handler.segment_image(models, image, prompt, timer), timer.seconds


def _video_gpu_duration(variant, frame_paths, masks, ref_frame_idx, *args, **kwargs) -> int:
    """ZeroGPU duration callable: same arguments as `_track_video_gpu`."""
    return samv2_handler.estimate_video_gpu_seconds(len(frame_paths), ref_frame_idx, variant)


@spaces.GPU(duration=_video_gpu_duration)
def _track_video_gpu(variant, frame_paths, masks, ref_frame_idx, drop_masks, async_frame_load,
                     video_load_device, progress=None):
    models = samv2_handler.get_models(variant).to(samv2_handler.inference_device())

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress((done, total), desc="Tracking", unit="frames")

    timer = samv2_handler.stage_timer(models.device)
    detections = samv2_handler.track_video(models, frame_paths, masks, ref_frame_idx, drop_masks=drop_masks,
                                           async_frame_load=async_frame_load,
                                           video_load_device=video_load_device, progress=report, timer=timer)
    return detections, timer.seconds


def _everything_gpu_duration(variant, image, params, *args, **kwargs) -> int:
    """ZeroGPU duration callable: same arguments as `_generate_masks_gpu`."""
    return mask_generation.estimate_gpu_seconds(params, variant, image.width, image.height)


@spaces.GPU(duration=_everything_gpu_duration)
def _generate_masks_gpu(variant: str, image: Image.Image,
                        params: mask_generation.EverythingParams) -> tuple[dict, dict]:
    models = samv2_handler.get_models(variant).to(samv2_handler.inference_device())
    timer = samv2_handler.stage_timer(models.device)
    return mask_generation.generate_masks(models, image, params, timer), timer.seconds


# ---------------------------------------------------------------------------------------------
# Public endpoints (also MCP tools: their names and docstrings are the tool schema)


def process_image(
    im: Image.Image,
    variant: str = DEFAULT_VARIANT,
    bboxes: str | list | None = None,
    points: str | list | None = None,
    point_labels: str | list | None = None,
    output_format: str = "png",
    request: gr.Request = None,
) -> list:
    """Segment objects in an image with SAM 2 from box and/or point prompts; returns one mask per object.

    Prompts are in absolute pixel coordinates of the input image, origin at the top-left corner, x to the right, y down. Objects: each box is one object; with points only, all points describe one single object; with boxes AND points, every box is one object and all the points (with their labels) are added to every box as refinement clicks. The result is a JSON list with one mask per object, in the order of `bboxes` (or a single mask for a points-only prompt). With output_format "png" each mask is a base64-encoded 1-bit PNG string with the input image's width and height, pixel value 1 inside the object and 0 elsewhere. With output_format "rle" each mask is a COCO run-length encoding {"size": [height, width], "counts": "<ascii string>"} as produced by pycocotools (decode with pycocotools.mask.decode after encoding counts to bytes). Images larger than the SAM2_MAX_IMAGE_PIXELS limit (default 16777216 pixels, 4096x4096) are rejected.

    Args:
        im: The image to segment (RGB; other modes are converted). Over MCP pass an http(s) URL or a data: URI.
        variant: SAM 2 model size, one of "tiny", "small", "base_plus", "large" (default "small"); larger is slower and more accurate.
        bboxes: Boxes, one object each, as a JSON list of objects [{"x0": 10, "y0": 20, "x1": 110, "y1": 220}, ...] in absolute pixels (x0, y0 = top-left corner, x1, y1 = bottom-right corner, x1 > x0, y1 > y0, inside the image). A JSON string or an already-parsed list. Empty or null: no boxes; then `points` is required.
        points: Clicks as a JSON list of objects [{"x": 50, "y": 60}, ...] in absolute pixels inside the image; requires `point_labels` with one label per point. Empty or null: no points; then `bboxes` is required.
        point_labels: JSON list of integers, one per point in the same order: 1 = the point is on the object (include), 0 = the point is background (exclude).
        output_format: "png" (default) for base64 1-bit PNG masks, or "rle" for COCO RLE objects (much smaller for large images).

    Returns:
        JSON list with one mask per object: base64 PNG strings ("png") or {"size": [h, w], "counts": str} objects ("rle").
    """
    with served("process_image", request) as call:
        call.variant = variant = prompts.check_variant(variant)
        output_format = prompts.check_output_format(output_format)
        prompts.check_image(im, settings.max_image_pixels())
        prompt = prompts.parse_image_prompt(bboxes, points, point_labels, im.width, im.height)
        samv2_handler.get_models(variant)  # load on the CPU, outside the GPU window
        masks, seconds = _segment_image_gpu(variant, im, prompt)
        call.timer.merge(seconds)
        with call.timer.stage("encoding"):
            encoded = [encode_mask(mask, output_format) for mask in masks]
        return call.respond(encoded)


def process_video(
    video_path: str,
    variant: str = DEFAULT_VARIANT,
    masks: str | list | None = None,
    drop_masks: bool = False,
    ref_frame_idx: int = 0,
    async_frame_load: bool = True,
    sample_fps: float | None = None,
    every_x: int | None = None,
    video_load_device: str = "cpu",
    progress=gr.Progress(),
    request: gr.Request = None,
) -> list:
    """Track objects through a video with SAM 2, given each object's mask on one reference frame.

    Each mask seeds one object on frame `ref_frame_idx`; SAM 2 propagates every object forward to the last frame and, when ref_frame_idx > 0, also backward to frame 0. The video may first be sampled down with `sample_fps` or `every_x`; ALL frame indices (the `ref_frame_idx` input and each detection's "frame") count 0-based in the SAMPLED frame sequence, not original frame numbers (with every_x=5, "frame": 2 is original frame 10). Returns a JSON list of detections sorted by (frame, track_id), one per object per frame in which the object's mask is not empty (absent objects are skipped): {"frame": int, "track_id": int (0-based position of the object's mask in `masks`), "x", "y", "w", "h": the box as [x_min, y_min, width, height] (COCO layout) NORMALISED to 0..1 by the frame width (x, w) and height (y, h), rounded to 6 decimals, "conf": the model's object-presence probability for that frame (sigmoid of SAM 2's object score logit, 0..1, rounded to 4 decimals; the earlier public Space always sent 1), "mask_b64": base64 1-bit PNG of the frame's size, 1 inside the object (omitted when drop_masks is true)}. Limits: at most SAM2_MAX_FRAMES sampled frames per request (default 600) and SAM2_MAX_IMAGE_PIXELS pixels per frame (default 16777216).

    Args:
        video_path: The video file (mp4, webm, avi, mov; decoded with OpenCV). Over MCP pass an http(s) URL or a data: URI.
        variant: SAM 2 model size, one of "tiny", "small", "base_plus", "large" (default "small").
        masks: JSON list with one mask per object to track, each a base64-encoded 1-bit PNG (non-zero = object) with exactly the video frame's width and height, drawn on the reference frame, e.g. ["iVBORw0KGgo...", ...]. A b'...' wrapper and a data:image/png;base64, prefix are accepted and stripped; a COCO RLE object {"size": [h, w], "counts": ...} is accepted too.
        drop_masks: When true, omit "mask_b64" from every detection and return boxes only (default false).
        ref_frame_idx: 0-based index, in the sampled sequence, of the frame the masks were drawn on (default 0). A value > 0 tracks in both directions.
        async_frame_load: When true (default), a background thread preprocesses the frames in chunks of 8 and streams them to the tracker while it propagates, so tracking starts before the whole video is prepared and memory stays flat however long the video is; false preprocesses and keeps every frame first. Both give identical results.
        sample_fps: Sample the video down to about this many frames per second before tracking (> 0; clamped to the source fps; takes precedence over every_x). Empty, null or 0 keeps every frame.
        every_x: Keep only every Nth frame before tracking (>= 1; e.g. 5 keeps original frames 0, 5, 10, ...); ignored when sample_fps is set. Empty, null or 0 keeps every frame.
        video_load_device: Where the preprocessed frames are kept: "cpu" (default; streamed to the GPU frame by frame, low GPU memory) or "cuda" (whole video in GPU memory; only on a GPU server, may run out of memory on long videos).

    Returns:
        JSON list of detections {"frame", "track_id", "x", "y", "w", "h", "conf", "mask_b64"?} sorted by (frame, track_id).
    """
    with served("process_video", request) as call:
        call.variant = variant = prompts.check_variant(variant)
        ref_frame_idx = prompts.check_ref_frame_idx(ref_frame_idx)
        device = prompts.check_video_load_device(video_load_device, samv2_handler.cuda_available())
        seed_masks = prompts.parse_masks(masks)
        info = video_io.probe(video_path)
        prompts.check_image_size(info.width, info.height, settings.max_image_pixels(), "video_path")
        sampling = video_io.plan_sampling(info, prompts.optional_float(sample_fps, "sample_fps"),
                                          prompts.optional_int(every_x, "every_x"))
        samv2_handler.get_models(variant)  # load on the CPU, outside the GPU window
        workdir = tempfile.mkdtemp(prefix="sam2-video-", dir=settings.tmp_root())
        try:
            with call.timer.stage("preprocess"):
                frame_paths = video_io.extract_frames(video_path, workdir, sampling, settings.max_frames())
            width, height = video_io.frame_size(frame_paths[0])
            prompts.check_mask_sizes(seed_masks, width, height)
            prompts.check_ref_in_range(ref_frame_idx, len(frame_paths))
            detections, seconds = _track_video_gpu(variant, frame_paths, seed_masks, ref_frame_idx,
                                                   bool(drop_masks), bool(async_frame_load), device, progress)
            call.timer.merge(seconds)
            return call.respond(detections)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def generate_masks(
    im: Image.Image,
    variant: str = DEFAULT_VARIANT,
    points_per_side: int = 32,
    pred_iou_thresh: float = 0.88,
    stability_score_thresh: float = 0.95,
    crop_n_layers: int = 0,
    min_area: int = 0,
    max_masks: int = 100,
    output_format: str = "rle",
    request: gr.Request = None,
) -> dict:
    """Find every object in an image with SAM 2, without any prompt ("segment everything"); returns compact masks.

    SAM 2 is prompted with a regular grid of points_per_side x points_per_side points spread over the whole image (any aspect ratio), each point giving up to 3 candidate masks; candidates below the predicted-IoU or stability thresholds are dropped and near-duplicates are merged by box non-maximum suppression (IoU 0.7), also across crops. Result: {"image_size": [height, width], "masks": [...], "truncated": bool}. The masks are sorted by area, LARGEST FIRST; each is {"bbox": [x, y, width, height] in absolute pixels (top-left corner, COCO layout), "area": pixel count, "predicted_iou": the model's own quality estimate 0..1, "stability_score": 0..1 (how little the mask changes when its logit threshold moves by +-1), "segmentation": the mask as COCO RLE {"size": [height, width], "counts": "<ascii>"} (output_format "rle", default) or a base64 1-bit PNG of the image's size, 1 inside ("png")}. "truncated" is true when more than max_masks masks passed and the list was cut. No mask passing the thresholds gives "masks": [] (not an error). Cost grows with points_per_side squared and with the crops: crop_n_layers=1 runs 1 + 4 crops, 2 runs 1 + 4 + 16 (each an encoder pass and a full grid). Images over SAM2_MAX_IMAGE_PIXELS (default 16777216) are rejected.

    Args:
        im: The image (RGB; other modes are converted). Over MCP pass an http(s) URL or a data: URI.
        variant: SAM 2 model size, one of "tiny", "small", "base_plus", "large" (default "small").
        points_per_side: Grid points per side of the image and of each crop, 1..64 (default 32, i.e. 1024 prompts).
        pred_iou_thresh: Keep masks whose predicted IoU exceeds this, 0..1 (default 0.88; 0 disables the filter).
        stability_score_thresh: Keep masks whose stability score exceeds this, 0..1 (default 0.95; 0 disables the filter).
        crop_n_layers: 0 (default) for the whole image only; 1 or 2 also segment overlapping crops (2x2, then 4x4 tiles) at full model resolution, for large images with small objects; at most 2.
        min_area: Drop masks smaller than this many pixels (default 0).
        max_masks: Return at most this many masks, the largest ones (default 100, at least 1).
        output_format: "rle" (default) for COCO RLE objects, or "png" for base64 1-bit PNG strings.

    Returns:
        {"image_size": [h, w], "masks": [{"bbox", "area", "predicted_iou", "stability_score", "segmentation"}], "truncated": bool}, masks largest first.
    """
    with served("generate_masks", request) as call:
        call.variant = variant = prompts.check_variant(variant)
        params = mask_generation.check_params(points_per_side, pred_iou_thresh, stability_score_thresh, crop_n_layers,
                                              min_area, max_masks, output_format)
        prompts.check_image(im, settings.max_image_pixels())
        samv2_handler.get_models(variant)  # load on the CPU, outside the GPU window
        result, seconds = _generate_masks_gpu(variant, im, params)
        call.timer.merge(seconds)
        return call.respond(result)


# ---------------------------------------------------------------------------------------------
# Browser UI: event handlers hidden from the API (api_visibility="private"). The model runs
# through the same GPU functions and admission as the endpoints; drawing is in `overlays`, the
# click state machine in `annotation`.

CLICK_MODES = {"Include point": "include", "Exclude point": "exclude", "Box (two corners)": "box"}
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")
UI_FILES = "sam2-ui"  # UI downloads and rendered videos, in gradio's cache (removed by delete_cache)


def ui_output_dir() -> str:
    """A new directory for one UI result, inside gradio's cache: gradio serves it without copying
    and deletes it with the rest of its cache (`delete_cache`)."""
    path = os.path.join(demo.GRADIO_CACHE, UI_FILES, uuid.uuid4().hex)
    os.makedirs(path)
    return path


def write_json(directory: str, name: str, data) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"))
    return path


def _as_rgb(picture) -> np.ndarray:
    return np.asarray(picture.convert("RGB") if isinstance(picture, Image.Image) else picture, np.uint8)


def object_table(state: dict | None) -> str:
    """A Markdown table of the objects with masks: #id, mask box, area, prompts."""
    rows = []
    for obj_id, rle in annotation.masks(state):
        mask = decode_mask(rle)
        obj = state["objects"][obj_id]
        included = sum(obj["labels"])
        prompt = f"{included} include, {len(obj['labels']) - included} exclude" + (", box" if obj["box"] else "")
        box = ", ".join(map(str, mask_box(mask) or ()))
        rows.append(f"| **#{obj_id}** | {box} | {int(mask.sum())} | {prompt} |")
    current = (state or {}).get("current", 0)
    if not rows:
        return "No object yet: click on the picture."
    return ("| object | mask box x, y, w, h | area (px) | clicks |\n|---|---|---|---|\n" + "\n".join(rows)
            + f"\n\nClicks go to **#{current}**.")


def click_to_segment(picture: Image.Image | None, variant: str, state: dict | None, mode: str,
                     evt: gr.SelectData, request: gr.Request | None, argument: str) -> dict:
    """Apply one click to `state` and segment the object it changed (the embedding cache makes
    every click after the first on a picture cost only the decoder)."""
    with served("ui_click", request) as call:
        if picture is None:
            raise InputError(argument, "upload it first, then click on the picture to the right")
        call.variant = variant = prompts.check_variant(variant)
        picture = Image.fromarray(_as_rgb(picture))
        state, target = annotation.click(state, *evt.index[:2], CLICK_MODES.get(mode, "include"),
                                         picture.width, picture.height)
        if target is not None:
            prompt = prompts.parse_image_prompt(*annotation.prompt_arguments(state["objects"][target]),
                                                picture.width, picture.height)
            masks, seconds = _segment_image_gpu(variant, picture, prompt)
            call.timer.merge(seconds)
            with call.timer.stage("encoding"):
                state = annotation.set_mask(state, target, encode_mask(masks[0], "rle"))
        return state


def image_view(image: Image.Image | None, state: dict | None) -> tuple:
    """(state, canvas, objects, JSON download, COCO RLE download) of the Images tab."""
    if image is None:
        return state, None, object_table(None), None, None
    canvas = overlays.draw_annotation(_as_rgb(image), state)
    found = annotation.masks(state)
    if not found:
        return state, canvas, object_table(state), None, None
    directory = ui_output_dir()
    as_png = write_json(directory, "masks.json", [encode_mask(decode_mask(rle), "png") for _, rle in found])
    as_rle = write_json(directory, "masks_coco_rle.json", [rle for _, rle in found])
    return state, canvas, object_table(state), as_png, as_rle


def ui_image_loaded(image):
    return image_view(image, annotation.new())


def ui_image_click(image, variant, state, mode, evt: gr.SelectData, request: gr.Request):
    return image_view(image, click_to_segment(image, variant, state, mode, evt, request, "im"))


def ui_api_overlay(image, result):
    """The canvas for a result of the text-prompt Segment button (objects in box order)."""
    if image is None or not result:
        return None
    return overlays.blend_masks(_as_rgb(image), [(i, decode_mask(m)) for i, m in enumerate(result)])


def video_sampling(video, sample_fps, every_x) -> video_io.Sampling:
    info = video_io.probe(video)
    return video_io.plan_sampling(info, prompts.optional_float(sample_fps, "sample_fps"),
                                  prompts.optional_int(every_x, "every_x"))


def ui_video_loaded(video, sample_fps, every_x, request: gr.Request):
    """A new video or sampling: count the sampled frames, show frame 0, forget picked objects."""
    if video is None:
        return None, None, annotation.new(), object_table(None), gr.update(value=0, maximum=1), "Upload a video."
    with served("ui_video_frame", request):
        sampling = video_sampling(video, sample_fps, every_x)
        count = video_io.count_sampled_frames(video, sampling)
        frame = video_io.sampled_frame(video, sampling, 0)
    note = f"{count} frames after sampling. Click on objects in frame 0 (move the slider to pick another frame)."
    if count > settings.max_frames():
        note += (f" **More than the limit of {settings.max_frames()} frames per request: set Sample FPS or "
                 "Every Xth frame.**")
    return (frame, frame, annotation.new(), object_table(None), gr.update(value=0, maximum=max(count - 1, 1)),
            note)


def ui_video_reference(video, sample_fps, every_x, ref_idx, request: gr.Request):
    """Show the chosen reference frame; objects picked on another frame are forgotten."""
    if video is None:
        return None, None, annotation.new(), object_table(None)
    with served("ui_video_frame", request):
        frame = video_io.sampled_frame(video, video_sampling(video, sample_fps, every_x),
                                       prompts.check_ref_frame_idx(ref_idx))
    return frame, frame, annotation.new(), object_table(None)


def video_view(frame, state):
    if frame is None:
        return state, None, object_table(None)
    return state, overlays.draw_annotation(_as_rgb(frame), state), object_table(state)


def ui_video_click(frame, variant, state, mode, evt: gr.SelectData, request: gr.Request):
    return video_view(frame, click_to_segment(frame, variant, state, mode, evt, request, "video_path"))


# The buttons under a picture and the `annotation` step each one applies (no model call: undo
# restores masks too).
PICTURE_STEPS = {"Undo": annotation.undo, "New object": annotation.new_object,
                 "Clear object": annotation.clear_object, "Clear all": annotation.clear_all}


def step_buttons() -> list[tuple[gr.Button, Callable]]:
    with gr.Row():
        return [(gr.Button(name), step) for name, step in PICTURE_STEPS.items()]


def picture_step(view: Callable, step: Callable) -> Callable:
    """The handler of one step button: apply `step` to the state and show it with `view`."""
    def handler(picture, state):
        return view(picture, step(state))

    return handler


def ui_track(video, variant, state, ref_idx, async_frame_load, sample_fps, every_x, video_load_device,
             progress=gr.Progress(), request: gr.Request = None):
    """Track the objects picked on the reference frame (through `process_video`); detections'
    track_id is the object's "#id" from the picture."""
    found = annotation.masks(state)
    if not found:
        raise gr.Error("Pick at least one object first: click on it in the reference frame (or paste masks "
                       "under 'Masks as JSON' and use that Track button).")
    seeds = [encode_mask(decode_mask(rle), "png") for _, rle in found]
    detections = process_video(video, variant, seeds, False, ref_idx, async_frame_load, sample_fps, every_x,
                               video_load_device, progress=progress, request=request)
    ids = [obj_id for obj_id, _ in found]
    return [{**d, "track_id": ids[d["track_id"]]} for d in detections]


def ui_render_video(video, sample_fps, every_x, detections, progress=gr.Progress(), request: gr.Request = None):
    """The tracked video with each object's mask, box and "#id conf" drawn in its colour (WebM,
    which browsers play), the detections as a JSON download, and a list of them without masks."""
    with served("ui_render_video", request) as call:
        sampling = video_sampling(video, sample_fps, every_x)
        by_frame: dict[int, list] = {}
        for detection in detections or []:
            by_frame.setdefault(detection["frame"], []).append(detection)
        total = max(by_frame, default=-1) + 1  # the tracked frames (0 when nothing was detected)
        directory = ui_output_dir()
        try:
            def annotated():
                for position, frame_bgr in video_io.iter_sampled_frames(video, sampling):
                    if position < total:
                        progress((position, total), desc="Rendering", unit="frames")
                    yield overlays.draw_detections(cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2RGB),
                                                   by_frame.get(position, []))

            with call.timer.stage("encoding"):
                path = os.path.join(directory, "tracked.webm")
                video_io.write_webm(path, annotated(), video_io.sampled_fps(sampling))
            listed = [{k: v for k, v in d.items() if k != "mask_b64"} for d in detections or []]
            return path, write_json(directory, "detections.json", detections or []), listed
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise


def everything_canvas(image, result, selected: int | None = None, decoded: list | None = None) -> np.ndarray | None:
    """Every mask of a generate_masks result in its colour, or `selected` highlighted; `decoded`
    are the result's masks already decoded, in order."""
    if image is None or not result or not result.get("masks"):
        return None if image is None else _as_rgb(image)
    decoded = decoded or [decode_mask(m["segmentation"]) for m in result["masks"]]
    masks = list(enumerate(decoded))
    if selected is not None:  # the picked mask stands out: the others fade
        out = overlays.blend_masks(_as_rgb(image), [m for m in masks if m[0] != selected], alpha=0.2, outline=False)
        out = overlays.blend_masks(out, [masks[selected]], alpha=0.6)
    else:
        out = overlays.blend_masks(_as_rgb(image), masks)
    for i, m in enumerate(result["masks"]):
        if selected is None or i == selected:
            out = overlays.label(out, f"#{i}", m["bbox"][0], m["bbox"][1], overlays.colour(i))
    return out


def ui_everything_overlay(image, result):
    return everything_canvas(image, result), None


def ui_everything_pick(image, result, evt: gr.SelectData):
    """The smallest mask under the click (masks nest: a click on a wheel picks the wheel, not
    the car), highlighted, with its numbers."""
    if image is None or not result or not result.get("masks"):
        return everything_canvas(image, result), None
    x, y = evt.index[:2]
    decoded = [decode_mask(m["segmentation"]) for m in result["masks"]]
    hits = [(m["area"], i) for i, (m, mask) in enumerate(zip(result["masks"], decoded)) if mask[y, x]]
    if not hits:
        return everything_canvas(image, result, decoded=decoded), {"picked": None, "note": f"no mask at ({x}, {y})"}
    _, picked = min(hits)
    numbers = {k: v for k, v in result["masks"][picked].items() if k != "segmentation"}
    return everything_canvas(image, result, picked, decoded), {"picked": picked, **numbers}


def example(name: str) -> str:
    return os.path.join(EXAMPLES, name)


PRIVATE = {"api_visibility": "private", "concurrency_limit": None}  # light UI events: no line of their own
MODEL = {**PRIVATE, **serving.event_settings()}  # UI events that run the model share the pool
RENDER = {**PRIVATE, "concurrency_id": "render", "concurrency_limit": settings.pool_width()}  # CPU-heavy

with gr.Blocks(title="SAM 2: segment images and track objects in videos", delete_cache=(600, 3600)) as demo:
    gr.Markdown("# SAM 2 (Segment Anything 2)\nClick on objects to segment them, track them through videos, "
                "or find everything in an image. Also usable from `gradio_client` and as MCP tools "
                "(`process_image`, `process_video`, `generate_masks`).")
    with gr.Tab("Images"):
        im_state = gr.State(annotation.new())
        with gr.Row():
            with gr.Column(scale=2):
                im_in = gr.Image(label="Image", type="pil", sources=["upload", "clipboard"], height=320)
                im_variant = gr.Dropdown(list(prompts.VARIANTS), value=DEFAULT_VARIANT, label="Model variant")
                im_mode = gr.Radio(list(CLICK_MODES), value="Include point", label="A click on the picture adds")
                im_steps = step_buttons()
                gr.Examples([[example("shapes.png")], [example("shapes_portrait.png")]], inputs=[im_in])
            with gr.Column(scale=3):
                im_canvas = gr.Image(label="Click on an object (each object gets its colour and #id)",
                                     type="numpy", format="png", interactive=False, elem_id="image-canvas")
                im_objects = gr.Markdown(object_table(None), elem_id="image-objects")
                with gr.Row():
                    im_download = gr.DownloadButton("Masks (JSON, base64 PNG)", value=None)
                    im_download_rle = gr.DownloadButton("Masks (COCO RLE)", value=None)
        with gr.Accordion("Prompts as JSON text (what the process_image API takes)", open=False):
            im_boxes = gr.Textbox(label="Boxes (absolute pixels)", lines=3,
                                  placeholder='[{"x0": 10, "y0": 20, "x1": 110, "y1": 220}]')
            im_points = gr.Textbox(label="Points (absolute pixels)", lines=2, placeholder='[{"x": 50, "y": 60}]')
            im_labels = gr.Textbox(label="Point labels (1 include, 0 exclude)", placeholder="[1]")
            im_format = gr.Radio(["png", "rle"], value="png", label="Output format")
            im_button = gr.Button("Segment", variant="primary")
            im_json = gr.JSON(label="Result (JSON)")
        image_outputs = [im_state, im_canvas, im_objects, im_download, im_download_rle]
        im_in.change(ui_image_loaded, [im_in], image_outputs, **PRIVATE)
        im_canvas.select(ui_image_click, [im_in, im_variant, im_state, im_mode], image_outputs, **MODEL)
        for button, step in im_steps:
            button.click(picture_step(image_view, step), [im_in, im_state], image_outputs, **PRIVATE)
        im_button.click(process_image, [im_in, im_variant, im_boxes, im_points, im_labels, im_format],
                        im_json, api_name="process_image", **serving.event_settings()).success(
            ui_api_overlay, [im_in, im_json], im_canvas, **PRIVATE)
    with gr.Tab("Videos"):
        vid_state = gr.State(annotation.new())
        vid_frame = gr.State(None)
        vid_detections = gr.State(None)
        with gr.Row():
            with gr.Column(scale=2):
                vid_in = gr.Video(label="Video", sources=["upload"], height=280, elem_id="video-input")
                vid_variant = gr.Dropdown(list(prompts.VARIANTS), value=DEFAULT_VARIANT, label="Model variant")
                with gr.Row():
                    vid_fps = gr.Number(label="Sample FPS", value=0, info="0 = every frame")
                    vid_every = gr.Number(label="Every Xth frame", value=0, precision=0,
                                          info="0 = every frame; ignored when Sample FPS is set")
                vid_note = gr.Markdown("Upload a video.")
                vid_ref = gr.Slider(0, 1, value=0, step=1, label="Reference frame (in the sampled sequence)")
                vid_mode = gr.Radio(list(CLICK_MODES), value="Include point", label="A click on the frame adds")
                vid_steps = step_buttons()
                with gr.Accordion("Options", open=False):
                    vid_async = gr.Checkbox(label="Async frame load", value=True,
                                            info="stream frames into the tracker while it runs (same results, "
                                                 "first masks sooner)")
                    vid_device = gr.Dropdown(["cpu", "cuda"], value="cpu", label="Video load device")
                vid_track = gr.Button("Track picked objects", variant="primary", elem_id="track-button")
                gr.Examples([[example("moving_shapes.webm")]], inputs=[vid_in])
            with gr.Column(scale=3):
                vid_canvas = gr.Image(label="Reference frame: click on the objects to track", type="numpy",
                                      format="png", interactive=False, elem_id="video-canvas")
                vid_objects = gr.Markdown(object_table(None), elem_id="video-objects")
                vid_out = gr.Video(label="Tracked objects", interactive=False, elem_id="video-output")
                vid_download = gr.DownloadButton("Detections (JSON, with masks)", value=None)
                vid_tracks = gr.JSON(label="Detections (masks left out; the download has them)", open=False,
                                     elem_id="video-detections")
        with gr.Accordion("Masks as JSON text (what the process_video API takes)", open=False):
            vid_masks = gr.Textbox(label="Masks on the reference frame (JSON list of base64 PNGs)", lines=4,
                                   placeholder='["iVBORw0KGgo..."]')
            vid_drop = gr.Checkbox(label="Drop masks (boxes only)", value=True)
            vid_api_ref = gr.Number(label="Reference frame index (in the sampled sequence)", value=0, precision=0)
            vid_button = gr.Button("Track pasted masks")
            vid_json = gr.JSON(label="Result (JSON)")
        video_view_outputs = [vid_state, vid_canvas, vid_objects]
        sampling_inputs = [vid_in, vid_fps, vid_every]
        for trigger in (vid_in.change, vid_fps.submit, vid_every.submit):
            trigger(ui_video_loaded, sampling_inputs,
                    [vid_frame, vid_canvas, vid_state, vid_objects, vid_ref, vid_note], **PRIVATE)
        vid_ref.release(ui_video_reference, [*sampling_inputs, vid_ref],
                        [vid_frame, vid_canvas, vid_state, vid_objects], **PRIVATE)
        vid_canvas.select(ui_video_click, [vid_frame, vid_variant, vid_state, vid_mode], video_view_outputs, **MODEL)
        for button, step in vid_steps:
            button.click(picture_step(video_view, step), [vid_frame, vid_state], video_view_outputs, **PRIVATE)
        render_outputs = [vid_out, vid_download, vid_tracks]
        vid_track.click(ui_track, [vid_in, vid_variant, vid_state, vid_ref, vid_async, vid_fps, vid_every,
                                   vid_device], vid_detections, **MODEL).success(
            ui_render_video, [*sampling_inputs, vid_detections], render_outputs, **RENDER)
        vid_button.click(process_video, [vid_in, vid_variant, vid_masks, vid_drop, vid_api_ref, vid_async, vid_fps,
                                         vid_every, vid_device], vid_json, api_name="process_video",
                         **serving.event_settings()).success(
            ui_render_video, [*sampling_inputs, vid_json], render_outputs, **RENDER)
    with gr.Tab("Everything"):
        with gr.Row():
            with gr.Column(scale=2):
                ev_in = gr.Image(label="Image", type="pil", height=320)
                ev_variant = gr.Dropdown(list(prompts.VARIANTS), value=DEFAULT_VARIANT, label="Model variant")
                # Numbers, not sliders: a slider rejects out-of-range API values with a message that
                # does not name the argument; our own validation does.
                ev_points = gr.Number(label=f"Points per side (1..{mask_generation.MAX_POINTS_PER_SIDE})", value=32,
                                      precision=0)
                with gr.Accordion("Thresholds and limits", open=False):
                    ev_iou = gr.Number(label="Predicted IoU threshold (0..1)", value=0.88)
                    ev_stability = gr.Number(label="Stability score threshold (0..1)", value=0.95)
                    ev_layers = gr.Number(label=f"Crop layers (0..{mask_generation.MAX_CROP_N_LAYERS}, "
                                                "for large images)", value=0, precision=0)
                    ev_min_area = gr.Number(label="Minimum area (pixels)", value=0, precision=0)
                    ev_max = gr.Number(label="Maximum masks", value=100, precision=0)
                    ev_format = gr.Radio(["rle", "png"], value="rle", label="Output format")
                ev_button = gr.Button("Segment everything", variant="primary")
                gr.Examples([[example("shapes.png")]], inputs=[ev_in])
            with gr.Column(scale=3):
                ev_canvas = gr.Image(label="Masks (click one to see its numbers)", type="numpy", format="png",
                                     interactive=False, elem_id="everything-canvas")
                ev_picked = gr.JSON(label="Picked mask", elem_id="everything-picked")
                with gr.Accordion("Result (JSON)", open=False):
                    ev_json = gr.JSON(label="Result (JSON)")
        ev_button.click(generate_masks, [ev_in, ev_variant, ev_points, ev_iou, ev_stability, ev_layers, ev_min_area,
                                         ev_max, ev_format], ev_json, api_name="generate_masks",
                        **serving.event_settings()).success(
            ui_everything_overlay, [ev_in, ev_json], [ev_canvas, ev_picked], **PRIVATE)
        ev_canvas.select(ui_everything_pick, [ev_in, ev_json], [ev_canvas, ev_picked], **PRIVATE)


serving.install(demo)
mcp_patches.install_busy_answer(lambda: serving.busy_message(serving.waiting(demo)))


def launch_kwargs() -> dict:
    """What `demo.launch` needs besides the address: MCP, the API docs and /metrics (fresh each
    time: gradio adds to app_kwargs)."""
    return {"mcp_server": True, "app_kwargs": {"docs_url": "/docs", "routes": [metrics.route()]}}


def warm_up(variant: str = DEFAULT_VARIANT, slots: int | None = None) -> dict:
    """Load `variant` and run one real inference per pool slot, all at once (each on its own
    image, so each runs the encoder), before the app accepts requests. Returns the seconds."""
    slots = slots or settings.pool_width()
    started = time.perf_counter()
    samv2_handler.get_models(variant)
    loaded = time.perf_counter() - started
    prompt = prompts.parse_image_prompt([{"x0": 16, "y0": 16, "x1": 48, "y1": 48}], None, None, 64, 64)
    errors = []

    def run(slot: int) -> None:
        try:
            _segment_image_gpu(variant, Image.new("RGB", (64, 64), (slot * 40 % 256, 90, 160)), prompt)
        except Exception as exc:  # reported below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(slot,), name=f"sam2-warm-up-{slot}") for slot in range(slots)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"warm-up of {variant} failed") from errors[0]
    warmed = time.perf_counter() - started
    logger.info("warm start: %s loaded in %.2fs, %d pool slots warmed in %.2fs", variant, loaded, slots, warmed)
    return {"load_s": loaded, "warm_up_s": warmed, "slots": slots}


if __name__ == "__main__":
    if settings.warm_start():
        warm_up()
    demo.launch(**launch_kwargs())

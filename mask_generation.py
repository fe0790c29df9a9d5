"""Segment everything: automatic mask generation from a grid of point prompts (no gradio here).

Built from transformers' own building blocks, called the way its `mask-generation` pipeline
calls them: `Sam2ImageProcessor.generate_crop_boxes` (crops), `Sam2Model.get_image_embeddings`
(once per crop), the mask decoder on batches of single-point prompts (3 masks each),
`post_process_masks`, `filter_masks` (predicted-IoU and stability thresholds, masks cut by a
crop border) and `post_process_for_mask_generation` (box NMS across every crop).

One thing is done differently on purpose: the prompt grid. The pipeline scales its grid by the
longest edge (a SAM 1 habit), but SAM 2 squashes every crop to a square, so on a 4:3 image the
bottom quarter is never prompted. Here each axis is scaled by its own length (`crop_point_grid`).
"""

from dataclasses import dataclass

import torch
from PIL import Image
from transformers.models.sam2.image_processing_sam2 import (_batched_mask_to_box, _build_point_grid,
                                                            _compute_stability_score, _is_box_near_crop_edge)

from embedding_cache import pixels_digest
from errors import InputError
from mask_codec import encode_mask, mask_box
from samv2_handler import image_embeddings, inference_context
from stage_times import StageTimer

MAX_POINTS_PER_SIDE = 64  # 4096 prompts per crop
MAX_CROP_N_LAYERS = 2  # 1 + 4 + 16 = 21 crops
CROP_OVERLAP_RATIO = 512 / 1500  # transformers' and SAM's default
CROPS_NMS_THRESH = 0.7
MAX_POINTS_PER_BATCH = 64  # the pipeline's default
BATCH_BYTES = 256 * 2**20  # full-resolution logits of one prompt batch stay under this


@dataclass(frozen=True)
class EverythingParams:
    points_per_side: int = 32
    pred_iou_thresh: float = 0.88
    stability_score_thresh: float = 0.95
    crop_n_layers: int = 0
    min_area: int = 0
    max_masks: int = 100
    output_format: str = "rle"


def _whole(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise InputError(name, f"{value!r} must be a whole number")
    return int(value)


def _fraction(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InputError(name, f"{value!r} must be a number between 0 and 1")
    return float(value)


def check_params(points_per_side, pred_iou_thresh, stability_score_thresh, crop_n_layers, min_area, max_masks,
                 output_format) -> EverythingParams:
    """Validate the public arguments (`None` means the default); raises InputError naming the argument."""
    defaults = EverythingParams()
    pick = lambda value, default: default if value is None or value == "" else value  # noqa: E731
    points = _whole(pick(points_per_side, defaults.points_per_side), "points_per_side")
    if not 1 <= points <= MAX_POINTS_PER_SIDE:
        raise InputError("points_per_side", f"{points} must be between 1 and {MAX_POINTS_PER_SIDE} (the grid has "
                         "points_per_side squared prompts per crop; 32 is the usual choice)")
    layers = _whole(pick(crop_n_layers, defaults.crop_n_layers), "crop_n_layers")
    if not 0 <= layers <= MAX_CROP_N_LAYERS:
        raise InputError("crop_n_layers", f"{layers} must be between 0 and {MAX_CROP_N_LAYERS} (layer i adds "
                         "4**i crops, each costing one encoder pass and a full prompt grid)")
    area = _whole(pick(min_area, defaults.min_area), "min_area")
    if area < 0:
        raise InputError("min_area", f"{area} must be >= 0 (pixels)")
    cap = _whole(pick(max_masks, defaults.max_masks), "max_masks")
    if cap < 1:
        raise InputError("max_masks", f"{cap} must be >= 1")
    fmt = pick(output_format, defaults.output_format)
    if fmt not in ("rle", "png"):
        raise InputError("output_format", f"{fmt!r} is not supported; use \"rle\" or \"png\"")
    return EverythingParams(points, _fraction(pick(pred_iou_thresh, defaults.pred_iou_thresh), "pred_iou_thresh"),
                            _fraction(pick(stability_score_thresh, defaults.stability_score_thresh),
                                      "stability_score_thresh"), layers, area, cap, fmt)


def crop_point_grid(n: int, crop_width: int, crop_height: int, target_size: int) -> torch.Tensor:
    """The prompt grid of one crop in model input coordinates (the crop squashed to target x target).

    transformers' unit grid (n x n cell centres in [0, 1]^2) is placed in crop pixels, then each
    axis is scaled by target / its own length.
    (Written as the pipeline writes its scaling, so on square crops the numbers are bit-identical
    to the pipeline's.)
    """
    points = _build_point_grid(n) * torch.tensor([crop_width, crop_height], dtype=torch.float32)
    points[..., 0] = points[..., 0] * (target_size / crop_width)
    points[..., 1] = points[..., 1] * (target_size / crop_height)
    return points


def points_per_batch(crop_height: int, crop_width: int) -> int:
    """Prompts per decoder batch so that 3 full-resolution float masks per prompt fit BATCH_BYTES."""
    per_prompt = 3 * crop_height * crop_width * 4 * 2  # logits plus the binarised copies
    return max(1, min(MAX_POINTS_PER_BATCH, BATCH_BYTES // per_prompt))


def generate_masks(models, image: Image.Image, params: EverythingParams, timer: StageTimer | None = None) -> dict:
    """All masks of `image`: {"image_size": [h, w], "masks": [...], "truncated": bool}.

    Masks are sorted by area, largest first; each is {"bbox": [x, y, w, h] in absolute pixels,
    "area": pixels, "predicted_iou", "stability_score", "segmentation": RLE dict or base64 PNG}.
    `timer` receives seconds per stage: preprocess and encoder (cache misses only), decoder (the
    prompt grid, with mask upscaling), postprocess (thresholds), nms, encoding.
    """
    device = models.device
    model = models.image_model
    processor = models.image_processor.image_processor
    target = models.image_processor.target_size
    timer = timer or StageTimer()
    image = image.convert("RGB")
    width, height = image.size

    with timer.stage("preprocess"):
        crop_boxes, _, cropped_images, _ = processor.generate_crop_boxes(
            image, target, params.crop_n_layers, CROP_OVERLAP_RATIO, params.points_per_side, 1, device=device)
        pixels = pixels_digest(image)
    all_rles, all_scores, all_boxes = [], [], []
    with inference_context(device):
        for crop_box, crop in zip(crop_boxes, cropped_images):
            crop_height, crop_width = crop.shape[-2:]
            original_sizes = torch.tensor([[crop_height, crop_width]], device=device)
            embeddings, _ = image_embeddings(
                models, pixels, lambda crop=crop: processor(images=[crop], return_tensors="pt")["pixel_values"],
                crop_box=crop_box.tolist(), timer=timer)
            grid = crop_point_grid(params.points_per_side, crop_width, crop_height, target).to(device)
            batch = points_per_batch(crop_height, crop_width)
            for start in range(0, grid.shape[0], batch):
                points = grid[start:start + batch]
                with timer.stage("decoder"):
                    outputs = model(image_embeddings=embeddings, input_points=points[None, :, None, :],
                                    input_labels=torch.ones(1, points.shape[0], 1, dtype=torch.int64, device=device),
                                    multimask_output=True)
                    logits = processor.post_process_masks(outputs.pred_masks.float(), original_sizes,
                                                          binarize=False)[0]
                    iou_scores = outputs.iou_scores[0].float()
                with timer.stage("postprocess"):
                    rles, scores, boxes = processor.filter_masks(
                        logits, iou_scores, (height, width), crop_box, params.pred_iou_thresh,
                        params.stability_score_thresh, 0.0, 1)
                    _attach_stability(rles, logits, iou_scores, crop_box, (height, width), params)
                all_rles.extend(rles)
                all_scores.append(scores)
                all_boxes.append(boxes)
                del logits, outputs
    if not all_rles:
        return assemble_result([], height, width, params)
    with timer.stage("nms"):
        masks, scores, rles, _ = processor.post_process_for_mask_generation(
            all_rles, torch.cat(all_scores), torch.cat(all_boxes), CROPS_NMS_THRESH)
    with timer.stage("encoding"):
        candidates = [(mask.cpu().numpy(), score, rle["stability_score"])
                      for mask, score, rle in zip(masks, scores.tolist(), rles)]
        return assemble_result(candidates, height, width, params)


def assemble_result(candidates, height: int, width: int, params: EverythingParams) -> dict:
    """The public result from (mask, predicted_iou, stability_score) candidates: empty masks and
    masks under `min_area` dropped, largest first, cut to `max_masks` (then `truncated`), encoded."""
    kept = []
    for mask, score, stability in candidates:
        area = int(mask.sum())
        if area >= max(params.min_area, 1):
            kept.append((area, mask, score, stability))
    kept.sort(key=lambda item: -item[0])
    masks = [{"bbox": list(mask_box(mask)), "area": area, "predicted_iou": round(float(score), 4),
              "stability_score": round(float(stability), 4), "segmentation": encode_mask(mask, params.output_format)}
             for area, mask, score, stability in kept[:params.max_masks]]
    return {"image_size": [height, width], "masks": masks, "truncated": len(kept) > params.max_masks}


def _attach_stability(rles: list[dict], logits: torch.Tensor, iou_scores: torch.Tensor, crop_box, size,
                      params: EverythingParams) -> None:
    """Record each kept mask's stability score in its RLE dict (which NMS passes through).

    `filter_masks` returns no stability scores; its selection is replayed here with the same
    helpers (score thresholds, then masks cut by a crop border) and checked against its count.
    """
    flat_logits, flat_iou = logits.flatten(0, 1), iou_scores.flatten(0, 1)
    stability = _compute_stability_score(flat_logits, 0.0, 1)
    keep = torch.ones_like(flat_iou, dtype=torch.bool)
    if params.pred_iou_thresh > 0.0:
        keep &= flat_iou > params.pred_iou_thresh
    if params.stability_score_thresh > 0.0:
        keep &= stability > params.stability_score_thresh
    boxes = _batched_mask_to_box(flat_logits[keep] > 0.0)
    near_edge = _is_box_near_crop_edge(boxes, crop_box, [0, 0, size[1], size[0]])
    kept = stability[keep][~near_edge].tolist()
    if len(kept) != len(rles):
        raise RuntimeError(f"filter_masks kept {len(rles)} masks but its replay kept {len(kept)}: the installed "
                           "transformers changed filter_masks; update _attach_stability")
    for rle, score in zip(rles, kept):
        rle["stability_score"] = score


# Rough GPU seconds for ZeroGPU: one encoder pass per crop plus the prompt grid's decoding,
# post-processing and filtering (which grow with the crop's pixels).
GPU_SECONDS_PER_CROP = {"tiny": 0.5, "small": 0.6, "base_plus": 0.9, "large": 1.5}
GPU_SECONDS_PER_PROMPT_MEGAPIXEL = 0.004


def crop_count(crop_n_layers: int) -> int:
    return sum(4 ** layer for layer in range(crop_n_layers + 1))


def estimate_gpu_seconds(params: EverythingParams, variant: str, width: int, height: int) -> int:
    crops = crop_count(params.crop_n_layers)
    megapixels = width * height / 1e6 * (1 + 2 * params.crop_n_layers * CROP_OVERLAP_RATIO)  # crops overlap
    prompts = params.points_per_side ** 2
    seconds = 10 + crops * GPU_SECONDS_PER_CROP.get(variant, 1.5) + \
        prompts * megapixels * GPU_SECONDS_PER_PROMPT_MEGAPIXEL * (params.crop_n_layers + 1)
    return int(min(300, max(20, round(seconds))))

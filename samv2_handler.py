"""SAM 2 models, processors, devices and inference (transformers; no gradio here).

One checkpoint per variant serves every endpoint: `Sam2VideoModel` is loaded from the source
and `Sam2Model` (the image path) is made to hold the *same* parameter tensors, so a variant
costs one copy of the weights. At most `MAX_LOADED_VARIANTS` variants stay loaded; the least
recently used one is dropped.

Models are built on the CPU (ZeroGPU forbids CUDA in the main process) and moved to the
inference device inside the GPU function (`Sam2Models.to`). On CUDA inference runs under
bf16 autocast; on the CPU in plain fp32.

Images: `segment_image` decodes prompts against image embeddings from the embedding cache.
Videos: `track_video` runs either `track_video_streaming` (frames streamed in by a
`frame_loader.FrameLoader`, memory bounded in the video's length) or `track_video_eager`
(transformers' own whole-video session); both give identical results.
"""

import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from PIL import Image
from transformers import Sam2Model, Sam2Processor, Sam2VideoModel, Sam2VideoProcessor
from transformers.models.sam2_video.modeling_sam2_video import Sam2VideoInferenceSession

import frame_loader
import settings
from embedding_cache import EmbeddingCache, embedding_key, pixels_digest
from errors import ModelLoadError
from mask_codec import encode_png_b64, mask_box
from prompts import ImagePrompt, check_ref_in_range, check_variant
from stage_times import StageTimer
from video_io import frame_size, read_frames

logger = logging.getLogger("sam2space")

HUB_IDS = {
    "tiny": "facebook/sam2.1-hiera-tiny",
    "small": "facebook/sam2.1-hiera-small",
    "base_plus": "facebook/sam2.1-hiera-base-plus",
    "large": "facebook/sam2.1-hiera-large",
}
MAX_LOADED_VARIANTS = 2
Progress = Callable[[int, int], None]


def model_source(variant: str) -> str:
    """Where `variant` loads from: `SAM2_MODEL` when set (for every variant), else its Hub id."""
    check_variant(variant)
    return settings.model_override() or HUB_IDS[variant]


@dataclass
class Sam2Models:
    """Everything one variant needs; `image_model` shares its parameters with `video_model`."""

    variant: str
    source: str
    video_model: "torch.nn.Module"
    image_model: "torch.nn.Module"
    video_processor: object
    image_processor: object
    revision: str = ""  # identifies the weights: Hub commit, or size and mtime of a local file
    device: torch.device = torch.device("cpu")
    _move_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def to(self, device: torch.device | str) -> "Sam2Models":
        """Move both models (one set of shared parameters) to `device`; a no-op when already there.

        Serialised, so that concurrent first requests on a GPU server move the weights once.
        """
        device = torch.device(device)
        with self._move_lock:
            if device != self.device:
                self.video_model.to(device)
                # Module._apply may replace Parameter objects (when the tensor types are not
                # shallow-copy compatible), so re-point the image model at the moved ones before
                # moving its buffers: the weights are never copied twice.
                _share_parameters(self.image_model, self.video_model)
                self.image_model.to(device)
                self.device = device
        return self


def _share_parameters(image_model: torch.nn.Module, video_model: torch.nn.Module) -> int:
    """Point every parameter of `image_model` at the same-named Parameter of `video_model`.

    Returns how many were shared; a missing or mis-shaped counterpart is a load error, since
    the two models would then disagree about the weights.
    """
    video_params = dict(video_model.named_parameters())
    shared = 0
    for name, param in list(image_model.named_parameters()):
        twin = video_params.get(name)
        if twin is None or twin.shape != param.shape:
            raise ModelLoadError(f"image and video checkpoints disagree on parameter {name!r}")
        owner_name, _, leaf = name.rpartition(".")
        owner = image_model.get_submodule(owner_name) if owner_name else image_model
        setattr(owner, leaf, twin)
        shared += 1
    return shared


def _is_local_source(source: str) -> bool:
    """A Hub id is `name` or `org/name`; anything path-like (or existing on disk) is local."""
    return os.path.exists(os.path.expanduser(source)) or source.startswith((".", "/", "~")) \
        or source.count("/") > 1 or "\\" in source


def load_models(variant: str) -> Sam2Models:
    """Build one variant on the CPU. Raises ModelLoadError naming the source and the fix."""
    source = model_source(variant)
    hint = ("Set SAM2_MODEL to a local directory holding a SAM 2 checkpoint saved with "
            "save_pretrained (config.json, model.safetensors, processor_config.json) or to a Hub id "
            "this machine can download.")
    target = source
    if _is_local_source(source):
        target = os.path.expanduser(source)
        if not os.path.isdir(target):
            raise ModelLoadError(f"Could not load SAM 2 variant {variant!r}: {source!r} is not a directory. "
                                 f"{hint}")
    started = time.perf_counter()
    try:
        video_model = Sam2VideoModel.from_pretrained(target).eval()
        image_model = Sam2Model.from_pretrained(target).eval()
        video_processor = Sam2VideoProcessor.from_pretrained(target)
        image_processor = Sam2Processor.from_pretrained(target)
    except Exception as exc:  # a broken checkpoint fails in many library-specific ways; the cause is chained
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"Could not load SAM 2 variant {variant!r} from {source!r}: {first_line}. "
                             f"{hint}") from exc
    count = _share_parameters(image_model, video_model)
    logger.info("loaded %s from %s in %.1fs (%d parameters shared by image and video models)",
                variant, source, time.perf_counter() - started, count)
    return Sam2Models(variant, source, video_model, image_model, video_processor, image_processor,
                      revision=_revision(video_model, target))


def _revision(model: torch.nn.Module, target: str) -> str:
    """The Hub commit of the weights, or for a local directory the size and mtime of its files."""
    commit = getattr(model.config, "_commit_hash", None)
    if commit:
        return commit
    if os.path.isdir(target):
        stats = [os.stat(os.path.join(target, name)) for name in sorted(os.listdir(target))
                 if name.endswith((".safetensors", ".bin", ".json"))]
        return ";".join(f"{st.st_size}:{st.st_mtime_ns}" for st in stats)
    return "unknown"


class ModelRegistry:
    """Loaded variants, least recently used first; at most `capacity` stay loaded."""

    def __init__(self, capacity: int = MAX_LOADED_VARIANTS, loader: Callable[[str], Sam2Models] = load_models):
        self.capacity = capacity
        self._loader = loader
        self._models: OrderedDict[tuple[str, str], Sam2Models] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, variant: str) -> Sam2Models:
        key = (variant, model_source(variant))
        with self._lock:  # loading is rare and serialised; hits are a dict lookup
            models = self._models.get(key)
            if models is None:
                models = self._loader(variant)
                self._models[key] = models
                while len(self._models) > self.capacity:
                    (old_variant, _), _old = self._models.popitem(last=False)
                    logger.info("unloading %s (more than %d variants loaded)", old_variant, self.capacity)
                    del _old
                    if torch.cuda.is_initialized():  # never initialise CUDA here (ZeroGPU main process)
                        torch.cuda.empty_cache()
            self._models.move_to_end(key)
            return models

    def loaded(self) -> list[str]:
        with self._lock:
            return [variant for variant, _ in self._models]

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


registry = ModelRegistry()


def get_models(variant: str) -> Sam2Models:
    return registry.get(variant)


def cuda_available() -> bool:
    return torch.cuda.is_available()


def inference_device() -> torch.device:
    return torch.device("cuda" if cuda_available() else "cpu")


def stage_timer(device: torch.device) -> StageTimer:
    """A request's stage clocks; on CUDA each reading waits for the GPU work queued before it."""
    return StageTimer(torch.cuda.synchronize if device.type == "cuda" else None)


@contextmanager
def inference_context(device: torch.device):
    """inference_mode, plus bf16 autocast on CUDA. Both are thread-local: enter in the model's thread."""
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()
    with torch.inference_mode(), autocast:
        yield


# ---------------------------------------------------------------------------------------------
# Images


embedding_cache = EmbeddingCache(settings.embedding_cache_bytes())


def image_embeddings(models: Sam2Models, pixels: str, pixel_values: Callable[[], torch.Tensor],
                     crop_box=None, timer: StageTimer | None = None) -> tuple[list[torch.Tensor], bool]:
    """(embeddings, cache hit) for the image whose `pixels_digest` is `pixels` (or its `crop_box`);
    `pixel_values()` is called on a miss only (timed as "preprocess", the encoder as "encoder")."""
    timer = timer or StageTimer()
    key = embedding_key(models.source, models.revision, models.variant, models.device, pixels, crop_box)

    def encode():
        with timer.stage("preprocess"):
            values = pixel_values().to(models.device)
        with timer.stage("encoder"):
            return models.image_model.get_image_embeddings(values)

    return embedding_cache.get_or_compute(key, encode)


def image_prompt_kwargs(prompt: ImagePrompt) -> dict:
    """Processor prompt arguments for one image.

    Boxes: one object per box. Points only: one object described by all points. Boxes and
    points together: one object per box, and every box is refined by all the points.
    """
    kwargs = {}
    objects = max(len(prompt.boxes), 1)
    if prompt.boxes:
        kwargs["input_boxes"] = [prompt.boxes]
    if prompt.points:
        kwargs["input_points"] = [[prompt.points] * objects]
        kwargs["input_labels"] = [[prompt.labels] * objects]
    return kwargs


def segment_image(models: Sam2Models, image: Image.Image, prompt: ImagePrompt,
                  timer: StageTimer | None = None) -> np.ndarray:
    """Masks for one image: bool array (objects, height, width), objects in box order.

    The image embedding comes from the embedding cache when this image was seen before; the
    encoder-decoder split gives the same masks bit for bit as a full forward (tested).
    `timer` receives the preprocess, encoder, decoder and postprocess seconds.
    """
    device = models.device
    timer = timer or StageTimer()
    processor = models.image_processor
    with timer.stage("preprocess"):
        image = image.convert("RGB")
        pixels = pixels_digest(image)
        prompts = processor(original_sizes=[[image.height, image.width]], return_tensors="pt",
                            **image_prompt_kwargs(prompt)).to(device)
    with inference_context(device):
        embeddings, _ = image_embeddings(
            models, pixels, lambda: processor(images=image, return_tensors="pt")["pixel_values"], timer=timer)
        with timer.stage("decoder"):
            outputs = models.image_model(image_embeddings=embeddings, multimask_output=False,
                                         **{k: v for k, v in prompts.items() if k != "original_sizes"})
    with timer.stage("postprocess"):
        masks = processor.post_process_masks(outputs.pred_masks.float().cpu(), prompts["original_sizes"].cpu())[0]
        return masks[:, 0].numpy().astype(bool)


# ---------------------------------------------------------------------------------------------
# Videos


@dataclass
class FrameResult:
    """One propagation step: per-object mask logits at frame size and object-score logits."""

    frame_idx: int
    object_ids: list[int]
    mask_logits: torch.Tensor  # (objects, height, width), float32, CPU
    object_score_logits: torch.Tensor  # (objects,), float32, CPU


def _frame_result(models: Sam2Models, output, height: int, width: int, timer: StageTimer) -> FrameResult:
    """One step's output at frame size, on the CPU (timed as "postprocess")."""
    with timer.stage("postprocess"):
        logits = models.video_processor.post_process_masks(
            [output.pred_masks.float()], original_sizes=[[height, width]], binarize=False)[0]
        return FrameResult(
            frame_idx=int(output.frame_idx),
            object_ids=list(output.object_ids),
            mask_logits=logits[:, 0].float().cpu(),
            object_score_logits=output.object_score_logits.float().reshape(-1).cpu(),
        )


def session_dtype(device: torch.device) -> torch.dtype:
    # bf16 halves frame storage and matches the CUDA autocast; the CPU runs fp32 weights.
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def propagation_order(num_frames: int, ref_frame_idx: int) -> list[tuple[int, bool]]:
    """(frame_idx, reverse) for every step after seeding, as transformers' iterator makes them:
    forward ref..N-1, then, when ref > 0, reverse ref..0 (the reference frame itself again)."""
    forward = [(i, False) for i in range(ref_frame_idx, num_frames)]
    backward = [(i, True) for i in range(ref_frame_idx, -1, -1)] if ref_frame_idx > 0 else []
    return forward + backward


def track_video_eager(models: Sam2Models, frame_paths: list[str], masks: list[np.ndarray],
                      ref_frame_idx: int, video_load_device: str = "cpu",
                      progress: Progress | None = None, timer: StageTimer | None = None) -> Iterator[FrameResult]:
    """Seed `masks` (objects 0..K-1) on `ref_frame_idx` and propagate over all frames.

    Every frame is preprocessed up front (`init_video_session(video=frames)`), then transformers'
    own `propagate_in_video_iterator` runs forward from the reference frame and, when
    `ref_frame_idx > 0`, in reverse down to frame 0. Yields one FrameResult per frame, each
    frame once (the reverse pass's repeat of the reference frame is skipped).
    """
    device = models.device
    timer = timer or StageTimer()
    with timer.stage("preprocess"):
        frames = read_frames(frame_paths)
        height, width = frames[0].shape[:2]
        total = len(frames)
        session = models.video_processor.init_video_session(
            video=frames, inference_device=device, processing_device=video_load_device,
            video_storage_device=video_load_device, inference_state_device="cpu", dtype=session_dtype(device))
        del frames
    done = 0
    with inference_context(device):
        models.video_processor.add_inputs_to_inference_session(
            inference_session=session, frame_idx=ref_frame_idx, obj_ids=list(range(len(masks))),
            input_masks=list(masks))
        models.video_model(inference_session=session, frame_idx=ref_frame_idx)  # seed
        passes = [False, True] if ref_frame_idx > 0 else [False]
        for reverse in passes:
            iterator = models.video_model.propagate_in_video_iterator(
                session, start_frame_idx=ref_frame_idx, reverse=reverse)
            for output in iterator:
                if reverse and output.frame_idx == ref_frame_idx:
                    continue
                done += 1
                yield _frame_result(models, output, height, width, timer)
                if progress is not None:
                    progress(done, total)


def frame_detections(result: FrameResult, width: int, height: int, drop_masks: bool) -> list[dict]:
    """Public detections of one frame: one per object whose mask is not empty."""
    detections = []
    masks = (result.mask_logits > 0.0).numpy()
    conf = torch.sigmoid(result.object_score_logits).tolist()
    for obj_id, mask, score in zip(result.object_ids, masks, conf):
        box = mask_box(mask)
        if box is None:
            continue
        x, y, w, h = box
        detection = {"frame": result.frame_idx, "track_id": int(obj_id),
                     "x": round(x / width, 6), "y": round(y / height, 6),
                     "w": round(w / width, 6), "h": round(h / height, 6),
                     "conf": round(float(score), 4)}
        if not drop_masks:
            detection["mask_b64"] = encode_png_b64(mask)
        detections.append(detection)
    return detections


def detections_from_results(results: Iterator[FrameResult], width: int, height: int,
                            drop_masks: bool, timer: StageTimer | None = None) -> list[dict]:
    """Detections of all frames sorted by (frame, track_id); masks are encoded as frames arrive.

    `timer`: waiting for the next result is "propagation" (less the stages the tracker times
    itself), turning it into detections is "encoding"."""
    timer = timer or StageTimer()
    detections = []
    with timer.stage("propagation"):
        for result in results:
            with timer.stage("encoding"):
                detections.extend(frame_detections(result, width, height, drop_masks))
    detections.sort(key=lambda d: (d["frame"], d["track_id"]))
    return detections


def need_order(num_frames: int, ref_frame_idx: int) -> list[int]:
    """Frames in the order propagation first needs them: ref..N-1, then ref-1..0."""
    return list(dict.fromkeys(frame_idx for frame_idx, _ in propagation_order(num_frames, ref_frame_idx)))


class DeclaredLengthSession(Sam2VideoInferenceSession):
    """A streaming session that reports the whole video's length while its frames come and go.

    transformers takes the video length from `num_frames` (`len(processed_frames)`): it is
    `num_total_frames` in `_run_single_frame_inference` (modeling_sam2_video.py line 2651), which
    sizes the object-pointer window `min(num_total_frames, max_object_pointers_in_encoder)` (line
    2361) and bounds the pointer look-back (line 2386). Declaring the length up front keeps those
    numbers exactly what the eager path sees, although frames are appended late and dropped early.
    """

    def __init__(self, total_frames: int, **kwargs):
        super().__init__(**kwargs)
        self.total_frames = total_frames

    @property
    def num_frames(self) -> int:
        return self.total_frames


def readable_window(config) -> int:
    """How far back (in the direction of tracking) a step reads other frames' outputs.

    Memory: `_gather_memory_frame_outputs` reads non-conditioning outputs at offsets
    1..num_maskmem-1 (modeling_sam2_video.py lines 2288-2298). Object pointers:
    `_get_object_pointers` reads offsets 1..max_object_pointers_to_use-1 (lines 2383-2396), at
    most max_object_pointers_in_encoder-1. Conditioning outputs are read at any distance and are
    never dropped.
    """
    return max(config.num_maskmem, config.max_object_pointers_in_encoder) - 1


def _drop_outputs(session, frame_idx: int) -> None:
    for outputs in session.output_dict_per_obj.values():
        outputs["non_cond_frame_outputs"].pop(frame_idx, None)


def track_video_streaming(models: Sam2Models, frame_paths: list[str], masks: list[np.ndarray],
                          ref_frame_idx: int, video_load_device: str = "cpu", progress: Progress | None = None,
                          chunk_size: int = frame_loader.CHUNK_SIZE, timeout_s: float | None = None,
                          parity_gate: bool = True, bounded: bool = True,
                          on_step: Callable[[object, int], None] | None = None,
                          timer: StageTimer | None = None) -> Iterator[FrameResult]:
    """Same results as `track_video_eager`, with frame preprocessing overlapped with propagation.

    A `FrameLoader` thread streams preprocessed frames into the session while this thread seeds
    the objects as soon as the reference frame is in and then steps the model frame by frame
    (`propagate_in_video_iterator` cannot follow a growing session: it reads `num_frames` once),
    making the same calls in the same order as that iterator forward then reverse. Each step
    waits only for the frame it needs, except that the first step waits for
    `min(N, max_object_pointers_in_encoder)` frames (the parity gate): with `streaming=False` the
    model sizes its object-pointer window by `min(session.num_frames, 16)` (`_get_object_pointers`,
    modeling_sam2_video.py line 2361, normalising their temporal encoding at line 2422), so on a
    plain growing session the gate is what keeps the results bit-identical to the eager path.

    `bounded=True` (the default) keeps memory flat in the video's length, without changing a bit:
    the session declares the full length (`DeclaredLengthSession`, which also makes the gate
    harmless); frames are loaded in the order they are needed (ref..N-1, then ref-1..0, so the
    frames before the reference are read from their JPEG only when the reverse pass reaches them)
    and dropped once propagated; the producer stays at most `max(gate, 2 chunks)` frames ahead;
    non-conditioning outputs are dropped once no later step can read them (`readable_window`),
    except that the forward outputs just after the reference frame live until the end, because
    the reverse pass reads them. `bounded=False` is issue 3's plain growing session, kept for the
    test that shows the gate matters. `on_step(session, frame_idx)` is a test probe. `timer`
    receives the postprocess seconds (preprocessing overlaps propagation in the loader thread).
    """
    device = models.device
    timer = timer or StageTimer()
    total = len(frame_paths)
    width, height = frame_size(frame_paths[0])
    config = models.video_model.config
    min_loaded = min(total, config.max_object_pointers_in_encoder) if parity_gate else 0
    if bounded:
        session = DeclaredLengthSession(
            total, video_height=height, video_width=width, inference_device=device,
            inference_state_device="cpu", video_storage_device=video_load_device, dtype=session_dtype(device))
        order, lookahead = need_order(total, ref_frame_idx), max(min_loaded, 2 * chunk_size)
        window = readable_window(config)
        kept_for_reverse = set(range(ref_frame_idx + 1, ref_frame_idx + window + 1)) if ref_frame_idx > 0 else set()
    else:
        session = models.video_processor.init_video_session(
            inference_device=device, video_storage_device=video_load_device, inference_state_device="cpu",
            dtype=session_dtype(device))
        session.video_height, session.video_width = height, width
        order, lookahead = None, None
    done = 0
    with frame_loader.FrameLoader(session, frame_paths, models.video_processor.video_processor,
                                  chunk_size=chunk_size, timeout_s=timeout_s, order=order,
                                  lookahead=lookahead) as loader, inference_context(device):
        loader.wait_for(ref_frame_idx)
        models.video_processor.add_inputs_to_inference_session(
            inference_session=session, frame_idx=ref_frame_idx, obj_ids=list(range(len(masks))),
            input_masks=list(masks))
        models.video_model(inference_session=session, frame_idx=ref_frame_idx)  # seed
        for frame_idx, reverse in propagation_order(total, ref_frame_idx):
            loader.wait_for(frame_idx, min_loaded)
            output = models.video_model(inference_session=session, frame_idx=frame_idx, reverse=reverse)
            if on_step is not None:
                on_step(session, frame_idx)
            if bounded:
                session.processed_frames.pop(frame_idx, None)
                loader.consumed(frame_idx)
                stale = frame_idx + window if reverse else frame_idx - window
                if reverse or stale not in kept_for_reverse:
                    _drop_outputs(session, stale)
            if reverse and frame_idx == ref_frame_idx:
                continue
            done += 1
            yield _frame_result(models, output, height, width, timer)
            if progress is not None:
                progress(done, total)


def track_video(models: Sam2Models, frame_paths: list[str], masks: list[np.ndarray], ref_frame_idx: int,
                drop_masks: bool = False, async_frame_load: bool = True, video_load_device: str = "cpu",
                progress: Progress | None = None, timer: StageTimer | None = None) -> list[dict]:
    """Detections for a video whose sampled frames are the JPEGs `frame_paths`.

    `async_frame_load=True` streams frames in while propagating (`track_video_streaming`);
    `False` preprocesses the whole video first (`track_video_eager`). Both give identical results.
    `timer` receives the preprocess (eager only), propagation, postprocess and encoding seconds.
    """
    timer = timer or StageTimer()
    check_ref_in_range(ref_frame_idx, len(frame_paths))
    width, height = frame_size(frame_paths[0])
    track = track_video_streaming if async_frame_load else track_video_eager
    results = track(models, frame_paths, masks, ref_frame_idx, video_load_device, progress, timer=timer)
    with closing(results):  # runs the generator's cleanup (the loader's join) even if encoding fails
        return detections_from_results(results, width, height, drop_masks, timer)


# Rough GPU seconds per propagation step by variant, frame preprocessing and mask encoding
# included. An underestimate kills the ZeroGPU task mid-run (the whole window is lost); an
# overestimate only raises the caller's quota requirement.
GPU_SECONDS_PER_FRAME = {"tiny": 0.15, "small": 0.2, "base_plus": 0.3, "large": 0.5}
GPU_OVERHEAD_S = 15
GPU_MIN_S = 30
GPU_MAX_S = 300


def estimate_video_gpu_seconds(num_frames: int, ref_frame_idx: int, variant: str) -> int:
    """ZeroGPU duration for tracking `num_frames` sampled frames, clamped to [GPU_MIN_S, GPU_MAX_S].

    Steps: seeding + forward (ref..N-1) + reverse (ref-1..0) = N + 1 whatever `ref_frame_idx` is:
    the reverse pass covers exactly the frames the forward pass does not.
    """
    steps = max(num_frames, 1) + 1
    per_frame = GPU_SECONDS_PER_FRAME.get(variant, max(GPU_SECONDS_PER_FRAME.values()))
    return int(min(GPU_MAX_S, max(GPU_MIN_S, math.ceil(GPU_OVERHEAD_S + steps * per_frame))))

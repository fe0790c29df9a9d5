"""A micro SAM 2 checkpoint (random weights, real code paths) and synthetic media for tests and benches.

The configuration is the one in shared/notes/library-facts.md: 1.3 M parameters, about 35 ms
per video frame on a 2-core CPU at input size 256.
"""

import os

import cv2
import numpy as np


def micro_config(image_size: int = 256):
    from transformers import Sam2HieraDetConfig, Sam2VideoConfig, Sam2VisionConfig

    s, h = image_size, 128
    backbone = Sam2HieraDetConfig(
        hidden_size=16, num_attention_heads=1, image_size=[s, s], blocks_per_stage=[1, 1, 2, 1],
        embed_dim_per_stage=[16, 32, 64, 128], num_attention_heads_per_stage=[1, 1, 1, 1],
        window_size_per_stage=[8, 4, 4, 4], global_attention_blocks=[3],
        window_positional_embedding_background_size=[2, 2])
    vision = Sam2VisionConfig(backbone_config=backbone, backbone_channel_list=[128, 64, 32, 16],
                              backbone_feature_sizes=[[s // 4] * 2, [s // 8] * 2, [s // 16] * 2],
                              fpn_hidden_size=h)
    return Sam2VideoConfig(
        vision_config=vision, image_size=s,
        prompt_encoder_config=dict(hidden_size=h, image_size=s, patch_size=16),
        mask_decoder_config=dict(hidden_size=h, mlp_dim=64, num_attention_heads=2, iou_head_hidden_dim=32),
        memory_attention_hidden_size=h, memory_attention_feed_forward_hidden_size=64,
        memory_attention_rope_feat_sizes=[s // 16, s // 16], memory_attention_num_layers=1,
        memory_encoder_hidden_size=h, memory_encoder_output_channels=64, mask_downsampler_embed_dim=h,
        memory_fuser_embed_dim=h, memory_fuser_intermediate_dim=64)


def build_checkpoint(path, config=None, seed: int = 0) -> str:
    """Write a random-weights Sam2VideoModel and its processor with save_pretrained; returns the path."""
    import torch
    from transformers import Sam2ImageProcessor, Sam2VideoModel, Sam2VideoProcessor, Sam2VideoVideoProcessor

    config = config or micro_config()
    s = config.image_size
    torch.manual_seed(seed)
    Sam2VideoModel(config).eval().save_pretrained(str(path))
    processor = Sam2VideoProcessor(
        Sam2ImageProcessor(size={"height": s, "width": s}, mask_size={"height": s // 4, "width": s // 4}),
        Sam2VideoVideoProcessor(size={"height": s, "width": s}), target_size=s)
    processor.save_pretrained(str(path))
    return str(path)


def iter_rect_frames(width: int, height: int, count: int, rect=(40, 30, 100, 90), step: int = 2,
                     background=(30, 40, 50), colour=(220, 200, 40)):
    """RGB frames with a filled rectangle (x0, y0, x1, y1, exclusive ends) moving right by `step` px/frame."""
    x0, y0, x1, y1 = rect
    for i in range(count):
        frame = np.empty((height, width, 3), np.uint8)
        frame[:] = background
        frame[y0:y1, x0 + i * step:x1 + i * step] = colour
        yield frame


def rect_frames(*args, **kwargs) -> list[np.ndarray]:
    return list(iter_rect_frames(*args, **kwargs))


def rect_mask(width: int, height: int, rect) -> np.ndarray:
    x0, y0, x1, y1 = rect
    mask = np.zeros((height, width), bool)
    mask[y0:y1, x0:x1] = True
    return mask


def write_video(path, frames, fps: float = 10.0) -> str:
    """Write RGB frames (any iterable) to a video OpenCV can read back (mp4v in .mp4, MJPG in .avi)."""
    path = str(path)
    fourcc = cv2.VideoWriter_fourcc(*("MJPG" if path.endswith(".avi") else "mp4v"))
    frames = iter(frames)
    first = next(frames)
    height, width = first.shape[:2]
    writer = cv2.VideoWriter(path, fourcc, fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write {path}")
    try:
        writer.write(cv2.cvtColor(first, cv2.COLOR_RGB2BGR))
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    if not os.path.getsize(path):
        raise RuntimeError(f"OpenCV wrote an empty {path}")
    return path

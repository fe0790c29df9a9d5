"""Video decoding and frame sampling with OpenCV (no ffmpeg binary needed).

`probe` reads the container header, `plan_sampling` decides which source frames are kept,
and `extract_frames` decodes once, writing the kept frames as JPEG files named by their
position in the *sampled* sequence (00000.jpg, 00001.jpg, ...). Every index the API exposes
(`ref_frame_idx`, a detection's `frame`) counts in that sampled sequence.
"""

import math
import os
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from errors import InputError

JPEG_QUALITY = 95


@dataclass(frozen=True)
class VideoInfo:
    width: int
    height: int
    fps: float
    frame_count: int  # from the container header; may be approximate


def probe(path: str) -> VideoInfo:
    """Read size, fps and frame count; InputError("video_path") when it is not a readable video."""
    if not path or not os.path.isfile(path):
        raise InputError("video_path", f"no video file at {path!r}; upload a video (mp4, webm, avi, mov)")
    if os.path.getsize(path) == 0:
        raise InputError("video_path", "the video file is empty")
    capture = cv2.VideoCapture(path)
    try:
        if not capture.isOpened():
            raise InputError("video_path", "the file is not a video OpenCV can read; upload an mp4, "
                             "webm, avi or mov file")
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        ok, _ = capture.read()
    finally:
        capture.release()
    if not ok or width < 1 or height < 1:
        raise InputError("video_path", "no frame could be decoded from the file; it is empty, "
                         "truncated or not a video")
    if not math.isfinite(fps) or fps <= 0:
        fps = 30.0  # headerless streams: assume a common rate so sample_fps stays meaningful
    return VideoInfo(width=width, height=height, fps=fps, frame_count=max(count, 1))


@dataclass(frozen=True)
class Sampling:
    """Which source frames to keep: all, every Nth, or down to a target rate."""

    source_fps: float
    sample_fps: float | None = None  # effective rate after clamping to source_fps
    every_x: int | None = None

    def keeps(self, index: int) -> bool:
        if self.sample_fps is not None:
            if index == 0:
                return True
            ratio = self.sample_fps / self.source_fps
            return math.floor(index * ratio + 1e-9) != math.floor((index - 1) * ratio + 1e-9)
        if self.every_x is not None:
            return index % self.every_x == 0
        return True

    def expected_count(self, frame_count: int) -> int:
        if self.sample_fps is not None:
            return math.floor((frame_count - 1) * self.sample_fps / self.source_fps + 1e-9) + 1
        if self.every_x is not None:
            return math.ceil(frame_count / self.every_x)
        return frame_count


def plan_sampling(info: VideoInfo, sample_fps: float | None, every_x: int | None) -> Sampling:
    """`sample_fps` (clamped to the source fps) takes precedence over `every_x`. None or 0 means
    "not set" for both (a browser's empty number field sends 0)."""
    if sample_fps:
        if sample_fps < 0:
            raise InputError("sample_fps", f"{sample_fps:g} must be > 0 (frames per second), or empty or 0 "
                             "to keep every frame")
        return Sampling(source_fps=info.fps, sample_fps=min(float(sample_fps), info.fps))
    if every_x:
        if every_x < 0:
            raise InputError("every_x", f"{every_x} must be >= 1 (1 keeps every frame), or empty or 0")
        return Sampling(source_fps=info.fps, every_x=int(every_x))
    return Sampling(source_fps=info.fps)


def too_many_frames(count: int, limit: int) -> InputError:
    return InputError("video_path", f"the video has {count} frames after sampling, more than the limit "
                      f"of {limit} per request (SAM2_MAX_FRAMES); set `sample_fps` or `every_x` to "
                      "keep fewer frames, or send a shorter clip")


def iter_sampled_frames(path: str, sampling: Sampling):
    """Decode `path` once, yielding (position in the sampled sequence, BGR frame) of kept frames."""
    capture = cv2.VideoCapture(path)
    try:
        index = kept = 0
        while capture.grab():
            if sampling.keeps(index):
                ok, frame_bgr = capture.retrieve()
                if not ok:
                    break
                yield kept, frame_bgr
                kept += 1
            index += 1
    finally:
        capture.release()


def extract_frames(path: str, out_dir: str, sampling: Sampling, max_frames: int) -> list[str]:
    """Decode `path` once and write the kept frames as JPEGs into `out_dir`; returns their paths.

    Raises InputError when no frame decodes or when more than `max_frames` would be kept.
    """
    paths: list[str] = []
    frames = iter_sampled_frames(path, sampling)
    try:
        for position, frame_bgr in frames:
            if position >= max_frames:
                raise too_many_frames(position + 1, max_frames)
            out = os.path.join(out_dir, f"{position:05d}.jpg")
            if not cv2.imwrite(out, frame_bgr, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY]):
                raise OSError(f"could not write frame {out}")
            paths.append(out)
    finally:
        frames.close()
    if not paths:
        raise InputError("video_path", "no frame could be decoded from the video")
    return paths


def count_sampled_frames(path: str, sampling: Sampling) -> int:
    """Exact number of kept frames (decodes the headers of every frame: `grab` without `retrieve`)."""
    capture = cv2.VideoCapture(path)
    try:
        index = kept = 0
        while capture.grab():
            kept += sampling.keeps(index)
            index += 1
    finally:
        capture.release()
    return kept


def sampled_frame(path: str, sampling: Sampling, position: int) -> np.ndarray:
    """The frame at `position` of the sampled sequence, RGB; InputError("ref_frame_idx") past the end."""
    frames = iter_sampled_frames(path, sampling)
    try:
        for kept, frame_bgr in frames:
            if kept == position:
                return cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2RGB)
    finally:
        frames.close()
    raise InputError("ref_frame_idx", f"{position} is past the last frame of the sampled video")


WEBM_FOURCC = "VP80"  # VP8 in WebM: written by OpenCV's bundled FFmpeg, played by every browser


def write_webm(path: str, frames_rgb, fps: float) -> int:
    """Write RGB frames (all of one size) to a WebM (VP8) file at `fps`; returns the frame count.

    H.264 is not available in OpenCV's pip wheels (no encoder); VP8 and VP9 are, and browsers play
    both. Raises OSError when the writer cannot be opened or nothing was written."""
    writer = None
    count = 0
    try:
        for frame in frames_rgb:
            if writer is None:
                height, width = frame.shape[:2]
                writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*WEBM_FOURCC), max(float(fps), 1.0),
                                         (width, height))
                if not writer.isOpened():
                    raise OSError(f"OpenCV cannot write {WEBM_FOURCC} WebM video to {path}")
            writer.write(cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2BGR))
            count += 1
    finally:
        if writer is not None:
            writer.release()
    if count == 0:
        raise OSError("no frame to write")
    return count


def sampled_fps(sampling: Sampling) -> float:
    """Frame rate of the sampled sequence (for playing it back at the original speed)."""
    if sampling.sample_fps is not None:
        return sampling.sample_fps
    if sampling.every_x is not None:
        return sampling.source_fps / sampling.every_x
    return sampling.source_fps


def read_frame(path: str) -> np.ndarray:
    """One extracted frame as an RGB uint8 array (height, width, 3)."""
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def frame_size(path: str) -> tuple[int, int]:
    """(width, height) of an extracted frame, read from its header."""
    with Image.open(path) as image:
        return image.size


def read_frames(paths: list[str]) -> list[np.ndarray]:
    return [read_frame(p) for p in paths]

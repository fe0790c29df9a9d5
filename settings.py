"""Limits and locations read from the environment (at call time, so tests can change them).

| variable                | default                   | meaning                                             |
|-------------------------|---------------------------|-----------------------------------------------------|
| `SAM2_MODEL`            | unset (Hub ids)           | model source (local directory or Hub id) for every variant |
| `SAM2_MAX_IMAGE_PIXELS` | 16_777_216 (4096 x 4096)  | largest image / video frame accepted, in pixels     |
| `SAM2_MAX_FRAMES`       | 600                       | most frames one video request may track, after sampling |
| `SAM2_TMPDIR`           | the system temp directory | where per-request working directories are created  |
| `SAM2_FRAME_TIMEOUT_S`  | 90                        | longest wait for the frame producer before a video request fails |
| `SAM2_EMBEDDING_CACHE_MB` | 512                     | byte budget of the image-embedding cache (0 disables it) |
"""

import os
import tempfile

DEFAULT_MAX_IMAGE_PIXELS = 4096 * 4096
DEFAULT_MAX_FRAMES = 600


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None
    if value < 1:
        raise ValueError(f"environment variable {name}={raw!r} must be >= 1")
    return value


def max_image_pixels() -> int:
    return _positive_int("SAM2_MAX_IMAGE_PIXELS", DEFAULT_MAX_IMAGE_PIXELS)


def max_frames() -> int:
    return _positive_int("SAM2_MAX_FRAMES", DEFAULT_MAX_FRAMES)


def tmp_root() -> str:
    root = os.environ.get("SAM2_TMPDIR") or tempfile.gettempdir()
    os.makedirs(root, exist_ok=True)
    return root


def model_override() -> str | None:
    return os.environ.get("SAM2_MODEL") or None


def frame_timeout_s() -> float:
    raw = os.environ.get("SAM2_FRAME_TIMEOUT_S", "").strip()
    if not raw:
        return 90.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable SAM2_FRAME_TIMEOUT_S={raw!r} is not a number") from None
    if not value > 0:
        raise ValueError(f"environment variable SAM2_FRAME_TIMEOUT_S={raw!r} must be > 0")
    return value


def embedding_cache_bytes() -> int:
    raw = os.environ.get("SAM2_EMBEDDING_CACHE_MB", "").strip()
    if not raw:
        return 512 * 2**20
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable SAM2_EMBEDDING_CACHE_MB={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"environment variable SAM2_EMBEDDING_CACHE_MB={raw!r} must be >= 0")
    return int(value * 2**20)

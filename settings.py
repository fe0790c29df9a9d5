"""Limits and locations read from the environment (at call time, so tests can change them).

| variable                | default                   | meaning                                             |
|-------------------------|---------------------------|-----------------------------------------------------|
| `SAM2_MODEL`            | unset (Hub ids)           | model source (local directory or Hub id) for every variant |
| `SAM2_MAX_IMAGE_PIXELS` | 16_777_216 (4096 x 4096)  | largest image / video frame accepted, in pixels     |
| `SAM2_MAX_FRAMES`       | 600                       | most frames one video request may track, after sampling |
| `SAM2_TMPDIR`           | the system temp directory | where per-request working directories are created  |
| `SAM2_FRAME_TIMEOUT_S`  | 90                        | longest wait for the frame producer before a video request fails |
| `SAM2_EMBEDDING_CACHE_MB` | 512                     | byte budget of the image-embedding cache (0 disables it) |
| `SAM2_POOL_WIDTH`       | 2                         | model calls (requests) running at once per process  |
| `SAM2_QUEUE_DEPTH`      | 16                        | requests waiting in line beyond those; more get the busy answer |
| `SAM2_RETRY_AFTER_S`    | 5                         | the retry hint of the busy answer, in seconds       |
| `SAM2_WARM_START`       | 1 (0 on ZeroGPU)          | 1: load the default variant and run one inference per pool slot before serving |

The same defaults hold on ZeroGPU, except warm start (no GPU outside `@spaces.GPU` calls there);
`SAM2_QUEUE_DEPTH` replaces gradio's ZeroGPU default queue size of 1.
"""

import os
import tempfile

DEFAULT_MAX_IMAGE_PIXELS = 4096 * 4096
DEFAULT_MAX_FRAMES = 600


def _env_number(name: str, default: float, minimum: float, strict: bool = False) -> float:
    """A number from the environment, `default` when unset; must be >= minimum (> when strict)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number") from None
    if value < minimum or (strict and value == minimum):
        raise ValueError(f"environment variable {name}={raw!r} must be {'>' if strict else '>='} {minimum:g}")
    return value


def _whole_number(name: str, default: int, minimum: int = 1) -> int:
    value = _env_number(name, default, minimum)
    if value != int(value):
        raise ValueError(f"environment variable {name}={value:g} is not a whole number")
    return int(value)


def max_image_pixels() -> int:
    return _whole_number("SAM2_MAX_IMAGE_PIXELS", DEFAULT_MAX_IMAGE_PIXELS)


def max_frames() -> int:
    return _whole_number("SAM2_MAX_FRAMES", DEFAULT_MAX_FRAMES)


def tmp_root() -> str:
    root = os.environ.get("SAM2_TMPDIR") or tempfile.gettempdir()
    os.makedirs(root, exist_ok=True)
    return root


def model_override() -> str | None:
    return os.environ.get("SAM2_MODEL") or None


def frame_timeout_s() -> float:
    return _env_number("SAM2_FRAME_TIMEOUT_S", 90.0, 0, strict=True)


def embedding_cache_bytes() -> int:
    return int(_env_number("SAM2_EMBEDDING_CACHE_MB", 512, 0) * 2**20)


def pool_width() -> int:
    return _whole_number("SAM2_POOL_WIDTH", 2)


def queue_depth() -> int:
    return _whole_number("SAM2_QUEUE_DEPTH", 16, minimum=0)


def retry_after_s() -> int:
    return _whole_number("SAM2_RETRY_AFTER_S", 5)


def on_zero_gpu() -> bool:
    return os.environ.get("SPACES_ZERO_GPU") == "true"


def warm_start() -> bool:
    raw = os.environ.get("SAM2_WARM_START", "").strip().lower()
    if not raw:
        return not on_zero_gpu()
    if raw not in ("0", "1", "true", "false"):
        raise ValueError(f"environment variable SAM2_WARM_START={raw!r} must be 0 or 1")
    return raw in ("1", "true")

"""The producer side of `async_frame_load`: stream preprocessed frames into a video session.

A `FrameLoader` thread reads the request's extracted JPEG frames in chunks, preprocesses each
chunk on the CPU with the processor's video processor (resize to the model's input size,
normalise) and appends every frame to a streaming `Sam2VideoInferenceSession` with
`add_new_frame`. It never runs the model: `torch.inference_mode` / `autocast` are thread-local
and the consumer (the calling thread) owns every forward. (With `video_load_device="cuda"` the
session stores frames on the GPU, so `add_new_frame` also copies each preprocessed frame there.)

Frames are loaded in `order` (by default 0..N-1; the bounded tracker passes the order in which
propagation needs them). With `lookahead` set, the producer never gets more than that many
frames ahead of what the consumer has declared `consumed` (back-pressure), so a fast decoder
cannot fill memory.

The hand-off is a condition variable over "frames loaded so far" and "the producer's error":
`wait_for(frame_idx)` blocks until that frame is in the session, raises `FrameLoadTimeout`
(a `TimeoutError`) when the producer makes no progress for `timeout_s`, and re-raises a producer
failure as `FrameLoadError` (a `RuntimeError`) chained from the original exception. `close()`
stops the producer and joins it; use the loader as a context manager so that happens in
`finally` on success, error and timeout alike.
"""

import threading
import time

import settings
import video_io
from errors import FrameLoadError

CHUNK_SIZE = 8


class FrameLoadTimeout(FrameLoadError, TimeoutError):
    """The producer loaded no frame for longer than the loader's timeout."""


class FrameLoader:
    def __init__(self, session, frame_paths: list[str], video_processor, chunk_size: int = CHUNK_SIZE,
                 timeout_s: float | None = None, order: list[int] | None = None,
                 lookahead: int | None = None):
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.session = session
        self.frame_paths = list(frame_paths)
        self.video_processor = video_processor
        self.chunk_size = chunk_size
        self.timeout_s = settings.frame_timeout_s() if timeout_s is None else timeout_s  # SAM2_FRAME_TIMEOUT_S
        self.order = list(range(len(self.frame_paths))) if order is None else list(order)
        if sorted(self.order) != list(range(len(self.frame_paths))):
            raise ValueError("order must list every frame index exactly once")
        self._position = {frame_idx: position for position, frame_idx in enumerate(self.order)}
        self.lookahead = lookahead
        self._loaded = 0  # frames loaded, counted along `order`
        self._consumed = 0  # frames the consumer is done with, counted along `order`
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="sam2-frame-loader", daemon=True)

    @property
    def total(self) -> int:
        return len(self.frame_paths)

    @property
    def loaded(self) -> int:
        with self._cond:
            return self._loaded

    # producer ---------------------------------------------------------------------------

    def _wait_for_room(self, start: int) -> bool:
        """Back-pressure: wait until loading the chunk at `start` stays within the lookahead."""
        if self.lookahead is None:
            return not self._stop.is_set()
        with self._cond:
            while start - self._consumed >= self.lookahead and not self._stop.is_set():
                self._cond.wait(timeout=1.0)
        return not self._stop.is_set()

    def _run(self) -> None:
        try:
            for start in range(0, self.total, self.chunk_size):
                if not self._wait_for_room(start):
                    return
                indices = self.order[start:start + self.chunk_size]
                frames = []
                for frame_idx in indices:
                    if self._stop.is_set():
                        return
                    frames.append(video_io.read_frame(self.frame_paths[frame_idx]))
                pixel_values = self.video_processor(videos=frames, device="cpu",
                                                    return_tensors="pt").pixel_values_videos[0]
                del frames
                for frame_idx, frame in zip(indices, pixel_values):
                    self.session.add_new_frame(frame, frame_idx)
                with self._cond:
                    self._loaded = start + len(indices)
                    self._cond.notify_all()
        except BaseException as exc:  # handed to the consumer, which re-raises it with its cause
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    # consumer ---------------------------------------------------------------------------

    def start(self) -> "FrameLoader":
        self._thread.start()
        return self

    def wait_for(self, frame_idx: int, min_loaded: int = 0) -> None:
        """Block until frame `frame_idx` and at least `min_loaded` frames are in the session."""
        target = min(max(self._position[frame_idx] + 1, min_loaded), self.total)
        with self._cond:
            last_progress, last_loaded = time.monotonic(), self._loaded
            while self._loaded < target:
                if self._error is not None:
                    raise FrameLoadError(f"loading video frames failed after {self._loaded} of {self.total} frames: "
                                         f"{type(self._error).__name__}: {self._error}") from self._error
                if not self._thread.is_alive():
                    raise FrameLoadError(f"the frame loader stopped after {self._loaded} of {self.total} frames")
                if self._loaded != last_loaded:
                    last_progress, last_loaded = time.monotonic(), self._loaded
                remaining = self.timeout_s - (time.monotonic() - last_progress)
                if remaining <= 0:
                    raise FrameLoadTimeout(
                        f"no video frame was loaded for {self.timeout_s:g} s (stuck after {self._loaded} of "
                        f"{self.total} frames); the server is overloaded or the video is unreadable, retry "
                        "later or send a shorter or sampled-down video")
                self._cond.wait(timeout=min(remaining, 1.0))

    def consumed(self, frame_idx: int) -> None:
        """The consumer is done with `frame_idx` (and every frame before it in `order`)."""
        with self._cond:
            self._consumed = max(self._consumed, self._position[frame_idx] + 1)
            self._cond.notify_all()

    def close(self) -> None:
        """Stop the producer (it finishes at most the chunk in hand) and join it."""
        with self._cond:
            self._stop.set()
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> "FrameLoader":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

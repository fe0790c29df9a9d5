"""Per-request stage clocks: seconds spent in each stage of one request, nested stages excluded.

A request passes through stages (queue wait, preprocessing, encoder, decoder or propagation,
post-processing, encoding). Code deep in the pipeline opens a stage around its own work; when a
stage opens inside another, the outer one's clock pauses, so the stages add up to the wall time
without double counting (the video tracker's post-processing runs inside its propagation loop).

A timer belongs to one request and one thread. It holds plain floats, so a ZeroGPU worker can
return `timer.seconds` to the main process with its result.
"""

import time
from collections.abc import Callable
from contextlib import contextmanager

STAGES = ("queue_wait", "preprocess", "encoder", "decoder", "propagation", "postprocess", "nms", "encoding")


class StageTimer:
    def __init__(self, synchronize: Callable[[], None] | None = None):
        """`synchronize` (e.g. torch.cuda.synchronize) runs before each clock reading, so a stage
        owns the GPU work it queued rather than the next stage."""
        self.seconds: dict[str, float] = {}
        self._synchronize = synchronize or (lambda: None)
        self._open: list[list] = []  # [stage, started] of the open stages, innermost last

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def merge(self, seconds: dict[str, float]) -> None:
        for stage, value in seconds.items():
            self.add(stage, value)

    @contextmanager
    def stage(self, name: str):
        self._synchronize()
        now = time.perf_counter()
        if self._open:  # pause the enclosing stage
            outer = self._open[-1]
            self.add(outer[0], now - outer[1])
        self._open.append([name, now])
        try:
            yield
        finally:
            self._synchronize()
            now = time.perf_counter()
            stage, started = self._open.pop()
            self.add(stage, now - started)
            if self._open:  # resume the enclosing stage
                self._open[-1][1] = now


def format_line(seconds: dict[str, float]) -> str:
    """'preprocess=0.012s encoder=0.301s ...' in pipeline order (unknown stages last)."""
    order = [s for s in STAGES if s in seconds] + sorted(s for s in seconds if s not in STAGES)
    return " ".join(f"{stage}={seconds[stage]:.3f}s" for stage in order)

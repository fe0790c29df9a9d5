"""Admission: a fixed pool of model calls, a bounded line, and a clean busy answer beyond it.

gradio does the pool and the line: every model event shares one `concurrency_id` ("sam2")
whose `concurrency_limit` is `SAM2_POOL_WIDTH` (so at most that many requests run, over one
shared copy of the weights), and `demo.queue(max_size=SAM2_QUEUE_DEPTH)` refuses an event when
that many already wait (gradio's bound counts every queued event, the UI's light ones too).

What gradio does not do is written here (`install`): the refusal's message says
"busy: N requests waiting, retry in 5 s" (raw HTTP callers read it in the 503's detail;
gradio_client raises its own `QueueError("Queue is full! Please try again.")` on any 503, and
the browser shows gradio's busy notice; MCP callers get our message, see `mcp_patches`), each
refusal is counted, and each admitted request is stamped with the time it joined the line, so
its queue wait can be measured (`queue_wait_s`).
"""

import time

import gradio as gr

import metrics
import settings

CONCURRENCY_ID = "sam2"


def busy_message(waiting: int) -> str:
    return f"busy: {waiting} requests waiting, retry in {settings.retry_after_s()} s"


def event_settings() -> dict:
    """Keyword arguments for every event that runs the model."""
    return {"concurrency_id": CONCURRENCY_ID, "concurrency_limit": settings.pool_width()}


def install(demo: gr.Blocks) -> gr.Blocks:
    """Enable the queue with the configured depth and wrap its door (call once, before launch)."""
    demo.queue(max_size=settings.queue_depth())
    queue = demo._queue
    push = queue.push

    async def admit(body, request, username):
        success, detail, state = await push(body=body, request=request, username=username)
        if state == "queue_full":
            metrics.BUSY_REJECTIONS.inc()
            detail = busy_message(len(queue))
        elif success:
            request.state.sam2_enqueued_at = time.monotonic()
        return success, detail, state

    queue.push = admit
    return demo


def waiting(demo: gr.Blocks) -> int:
    return len(demo._queue)


def queue_wait_s(request: gr.Request | None) -> float | None:
    """Seconds the request waited in line (None when it did not come through the queue)."""
    http = getattr(request, "request", None) if request is not None else None
    enqueued = getattr(getattr(http, "state", None), "sam2_enqueued_at", None)
    return None if enqueued is None else time.monotonic() - enqueued

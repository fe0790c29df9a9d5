"""Serving under load, end to end on the launched app: admission (pool, bounded line, the busy
answer to gradio_client and MCP), a 26-request burst, warm start, /metrics and the log line."""

import asyncio
import gc
import json
import logging
import os
import re
import threading
import time

import httpx
import numpy as np
import pytest
from conftest import data_uri, mcp_session
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from gradio_client.utils import QueueError
from micro import rect_mask
from PIL import Image

import app
import serving
import settings
from mask_codec import encode_png_b64

BOX = '[{"x0": 100, "y0": 60, "x1": 220, "y1": 180}]'


def scrape(server) -> dict[str, float]:
    """{'name{labels}': value} of the sam2_ series at /metrics."""
    text = httpx.get(server + "metrics", timeout=30).text
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith("sam2_")}


def moved(before: dict, after: dict, name: str) -> float:
    return after.get(name, 0.0) - before.get(name, 0.0)


def images(tmp_path, count: int) -> list[str]:
    paths = []
    for i in range(count):
        pixels = np.zeros((240, 320, 3), np.uint8)
        pixels[60:180, 100:220] = (200, 180, 10 * i)
        paths.append(str(tmp_path / f"burst{i}.png"))
        Image.fromarray(pixels).save(paths[-1])
    return paths


def test_metrics_count_a_request_and_the_log_line_gives_its_stages(server, client, image_file, caplog):
    before = scrape(server)
    with caplog.at_level(logging.INFO, logger="sam2space"):
        client.predict(handle_file(image_file), "tiny", BOX, "", "", "rle", api_name="/process_image")
        client.predict(handle_file(image_file), "tiny", None, '[{"x": 160, "y": 120}]', "[1]", "rle",
                       api_name="/process_image")  # same image: the cache answers
    after = scrape(server)
    labels = 'endpoint="process_image",{}variant="tiny"'
    assert moved(before, after, "sam2_requests_total{" + labels.format('outcome="ok",') + "}") == 2
    for stage in ("queue_wait", "preprocess", "decoder", "postprocess", "encoding"):
        assert moved(before, after, "sam2_stage_seconds_count{" + labels.format(f'stage="{stage}",') + "}") == 2
    assert moved(before, after, "sam2_response_bytes_count{" + labels.format("") + "}") == 2
    assert moved(before, after, "sam2_embedding_cache_hits_total") >= 1
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("process_image variant=tiny ok")]
    assert len(lines) == 2
    assert re.search(r"queue_wait=\d+\.\d{3}s preprocess=\S+ .*decoder=\S+ postprocess=\S+ encoding=\S+ bytes=\d+",
                     lines[0])


def test_bad_input_is_counted_as_rejected(server, client, image_file):
    before = scrape(server)
    with pytest.raises(AppError, match=r"Invalid `bboxes\[0\]`"):
        client.predict(handle_file(image_file), "tiny", "[{}]", "", "", api_name="/process_image")
    after = scrape(server)
    assert moved(before, after, 'sam2_requests_total{endpoint="process_image",outcome="rejected",variant="tiny"}') == 1


@pytest.fixture
def held_model(monkeypatch):
    """Model calls block until `gate.set()`: the pool fills and the line grows at will."""
    gate, running = threading.Event(), []
    original = app._segment_image_gpu

    def held(*args):
        running.append(1)
        assert gate.wait(120)
        return original(*args)

    monkeypatch.setattr(app, "_segment_image_gpu", held)
    yield gate, running
    gate.set()


def wait_until(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_full_line_gets_the_busy_answer_over_gradio_client_and_mcp(server, client, image_file, held_model):
    gate, running = held_model
    width, depth = settings.pool_width(), settings.queue_depth()
    before = scrape(server)
    jobs = [client.submit(handle_file(image_file), "tiny", BOX, "", "", "rle", api_name="/process_image")
            for _ in range(width + depth)]
    wait_until(lambda: len(running) == width and serving.waiting(app.demo) == depth)
    time.sleep(0.2)
    assert len(running) == width  # the pool holds: no third model call while two run

    with pytest.raises(QueueError):  # gradio_client's own text for any refusal
        client.predict(handle_file(image_file), "tiny", BOX, "", "", "rle", api_name="/process_image")
    async def work(session):
        return await session.call_tool("generate_masks", {"im": data_uri(image_file), "points_per_side": 2})

    answer = asyncio.run(mcp_session(server, work))
    assert answer.isError
    assert answer.content[0].text == f"busy: {depth} requests waiting, retry in 5 s"
    raw = httpx.post(server + "gradio_api/queue/join", timeout=30,
                     json={"data": [], "fn_index": 0, "session_hash": "raw-caller"})
    assert raw.status_code == 503 and raw.json()["detail"] == f"busy: {depth} requests waiting, retry in 5 s"

    gate.set()
    results = [job.result(timeout=120) for job in jobs]
    assert all(len(r) == 1 and r[0]["size"] == [240, 320] for r in results)
    assert moved(before, scrape(server), "sam2_busy_rejections_total") == 3


def test_burst_of_26_mixed_requests(server, client, image_file, video_factory, request_tmp, tmp_path):
    """26 callers at once, each with its own gradio_client: every request succeeds with the answer
    it gets alone, or gets the busy answer; nothing else. Afterwards no temp files, no threads
    left behind, and the app still answers."""
    pictures = images(tmp_path, 8)
    video = video_factory(160, 120, 6, rect=(20, 15, 50, 45))
    seed = json.dumps([encode_png_b64(rect_mask(160, 120, (20, 15, 50, 45)))])
    kinds = {
        "image": lambda c, i: c.predict(handle_file(pictures[i % 8]), "tiny", BOX, "", "", "rle",
                                        api_name="/process_image"),
        "everything": lambda c, i: c.predict(handle_file(pictures[i % 8]), "tiny", 2, 0, 0, 0, 0, 3, "rle",
                                             api_name="/generate_masks"),
        "video": lambda c, i: c.predict(handle_file(video), "tiny", seed, True, 0, True, None, None, "cpu",
                                        api_name="/process_video"),
    }
    plan = [("image", "everything", "video")[i % 3] for i in range(26)]
    expected = {(kind, i % 8 if kind != "video" else 0): kinds[kind](client, i) for i, kind in enumerate(plan)}
    threads_before = threading.active_count()
    callers = [Client(server, verbose=False) for _ in plan]
    start, outcomes = threading.Barrier(len(plan)), [None] * len(plan)

    def call(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = ("ok", kinds[plan[i]](callers[i], i))
        except QueueError as exc:
            outcomes[i] = ("busy", str(exc))
        except Exception as exc:  # any other failure fails the test below
            outcomes[i] = ("failed", repr(exc))

    workers = [threading.Thread(target=call, args=(i,)) for i in range(len(plan))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert not [o for o in outcomes if o is None or o[0] == "failed"], outcomes
    # the pool and the line always take the first width + depth (here 8 of 26 got the busy answer)
    assert sum(o[0] == "ok" for o in outcomes) >= settings.pool_width() + settings.queue_depth()
    for i, (status, value) in enumerate(outcomes):
        if status == "ok":
            assert value == expected[(plan[i], i % 8 if plan[i] != "video" else 0)], (i, plan[i])
    assert not os.listdir(request_tmp)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("sam2-")]
    callers.clear()  # the callers' own threads end with their clients
    gc.collect()
    # The server's worker threads are a pool (anyio's): they are reused, and an idle one ends at
    # the next request after 10 s. Then the count is back where it was before the burst.
    time.sleep(11)
    assert client.predict(handle_file(image_file), "tiny", BOX, "", "", "rle", api_name="/process_image")
    wait_until(lambda: threading.active_count() <= threads_before, timeout=30)


def test_warm_up_runs_one_inference_per_slot(caplog):
    cache = app.samv2_handler.embedding_cache
    misses = cache.misses
    with caplog.at_level(logging.INFO, logger="sam2space"):
        timings = app.warm_up("tiny", slots=2)
    assert timings["slots"] == 2 and timings["load_s"] >= 0 and timings["warm_up_s"] > 0
    assert cache.misses - misses == 2  # each slot ran the encoder on its own image
    assert any(re.match(r"warm start: tiny loaded in \d+\.\d\ds, 2 pool slots warmed in \d+\.\d\ds", r.getMessage())
               for r in caplog.records)

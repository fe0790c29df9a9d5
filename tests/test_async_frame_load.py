"""async_frame_load: the streaming producer/consumer path equals the eager path bit for bit,
the parity gate is shown to matter, and faults surface as clear errors with nothing left behind."""

import os
import threading

import gradio as gr
import pytest
import torch

import app
import samv2_handler
import video_io
from frame_loader import FrameLoader, FrameLoadTimeout
from errors import FrameLoadError
from mask_codec import encode_png_b64
from micro import rect_mask

W, H = 320, 240


def seed_masks(count):
    boxes = [(40, 30, 100, 90), (0, 140, 100, 240), (170, 150, 300, 230)]
    return [rect_mask(W, H, box) for box in boxes[:count]]


def frames_of(video_factory, tmp_path, count, every_x=None):
    video = video_factory(W, H, count)
    info = video_io.probe(video)
    return video_io.extract_frames(video, str(tmp_path), video_io.plan_sampling(info, None, every_x), 1000)


def run(models, track, frame_paths, masks, ref, **kwargs):
    return list(track(models, frame_paths, masks, ref, **kwargs))


def assert_identical(eager, streamed):
    assert [r.frame_idx for r in eager] == [r.frame_idx for r in streamed]
    for a, b in zip(eager, streamed):
        assert a.object_ids == b.object_ids
        assert torch.equal(a.mask_logits, b.mask_logits), f"mask logits differ on frame {a.frame_idx}"
        assert torch.equal(a.object_score_logits, b.object_score_logits)


@pytest.mark.parametrize("count, ref, objects, every_x", [
    (9, 0, 1, None), (9, 4, 3, None),        # N < 16: the gate waits for the whole video
    (40, 0, 3, None), (40, 23, 1, None),     # N > 16, reference at 0 and in the middle (bidirectional)
    (40, 6, 3, 3),                           # every_x sampling: 14 sampled frames
])
def test_streaming_equals_eager_bit_for_bit(count, ref, objects, every_x, models, video_factory, tmp_path):
    frame_paths = frames_of(video_factory, tmp_path, count, every_x)
    masks = seed_masks(objects)
    eager = run(models, samv2_handler.track_video_eager, frame_paths, masks, ref)
    streamed = run(models, samv2_handler.track_video_streaming, frame_paths, masks, ref)
    assert len(streamed) == len(frame_paths)
    assert_identical(eager, streamed)


@pytest.mark.parametrize("ref", [0, 20])
def test_endpoint_async_and_eager_give_identical_detections(ref, video_factory):
    video = video_factory(W, H, 40)
    masks = [encode_png_b64(m) for m in seed_masks(3)]
    eager = app.process_video(video, "tiny", masks, ref_frame_idx=ref, async_frame_load=False)
    streamed = app.process_video(video, "tiny", masks, ref_frame_idx=ref, async_frame_load=True)
    assert len(eager) > 0 and streamed == eager


def throttled_reads(monkeypatch, hold_at: int, release: threading.Event):
    """The producer reads frames normally until `hold_at`, then waits for `release`."""
    real = video_io.read_frame

    def read_frame(path):
        if int(os.path.basename(path)[:5]) == hold_at:
            release.wait(timeout=30)
        return real(path)

    monkeypatch.setattr(video_io, "read_frame", read_frame)


@pytest.mark.parametrize("count", [9, 40])
def test_parity_gate_matters(count, models, video_factory, tmp_path, monkeypatch):
    """Without the gate the first steps run while only one chunk (8 frames) is loaded, so the
    model normalises object-pointer offsets by min(8, 16) - 1 instead of min(N, 16) - 1: the masks
    differ from the eager path. (With ref 0 the first step only reuses the seeded output, so the
    first differing frame is frame 1, the first frame that reads object pointers.)"""
    frame_paths = frames_of(video_factory, tmp_path, count)
    masks = seed_masks(1)
    eager = run(models, samv2_handler.track_video_eager, frame_paths, masks, 0)

    release = threading.Event()
    throttled_reads(monkeypatch, hold_at=8, release=release)
    ungated = []
    for result in samv2_handler.track_video_streaming(models, frame_paths, masks, 0, parity_gate=False,
                                                      bounded=False):
        ungated.append(result)
        if len(ungated) == 4:  # frames 0-3 were computed with only frames 0-7 in the session
            release.set()
    release.set()
    assert [r.frame_idx for r in ungated] == [r.frame_idx for r in eager]
    assert torch.equal(ungated[0].mask_logits, eager[0].mask_logits)  # the seeded frame itself
    assert not torch.equal(ungated[1].mask_logits, eager[1].mask_logits)

    # the same throttle with the gate on: the consumer waits, and the results are identical
    release.clear()
    throttled_reads(monkeypatch, hold_at=8, release=release)
    timer = threading.Timer(0.5, release.set)
    timer.start()
    gated = run(models, samv2_handler.track_video_streaming, frame_paths, masks, 0, bounded=False)
    timer.join()
    assert_identical(eager, gated)


def test_parity_gate_is_harmless_on_the_bounded_session(models, video_factory, tmp_path, monkeypatch):
    """The bounded path's session declares the video's length up front (`DeclaredLengthSession`),
    so the object-pointer window is min(N, 16) from the first step whatever is loaded: removing
    the gate there changes nothing, even when the consumer runs right behind the producer."""
    frame_paths = frames_of(video_factory, tmp_path, 40)
    masks = seed_masks(2)
    eager = run(models, samv2_handler.track_video_eager, frame_paths, masks, 0)
    release = threading.Event()
    throttled_reads(monkeypatch, hold_at=8, release=release)
    ungated = []
    for result in samv2_handler.track_video_streaming(models, frame_paths, masks, 0, parity_gate=False):
        ungated.append(result)
        if len(ungated) == 4:
            release.set()
    release.set()
    assert_identical(eager, ungated)


def test_only_the_calling_thread_runs_the_model(models, video_factory, tmp_path):
    frame_paths = frames_of(video_factory, tmp_path, 20)
    seen = set()
    hooks = [module.register_forward_pre_hook(lambda *_: seen.add(threading.get_ident()))
             for module in models.video_model.modules()]
    try:
        run(models, samv2_handler.track_video_streaming, frame_paths, seed_masks(2), 5, chunk_size=3)
    finally:
        for hook in hooks:
            hook.remove()
    assert seen == {threading.get_ident()}


def test_loader_streams_every_frame_in_chunks(models, video_factory, tmp_path):
    frame_paths = frames_of(video_factory, tmp_path, 11)
    session = models.video_processor.init_video_session(inference_device="cpu", dtype=torch.float32)
    with FrameLoader(session, frame_paths, models.video_processor.video_processor, chunk_size=4) as loader:
        loader.wait_for(len(frame_paths) - 1)
        assert loader.loaded == 11 and session.num_frames == 11
    eager = models.video_processor.video_processor(videos=video_io.read_frames(frame_paths), device="cpu",
                                                   return_tensors="pt").pixel_values_videos[0]
    for i in range(11):  # chunked preprocessing equals whole-video preprocessing
        assert torch.equal(session.processed_frames[i], eager[i])


def test_loader_back_pressure_and_order(models, video_factory, tmp_path):
    frame_paths = frames_of(video_factory, tmp_path, 11)
    session = models.video_processor.init_video_session(inference_device="cpu", dtype=torch.float32)
    order = samv2_handler.need_order(11, 4)
    assert order == [4, 5, 6, 7, 8, 9, 10, 3, 2, 1, 0]
    with FrameLoader(session, frame_paths, models.video_processor.video_processor, chunk_size=2,
                     order=order, lookahead=4) as loader:
        loader.wait_for(5)
        threading.Event().wait(0.3)  # give a runaway producer time to run ahead
        assert loader.loaded == 4 and sorted(session.processed_frames) == [4, 5, 6, 7]
        loader.consumed(5)  # two frames done: room for one more chunk, no more
        loader.wait_for(9)
        threading.Event().wait(0.3)
        assert loader.loaded == 6
        loader.consumed(0)
        loader.wait_for(0)
        assert loader.loaded == 11


# ---------------------------------------------------------------------------------------------
# Faults: a clear error for the caller, the frames directory gone, no thread left behind


@pytest.fixture
def mask_b64():
    return [encode_png_b64(seed_masks(1)[0])]


def test_producer_failure_mid_video(video_factory, mask_b64, monkeypatch, request_tmp):
    video = video_factory(W, H, 40)
    real = video_io.read_frame

    def read_frame(path):
        if path.endswith("00021.jpg"):
            raise OSError("disk went away")
        return real(path)

    monkeypatch.setattr(video_io, "read_frame", read_frame)
    threads_before = len(threading.enumerate())
    with pytest.raises(gr.Error, match="loading video frames failed after 16 of 40 frames: OSError: disk went away"):
        app.process_video(video, "tiny", mask_b64)
    assert not os.listdir(request_tmp)
    assert len(threading.enumerate()) == threads_before


def test_producer_error_is_chained(models, video_factory, tmp_path, monkeypatch):
    frame_paths = frames_of(video_factory, tmp_path, 12)

    def read_frame(path):
        raise ValueError("corrupt JPEG")

    monkeypatch.setattr(video_io, "read_frame", read_frame)
    with pytest.raises(FrameLoadError) as error:
        run(models, samv2_handler.track_video_streaming, frame_paths, seed_masks(1), 0)
    assert isinstance(error.value, RuntimeError) and isinstance(error.value.__cause__, ValueError)


def test_stalled_producer_times_out(video_factory, mask_b64, monkeypatch, request_tmp):
    video = video_factory(W, H, 40)
    monkeypatch.setenv("SAM2_FRAME_TIMEOUT_S", "0.3")
    release = threading.Event()
    throttled_reads(monkeypatch, hold_at=24, release=release)
    threading.Timer(2.0, release.set).start()  # the stalled read returns later; the loader must be joined
    threads_before = len(threading.enumerate())
    with pytest.raises(gr.Error, match="no video frame was loaded for 0.3 s"):
        app.process_video(video, "tiny", mask_b64)
    release.set()
    assert not os.listdir(request_tmp)
    assert len(threading.enumerate()) <= threads_before  # the timer may have finished too
    assert not [t for t in threading.enumerate() if t.name == "sam2-frame-loader"]


def test_timeout_is_a_timeout_error():
    assert issubclass(FrameLoadTimeout, TimeoutError) and issubclass(FrameLoadTimeout, FrameLoadError)

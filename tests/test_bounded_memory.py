"""Long videos in bounded memory: the default (bounded) streaming path keeps its frame store and
output store under fixed bounds whatever the length, and its results equal the eager path's."""

import pytest
import torch

import app
import frame_loader
import samv2_handler
import video_io
from mask_codec import encode_png_b64
from micro import rect_mask

W, H = 320, 240


def seed_masks():
    return [rect_mask(W, H, box) for box in ((40, 30, 100, 90), (0, 140, 100, 240), (170, 150, 300, 230))]


def frames_of(video_factory, tmp_path, count):
    video = video_factory(W, H, count)
    info = video_io.probe(video)
    return video_io.extract_frames(video, str(tmp_path), video_io.plan_sampling(info, None, None), 1000)


@pytest.mark.parametrize("ref", [0, 30])
def test_bounded_equals_eager_with_masks(ref, video_factory):
    video = video_factory(W, H, 60)
    masks = [encode_png_b64(m) for m in seed_masks()]
    eager = app.process_video(video, "tiny", masks, ref_frame_idx=ref, async_frame_load=False)
    bounded = app.process_video(video, "tiny", masks, ref_frame_idx=ref, async_frame_load=True)
    assert len(eager) > 60  # several objects tracked over 60 frames
    assert all("mask_b64" in d for d in bounded)
    assert bounded == eager


@pytest.mark.parametrize("ref", [0, 30])
def test_bounded_raw_logits_equal_eager(ref, models, video_factory, tmp_path):
    frame_paths = frames_of(video_factory, tmp_path, 60)
    eager = list(samv2_handler.track_video_eager(models, frame_paths, seed_masks(), ref))
    bounded = list(samv2_handler.track_video_streaming(models, frame_paths, seed_masks(), ref))
    assert [r.frame_idx for r in bounded] == [r.frame_idx for r in eager]
    for a, b in zip(eager, bounded):
        assert torch.equal(a.mask_logits, b.mask_logits) and torch.equal(a.object_score_logits, b.object_score_logits)


def peak_stores(models, frame_paths, ref):
    peaks = {"frames": 0, "outputs": 0}

    def probe(session, frame_idx):
        peaks["frames"] = max(peaks["frames"], len(session.processed_frames))
        peaks["outputs"] = max(peaks["outputs"], max(len(o["non_cond_frame_outputs"])
                                                     for o in session.output_dict_per_obj.values()))

    for _ in samv2_handler.track_video_streaming(models, frame_paths, seed_masks(), ref, on_step=probe):
        pass
    return peaks


@pytest.mark.parametrize("ref_fraction", [0.0, 0.5])
def test_stores_stay_bounded_whatever_the_length(ref_fraction, models, video_factory, tmp_path):
    config = models.video_model.config
    chunk, gate = frame_loader.CHUNK_SIZE, config.max_object_pointers_in_encoder
    window = samv2_handler.readable_window(config)
    assert window == 15  # num_maskmem 7, max_object_pointers_in_encoder 16
    peaks = {}
    for count in (60, 150):
        (tmp_path / str(count)).mkdir()
        paths = frames_of(video_factory, tmp_path / str(count), count)
        peaks[count] = peak_stores(models, paths, int(count * ref_fraction))
    # never more than chunk + gate + window frames, nor more outputs than the readable window
    # (plus, with a reverse pass, the window of forward outputs it will read), for any length
    for peak in peaks.values():
        assert peak["frames"] <= chunk + gate + window, peaks
        assert peak["outputs"] <= (2 * window if ref_fraction else window) + 1, peaks
    assert peaks[60]["frames"] == peaks[150]["frames"]


def test_eager_stores_grow_with_the_length(models, video_factory, tmp_path):
    """The contrast: transformers' own session keeps every frame and every output."""
    paths = frames_of(video_factory, tmp_path, 60)
    session_sizes = []

    def spy(module, args, kwargs):
        session = kwargs.get("inference_session") or args[0]
        session_sizes.append(len(session.output_dict_per_obj[0]["non_cond_frame_outputs"]))

    hook = models.video_model.register_forward_pre_hook(spy, with_kwargs=True)
    try:
        list(samv2_handler.track_video_eager(models, paths, seed_masks(), 0))
    finally:
        hook.remove()
    assert max(session_sizes) == 58  # every propagated frame but the last one's is still held


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_bounded_on_cuda_storage(video_factory, tmp_path):
    models = samv2_handler.get_models("tiny").to("cuda")
    try:
        paths = frames_of(video_factory, tmp_path, 30)
        results = list(samv2_handler.track_video_streaming(models, paths, seed_masks(), 10, video_load_device="cuda"))
        assert [r.frame_idx for r in results] == list(range(10, 30)) + list(range(9, -1, -1))
    finally:
        models.to("cpu")

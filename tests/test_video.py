"""process_video: equivalence with transformers' own propagation, geometry, and request hygiene."""

import os

import gradio as gr
import numpy as np
import pytest
import torch

import app
import video_io
from mask_codec import decode_png_b64, encode_png_b64, mask_box
from micro import rect_mask

RECT = (40, 30, 100, 90)  # x0, y0, x1, y1 (exclusive) on frame 0; moves right 2 px per source frame


@pytest.fixture(scope="module")
def reference(micro_checkpoint):
    from transformers import Sam2VideoModel, Sam2VideoProcessor

    return (Sam2VideoModel.from_pretrained(micro_checkpoint).eval(),
            Sam2VideoProcessor.from_pretrained(micro_checkpoint))


def reference_detections(reference, frame_paths, masks, ref_frame_idx, drop_masks):
    """Detections from transformers' own init_video_session(video=frames) + propagate_in_video_iterator."""
    model, processor = reference
    frames = video_io.read_frames(frame_paths)
    height, width = frames[0].shape[:2]
    session = processor.init_video_session(video=frames, inference_device="cpu", dtype=torch.float32)
    per_frame = {}
    with torch.inference_mode():
        processor.add_inputs_to_inference_session(session, frame_idx=ref_frame_idx,
                                                  obj_ids=list(range(len(masks))), input_masks=masks)
        model(inference_session=session, frame_idx=ref_frame_idx)
        for reverse in (False, True):
            for out in model.propagate_in_video_iterator(session, start_frame_idx=ref_frame_idx, reverse=reverse):
                logits = processor.post_process_masks([out.pred_masks], [[height, width]], binarize=False)[0]
                per_frame.setdefault(out.frame_idx, (out.object_ids, logits[:, 0], out.object_score_logits))
    detections = []
    for frame_idx in sorted(per_frame):
        ids, logits, scores = per_frame[frame_idx]
        for obj_id, logit, score in zip(ids, logits, scores.reshape(-1)):
            mask = (logit > 0).numpy()
            if not mask.any():
                continue
            ys, xs = np.nonzero(mask)
            x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
            det = {"frame": frame_idx, "track_id": obj_id, "x": round(x0 / width, 6), "y": round(y0 / height, 6),
                   "w": round((x1 - x0) / width, 6), "h": round((y1 - y0) / height, 6),
                   "conf": round(float(torch.sigmoid(score)), 4)}
            if not drop_masks:
                det["mask_b64"] = mask
            detections.append(det)
    return detections


def seed_masks(width, height, count):
    rect = rect_mask(width, height, RECT)
    masks = [rect]
    if count > 1:
        masks.append(rect_mask(width, height, (0, height // 2, width // 3, height)))
    if count > 2:
        masks.append(rect_mask(width, height, (width // 2, height * 3 // 5, width - 5, height - 5)))
    return masks


def extracted(video, tmp_path, sample_fps=None, every_x=None):
    info = video_io.probe(video)
    return video_io.extract_frames(video, str(tmp_path), video_io.plan_sampling(info, sample_fps, every_x), 1000)


def same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        b = dict(b)
        if "mask_b64" in b:
            np.testing.assert_array_equal(decode_png_b64(a.pop("mask_b64")), b.pop("mask_b64"))
        assert a == b


@pytest.mark.parametrize("objects, ref_frame_idx, every_x", [(1, 0, None), (3, 5, None), (3, 2, 3)])
def test_process_video_equals_transformers(objects, ref_frame_idx, every_x, reference, video_factory, tmp_path,
                                           request_tmp):
    video = video_factory(320, 240, 13)
    frame_paths = extracted(video, tmp_path, every_x=every_x)
    masks = seed_masks(320, 240, objects)
    expected = reference_detections(reference, frame_paths, masks, ref_frame_idx, drop_masks=False)
    result = app.process_video(video, "tiny", [encode_png_b64(m) for m in masks], drop_masks=False,
                               ref_frame_idx=ref_frame_idx, every_x=every_x)
    assert {d["frame"] for d in result} <= set(range(len(frame_paths)))
    keys = [(d["frame"], d["track_id"]) for d in result]
    assert keys == sorted(set(keys))  # sorted by (frame, track_id), each pair once
    same(result, expected)
    assert not os.listdir(request_tmp)


def test_drop_masks_and_conf_on_reference_frame(video_factory):
    video = video_factory(320, 240, 13)
    masks = [encode_png_b64(m) for m in seed_masks(320, 240, 2)]
    result = app.process_video(video, "tiny", masks, drop_masks=True, ref_frame_idx=4)
    assert result and all("mask_b64" not in d for d in result)
    assert all(set(d) == {"frame", "track_id", "x", "y", "w", "h", "conf"} for d in result)
    assert all(0.0 <= d["conf"] <= 1.0 for d in result)
    # a mask given as input is the model's output on its frame, with object score logit +10
    seeded = [d for d in result if d["frame"] == 4]
    assert [d["track_id"] for d in seeded] == [0, 1] and all(d["conf"] == 1.0 for d in seeded)


@pytest.mark.parametrize("width, height", [(320, 240), (240, 320)])
def test_reference_frame_geometry(width, height, video_factory):
    """The "shifted mask" check: the seeded rectangle comes back where it was drawn."""
    video = video_factory(width, height, 6)
    ref = 3
    rect = (RECT[0] + 2 * ref, RECT[1], RECT[2] + 2 * ref, RECT[3])  # where the rectangle is on frame 3
    mask = rect_mask(width, height, rect)
    result = app.process_video(video, "tiny", [encode_png_b64(mask)], drop_masks=False, ref_frame_idx=ref)
    (detection,) = [d for d in result if d["frame"] == ref]
    box = (detection["x"] * width, detection["y"] * height, detection["w"] * width, detection["h"] * height)
    expected = (rect[0], rect[1], rect[2] - rect[0], rect[3] - rect[1])
    assert np.allclose(box, expected, atol=1.0), (box, expected)
    decoded = decode_png_b64(detection["mask_b64"])
    assert decoded.shape == (height, width)
    iou = (decoded & mask).sum() / (decoded | mask).sum()
    assert iou >= 0.9, iou
    assert mask_box(decoded) is not None


def test_sample_fps_counts_in_the_sampled_sequence(video_factory, tmp_path):
    video = video_factory(320, 240, 13, fps=10.0)
    result = app.process_video(video, "tiny", [encode_png_b64(seed_masks(320, 240, 1)[0])], drop_masks=True,
                               sample_fps=5, every_x=4)  # sample_fps wins: 13 frames at 10 fps -> 7 at 5 fps
    assert len(extracted(video, tmp_path, sample_fps=5)) == 7
    assert sorted({d["frame"] for d in result}) == list(range(7))


def test_failing_request_leaves_no_files(video_factory, request_tmp, monkeypatch):
    video = video_factory(320, 240, 13)
    mask = encode_png_b64(seed_masks(320, 240, 1)[0])

    def explode(*args, **kwargs):
        assert len(os.listdir(request_tmp)) == 1  # the request's own frames directory exists meanwhile
        raise RuntimeError("boom in propagation")

    monkeypatch.setattr(app.samv2_handler, "track_video", explode)
    with pytest.raises(gr.Error, match="Internal error in process_video.*boom in propagation"):
        app.process_video(video, "tiny", [mask])
    assert not os.listdir(request_tmp)


def test_progress_reports_every_frame(models, video_factory, tmp_path):
    import samv2_handler

    frame_paths = extracted(video_factory(320, 240, 13), tmp_path)
    calls = []
    samv2_handler.track_video(models, frame_paths, seed_masks(320, 240, 1), 5, drop_masks=True,
                              progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 13) for i in range(1, 14)]

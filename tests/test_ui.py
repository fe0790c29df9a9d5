"""The browser UI's pure parts (drawing, the click state machine, WebM writing) and its handlers,
called directly (the real browser is in test_browser.py)."""

import json
import os

import cv2
import gradio as gr
import numpy as np
import pytest
from PIL import Image

import annotation
import app
import overlays
import video_io
from mask_codec import decode_mask, encode_png_b64, encode_rle
from micro import rect_mask

W, H = 320, 240


def grey(width=W, height=H, value=100) -> np.ndarray:
    return np.full((height, width, 3), value, np.uint8)


# -- overlays -------------------------------------------------------------------------------------


def test_palette_colours_are_distinct_and_cycle():
    assert len(set(overlays.PALETTE)) == len(overlays.PALETTE)
    assert overlays.colour(0) == overlays.colour(len(overlays.PALETTE)) != overlays.colour(1)


def test_blend_tints_exactly_the_mask_in_the_object_colour():
    mask = rect_mask(W, H, (40, 30, 100, 90))
    out = overlays.blend_masks(grey(), [(2, mask)], outline=False)
    expected = np.round(100 * (1 - overlays.MASK_ALPHA) + np.array(overlays.colour(2)) * overlays.MASK_ALPHA)
    assert (out[mask] == expected.astype(np.uint8)).all()
    assert (out[~mask] == 100).all()  # nothing outside the mask changes
    outlined = overlays.blend_masks(grey(), [(2, mask)])
    assert tuple(outlined[30, 60]) == overlays.colour(2) and tuple(outlined[60, 60]) == tuple(out[60, 60])


def test_blend_rejects_a_mask_of_another_size():
    with pytest.raises(ValueError, match="mask of object 0 is 10x10, the image 320x240"):
        overlays.blend_masks(grey(), [(0, np.ones((10, 10), bool))])
    with pytest.raises(ValueError, match="RGB uint8"):
        overlays.blend_masks(np.zeros((H, W), np.uint8), [])


def test_boxes_points_corner_and_labels_land_where_asked():
    out = overlays.draw_boxes(grey(), [(1, (50, 40, 150, 140))], labels=False)
    assert tuple(out[40, 100]) == overlays.colour(1) and tuple(out[90, 100]) == (100, 100, 100)
    out = overlays.draw_points(grey(), [(60, 50), (200, 150)], [1, 0])
    assert tuple(out[50, 60]) == overlays.INCLUDE_COLOUR and tuple(out[150, 200]) == overlays.EXCLUDE_COLOUR
    out = overlays.draw_corner(grey(), 80, 70, (1, 2, 3))
    assert tuple(out[70, 80]) == (1, 2, 3)
    tagged = overlays.label(grey(), "#3", 300, -50, overlays.colour(3))  # kept inside the image
    assert (tagged != 100).any() and (tagged[H // 2:] == 100).all()


def test_draw_annotation_shows_masks_boxes_and_clicks():
    mask = rect_mask(W, H, (40, 30, 100, 90))
    state = annotation.new()
    state["objects"][0].update(points=[[70, 60]], labels=[1], mask=encode_rle(mask))
    state["objects"].append({"points": [], "labels": [], "box": [150, 100, 250, 200], "mask": None})
    state["corner"] = [10, 220]
    out = overlays.draw_annotation(grey(), state)
    assert tuple(out[60, 70]) == overlays.INCLUDE_COLOUR
    assert tuple(out[80, 45]) != (100, 100, 100)  # tinted by object 0
    assert tuple(out[150, 150]) == overlays.colour(1)  # object 1's prompt box
    assert (overlays.draw_annotation(grey(), annotation.new()) == 100).all()


def test_draw_detections_uses_normalised_boxes_and_masks():
    mask = rect_mask(W, H, (40, 30, 100, 90))
    detection = {"frame": 0, "track_id": 4, "x": 40 / W, "y": 30 / H, "w": 60 / W, "h": 60 / H, "conf": 0.9,
                 "mask_b64": encode_png_b64(mask)}
    out = overlays.draw_detections(grey(), [detection])
    assert tuple(out[60, 40]) == overlays.colour(4)  # the box's left edge
    assert tuple(out[60, 70]) != (100, 100, 100)  # the mask's tint
    boxes_only = overlays.draw_detections(grey(), [{k: v for k, v in detection.items() if k != "mask_b64"}])
    assert tuple(boxes_only[60, 70]) == (100, 100, 100)


# -- the click state machine --------------------------------------------------------------------


def test_clicks_points_and_a_two_corner_box():
    state, target = annotation.click(None, 10, 20, "include", W, H)
    state, target = annotation.click(state, 30, 40, "exclude", W, H)
    assert target == 0 and state["objects"][0]["points"] == [[10, 20], [30, 40]]
    assert state["objects"][0]["labels"] == [1, 0]
    state, target = annotation.click(state, 200, 150, "box", W, H)
    assert target is None and state["corner"] == [200, 150]  # waiting for the second corner
    state, target = annotation.click(state, 100, 50, "box", W, H)
    assert target == 0 and state["corner"] is None
    assert state["objects"][0]["box"] == [100, 50, 201, 151]  # both corner pixels inside
    boxes, points, labels = annotation.prompt_arguments(state["objects"][0])
    assert boxes == [{"x0": 100, "y0": 50, "x1": 201, "y1": 151}] and labels == [1, 0]
    assert points == [{"x": 10, "y": 20}, {"x": 30, "y": 40}]
    edge, _ = annotation.click(None, 5000, -3, "include", W, H)  # clamped into the picture
    assert edge["objects"][0]["points"] == [[W - 1, 0]]
    with pytest.raises(ValueError, match="unknown click mode"):
        annotation.click(None, 1, 1, "lasso", W, H)


def test_objects_undo_and_clear():
    state, _ = annotation.click(None, 10, 20, "include", W, H)
    state = annotation.set_mask(state, 0, {"size": [H, W], "counts": "x"})
    assert annotation.new_object(annotation.new()) == annotation.new()  # nothing to close yet
    state = annotation.new_object(state)
    assert state["current"] == 1 and len(state["objects"]) == 2
    state, target = annotation.click(state, 50, 60, "include", W, H)
    assert target == 1 and annotation.masks(state) == [(0, {"size": [H, W], "counts": "x"})]
    state = annotation.undo(state)
    assert state["current"] == 1 and state["objects"][1]["points"] == []
    state = annotation.undo(state)  # back to one object, its mask kept (no model call needed)
    assert len(state["objects"]) == 1 and state["objects"][0]["mask"] is not None
    cleared = annotation.clear_object(state)
    assert cleared["objects"][0] == {"points": [], "labels": [], "box": None, "mask": None}
    assert annotation.undo(cleared)["objects"][0]["mask"] is not None
    assert annotation.undo(annotation.new()) == annotation.new()
    emptied = annotation.clear_all(state)
    assert annotation.masks(emptied) == [] and len(emptied["objects"]) == 1
    assert annotation.undo(emptied)["objects"] == state["objects"]
    json.dumps(state)  # JSON-able: gradio keeps it per session


# -- video writing --------------------------------------------------------------------------------


def test_write_webm_round_trip(tmp_path):
    frames = [grey(value=v) for v in (20, 120, 220)]
    frames[1][10:50, 10:50] = (255, 0, 0)
    path = str(tmp_path / "out.webm")
    assert video_io.write_webm(path, iter(frames), 5) == 3
    info = video_io.probe(path)
    assert (info.width, info.height, info.fps) == (W, H, 5.0)
    decoded = [cv2.cvtColor(f, cv2.COLOR_BGR2RGB) for _, f in
               video_io.iter_sampled_frames(path, video_io.plan_sampling(info, None, None))]
    assert len(decoded) == 3
    assert abs(int(decoded[0].mean()) - 20) <= 4 and abs(int(decoded[2].mean()) - 220) <= 4
    assert decoded[1][30, 30, 0] > 200 and decoded[1][30, 30, 2] < 60  # red stays red (RGB order kept)
    with pytest.raises(OSError, match="no frame"):
        video_io.write_webm(str(tmp_path / "empty.webm"), iter([]), 5)


def test_sampled_frames_count_and_fps(video_factory):
    video = video_factory(W, H, 12)
    info = video_io.probe(video)
    every = video_io.plan_sampling(info, None, 4)
    assert video_io.count_sampled_frames(video, every) == 3 and video_io.sampled_fps(every) == info.fps / 4
    assert video_io.sampled_frame(video, every, 2).shape == (H, W, 3)
    with pytest.raises(Exception, match="ref_frame_idx"):
        video_io.sampled_frame(video, every, 3)


# -- handlers -------------------------------------------------------------------------------------


def select(x, y) -> gr.SelectData:
    return gr.SelectData(None, {"index": [x, y], "value": None})


def test_image_clicks_segment_each_object_and_write_both_downloads():
    image = Image.fromarray(grey())
    state, canvas, table, as_png, as_rle = app.ui_image_click(image, "tiny", annotation.new(), "Include point",
                                                             select(70, 60), None)
    assert canvas.shape == (H, W, 3) and "#0" in table and as_png and as_rle
    assert tuple(canvas[60, 70]) == overlays.INCLUDE_COLOUR
    state, *_ = app.picture_step(app.image_view, annotation.new_object)(image, state)
    state, canvas, table, as_png, as_rle = app.ui_image_click(image, "tiny", state, "Box (two corners)",
                                                             select(150, 100), None)
    assert "**#1** |" not in table  # first corner only: nothing to segment yet
    state, canvas, table, as_png, as_rle = app.ui_image_click(image, "tiny", state, "Box (two corners)",
                                                             select(250, 200), None)
    assert "**#0** |" in table and "**#1** |" in table
    with open(as_png) as handle:
        pngs = json.load(handle)
    with open(as_rle) as handle:
        rles = json.load(handle)
    assert len(pngs) == len(rles) == 2
    assert (decode_mask(pngs[1]) == decode_mask(rles[1])).all() and decode_mask(pngs[1]).shape == (H, W)
    # the same prompt through process_image gives the same mask
    api = app.process_image(image, "tiny", '[{"x0": 150, "y0": 100, "x1": 251, "y1": 201}]', None, None, "rle")
    assert api[0] == rles[1]
    assert as_png.startswith(app.demo.GRADIO_CACHE)  # in gradio's cache: deleted by delete_cache
    state, *_ = app.picture_step(app.image_view, annotation.undo)(image, state)
    assert state["corner"] == [150, 100] and len(annotation.masks(state)) == 1


def test_image_click_without_an_image_names_the_input():
    with pytest.raises(gr.Error, match="Invalid `im`: upload it first"):
        app.ui_image_click(None, "tiny", annotation.new(), "Include point", select(1, 1), None)


def test_everything_pick_chooses_the_smallest_mask_under_the_click():
    import mask_generation
    from test_generate_masks import params, synthetic_candidates

    image = Image.fromarray(grey())
    result = mask_generation.assemble_result(synthetic_candidates(), H, W, params())
    canvas, picked = app.ui_everything_pick(image, result, select(20, 20))
    assert picked["picked"] == 1 and picked["area"] == 5000 and "segmentation" not in picked  # not the full frame
    canvas, picked = app.ui_everything_pick(image, result, select(300, 10))
    assert picked["picked"] == 0 and picked["area"] == W * H
    empty = mask_generation.assemble_result([], H, W, params())
    assert app.ui_everything_pick(image, empty, select(1, 1))[1] is None
    shown, _ = app.ui_everything_overlay(image, result)
    assert shown.shape == (H, W, 3)


def test_track_picked_objects_and_render_a_playable_video(video_factory, request_tmp):
    video = video_factory(W, H, 8)
    frame = video_io.sampled_frame(video, video_io.plan_sampling(video_io.probe(video), None, None), 0)
    state = annotation.new()
    for obj_id, rect in ((0, (40, 30, 100, 90)), (2, (150, 100, 200, 160))):
        while len(state["objects"]) <= obj_id:
            state["objects"].append({"points": [], "labels": [], "box": None, "mask": None})
        state["objects"][obj_id]["mask"] = encode_rle(rect_mask(W, H, rect))
    detections = app.ui_track(video, "tiny", state, 0, True, 0, 0, "cpu", progress=None)
    assert {d["track_id"] for d in detections} <= {0, 2}  # the picture's ids, not list positions
    assert {d["frame"] for d in detections} == set(range(8))
    path, download, listed = app.ui_render_video(video, 0, 0, detections, progress=lambda *a, **k: None)
    assert path.endswith(".webm") and os.path.getsize(path) > 0
    assert video_io.count_sampled_frames(path, video_io.plan_sampling(video_io.probe(path), None, None)) == 8
    with open(download) as handle:
        assert json.load(handle) == detections
    assert all("mask_b64" not in d for d in listed) and len(listed) == len(detections)
    assert not os.listdir(request_tmp)
    assert frame.shape == (H, W, 3)
    with pytest.raises(gr.Error, match="Pick at least one object"):
        app.ui_track(video, "tiny", annotation.new(), 0, True, 0, 0, "cpu", progress=None)

"""OpenCV decoding, sampling arithmetic and frame extraction."""

import os

import numpy as np
import pytest

import video_io
from errors import InputError


def kept(sampling, n):
    return [i for i in range(n) if sampling.keeps(i)]


def test_sampling_plans():
    info = video_io.VideoInfo(width=4, height=4, fps=30.0, frame_count=90)
    assert kept(video_io.plan_sampling(info, None, None), 5) == [0, 1, 2, 3, 4]
    every = video_io.plan_sampling(info, None, 5)
    assert kept(every, 12) == [0, 5, 10] and every.expected_count(12) == 3
    ten = video_io.plan_sampling(info, 10, 5)  # sample_fps wins over every_x
    assert kept(ten, 9) == [0, 3, 6]
    assert ten.expected_count(90) == len(kept(ten, 90)) == 30
    clamped = video_io.plan_sampling(info, 120, None)  # clamped to the source fps
    assert clamped.sample_fps == 30.0 and kept(clamped, 7) == list(range(7))
    odd = video_io.plan_sampling(video_io.VideoInfo(4, 4, 25.0, 100), 7.5, None)
    assert odd.expected_count(100) == len(kept(odd, 100))


def test_zero_means_not_set():  # what a browser's empty number field sends
    info = video_io.VideoInfo(width=4, height=4, fps=30.0, frame_count=90)
    assert video_io.plan_sampling(info, 0, 0) == video_io.plan_sampling(info, None, None) == \
        video_io.Sampling(source_fps=30.0)
    assert video_io.plan_sampling(info, 0, 5).every_x == 5


@pytest.mark.parametrize("sample_fps, every_x, argument", [(-2, None, "sample_fps"), (None, -3, "every_x")])
def test_bad_sampling(sample_fps, every_x, argument):
    info = video_io.VideoInfo(width=4, height=4, fps=30.0, frame_count=90)
    with pytest.raises(InputError) as error:
        video_io.plan_sampling(info, sample_fps, every_x)
    assert error.value.argument == argument


def test_probe_and_extract(video_factory, tmp_path):
    path = video_factory(320, 240, 12, fps=10.0)
    info = video_io.probe(path)
    assert (info.width, info.height, info.fps, info.frame_count) == (320, 240, 10.0, 12)
    paths = video_io.extract_frames(path, str(tmp_path), video_io.plan_sampling(info, None, 4), 100)
    assert [os.path.basename(p) for p in paths] == ["00000.jpg", "00001.jpg", "00002.jpg"]
    frames = video_io.read_frames(paths)
    assert frames[0].shape == (240, 320, 3) and frames[0].dtype == np.uint8
    assert video_io.frame_size(paths[0]) == (320, 240)
    # the rectangle of source frame 8 (x from 40 + 8*2) is in sampled frame 2
    row = frames[2][60]
    assert row[40 + 16 + 5].mean() > 100 and row[40 + 16 - 5].mean() < 100


def test_frame_limit_stops_decoding(video_factory, tmp_path):
    path = video_factory(320, 240, 12, fps=10.0)
    info = video_io.probe(path)
    with pytest.raises(InputError, match="SAM2_MAX_FRAMES"):
        video_io.extract_frames(path, str(tmp_path), video_io.plan_sampling(info, None, None), 5)


def test_probe_rejects_non_videos(tmp_path):
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video" * 100)
    for path, fragment in ((empty, "empty"), (text, "not"), (tmp_path / "missing.mp4", "no video file")):
        with pytest.raises(InputError) as error:
            video_io.probe(str(path))
        assert error.value.argument == "video_path" and fragment in str(error.value)

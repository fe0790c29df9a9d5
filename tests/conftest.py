"""Shared fixtures: the micro checkpoint behind SAM2_MODEL, a private temp root, synthetic videos."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# No network here: never let a test reach for the Hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from micro import build_checkpoint, rect_frames, write_video  # noqa: E402


@pytest.fixture(scope="session")
def micro_checkpoint(tmp_path_factory) -> str:
    return build_checkpoint(tmp_path_factory.mktemp("micro-sam2"))


@pytest.fixture(scope="session", autouse=True)
def sam2_env(micro_checkpoint, tmp_path_factory):
    """Every variant loads the micro checkpoint; request temp dirs go to a root the tests inspect."""
    os.environ["SAM2_MODEL"] = micro_checkpoint
    os.environ["SAM2_TMPDIR"] = str(tmp_path_factory.mktemp("requests"))
    os.environ["GRADIO_TEMP_DIR"] = str(tmp_path_factory.mktemp("gradio"))
    yield


@pytest.fixture
def request_tmp() -> Path:
    """The request temp root; tests assert it is empty after each request."""
    return Path(os.environ["SAM2_TMPDIR"])


@pytest.fixture(scope="session")
def models(sam2_env):
    import samv2_handler

    return samv2_handler.get_models("tiny")


@pytest.fixture(scope="session")
def video_factory(tmp_path_factory):
    """make(width, height, count, rect=..., fps=..., suffix=...) -> path of a synthetic rectangle video."""
    root = tmp_path_factory.mktemp("videos")
    made = {}

    def make(width=320, height=240, count=12, rect=(40, 30, 100, 90), fps=10.0, suffix=".avi", step=2):
        key = (width, height, count, rect, fps, suffix, step)
        if key not in made:
            name = f"v{len(made)}_{width}x{height}_{count}{suffix}"
            made[key] = write_video(root / name, rect_frames(width, height, count, rect, step), fps)
        return made[key]

    return make

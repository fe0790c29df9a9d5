"""Shared fixtures: the micro checkpoint behind SAM2_MODEL, a private temp root, synthetic videos."""

import base64
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# No network here: never let a test reach for the Hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
# gradio fixes its cache directory when the Blocks are built, and test modules import the app at
# collection time: set it before anything imports gradio (removed at the end of the session).
GRADIO_CACHE = tempfile.mkdtemp(prefix="sam2-tests-gradio-")
os.environ["GRADIO_TEMP_DIR"] = GRADIO_CACHE

from micro import build_checkpoint, rect_frames, write_video  # noqa: E402


@pytest.fixture(scope="session")
def micro_checkpoint(tmp_path_factory) -> str:
    return build_checkpoint(tmp_path_factory.mktemp("micro-sam2"))


@pytest.fixture(scope="session", autouse=True)
def sam2_env(micro_checkpoint, tmp_path_factory):
    """Every variant loads the micro checkpoint; request temp dirs go to a root the tests inspect."""
    os.environ["SAM2_MODEL"] = micro_checkpoint
    os.environ["SAM2_TMPDIR"] = str(tmp_path_factory.mktemp("requests"))
    yield
    shutil.rmtree(GRADIO_CACHE, ignore_errors=True)


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


# The launched app (module scope: each e2e module gets its own server on a free port).


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    import app

    port = free_port()
    app.demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                    **app.launch_kwargs())
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.demo.close()


@pytest.fixture(scope="module")
def client(server):
    from gradio_client import Client

    return Client(server, verbose=False)


@pytest.fixture(scope="module")
def image_file(tmp_path_factory):
    import numpy as np
    from PIL import Image

    path = tmp_path_factory.mktemp("e2e") / "scene.png"
    pixels = np.zeros((240, 320, 3), np.uint8)
    pixels[60:180, 100:220] = (200, 180, 40)
    Image.fromarray(pixels).save(path)
    return str(path)


def data_uri(path: str) -> str:
    with open(path, "rb") as handle:
        return "data:image/png;base64," + base64.b64encode(handle.read()).decode()


async def mcp_session(server, work):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(server + "gradio_api/mcp/") as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

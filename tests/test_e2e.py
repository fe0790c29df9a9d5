"""End-to-end: the launched app through gradio_client and the MCP Python SDK (streamable HTTP)."""

import asyncio
import json
import os

import httpx
import pytest
from conftest import data_uri, mcp_session
from gradio_client import handle_file
from gradio_client.exceptions import AppError
from micro import rect_mask

from mask_codec import decode_mask, encode_png_b64


def test_docs_are_served(server):
    assert httpx.get(server + "docs", timeout=30).status_code == 200


def test_process_image_over_gradio_client(client, image_file):
    result = client.predict(handle_file(image_file), "tiny", '[{"x0": 100, "y0": 60, "x1": 220, "y1": 180}]',
                            "", "", "rle", api_name="/process_image")
    assert len(result) == 1 and decode_mask(result[0]).shape == (240, 320)
    # the public Space's positional calling convention (no output_format) still works and returns PNGs
    legacy = client.predict(handle_file(image_file), "tiny", None, '[{"x": 160, "y": 120}]', "[1]",
                            api_name="/process_image")
    assert isinstance(legacy[0], str) and decode_mask(legacy[0]).shape == (240, 320)
    # already-parsed lists are accepted too (gradio hands them over as their repr)
    as_lists = client.predict(handle_file(image_file), "tiny", None, [{"x": 160, "y": 120}], [1],
                              api_name="/process_image")
    assert as_lists == legacy


def test_bad_input_reaches_gradio_client_as_app_error(client, image_file):
    with pytest.raises(AppError, match="Invalid `point_labels`: `points` has 1 entry but `point_labels` has 2"):
        client.predict(handle_file(image_file), "tiny", None, '[{"x": 1, "y": 2}]', "[1, 0]",
                       api_name="/process_image")


def test_process_video_over_gradio_client(client, video_factory, request_tmp):
    video = video_factory(320, 240, 8, suffix=".mp4")
    mask = encode_png_b64(rect_mask(320, 240, (40, 30, 100, 90)))
    job = client.submit(handle_file(video), "tiny", json.dumps([f"b'{mask}'"]), True, 0, True, None,
                        None, "cpu", api_name="/process_video")
    result = job.result(timeout=300)
    assert sorted({d["frame"] for d in result}) == list(range(8))
    assert all("mask_b64" not in d for d in result)
    assert not os.listdir(request_tmp)
    with pytest.raises(AppError, match="`ref_frame_idx`"):
        client.predict(handle_file(video), "tiny", json.dumps([mask]), True, 8,
                       api_name="/process_video")
    assert not os.listdir(request_tmp)


def test_process_video_reports_progress(client, video_factory):
    import time

    video = video_factory(320, 240, 60)
    mask = encode_png_b64(rect_mask(320, 240, (40, 30, 100, 90)))
    job = client.submit(handle_file(video), "tiny", [mask], True, 0, True, None, None, "cpu",
                        api_name="/process_video")
    seen = set()
    while not job.done():
        status = job.status()
        for unit in status.progress_data or []:
            seen.add((unit.index, unit.length, unit.unit, unit.desc))
        time.sleep(0.02)
    assert len(job.result()) == 60
    assert seen and {(length, unit, desc) for _, length, unit, desc in seen} == {(60, "frames", "Tracking")}


# The MCP tool schema is the docstrings: pin the tools and their parameters.
EXPECTED_TOOLS = {
    "process_image": ["im", "variant", "bboxes", "points", "point_labels", "output_format"],
    "generate_masks": ["im", "variant", "points_per_side", "pred_iou_thresh", "stability_score_thresh",
                       "crop_n_layers", "min_area", "max_masks", "output_format"],
    "process_video": ["video_path", "variant", "masks", "drop_masks", "ref_frame_idx", "async_frame_load",
                      "sample_fps", "every_x", "video_load_device"],
}


def test_only_the_three_endpoints_are_in_the_api(client):
    """The UI's own events (clicks, undo, rendering) stay out of the API and its docs."""
    api = client.view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == {"/process_image", "/process_video", "/generate_masks"}
    assert not api["unnamed_endpoints"]


def test_mcp_schema_is_pinned(server):
    tools = httpx.get(server + "gradio_api/mcp/schema", timeout=30).json()
    by_name = {tool["name"]: tool for tool in tools}
    assert set(by_name) == set(EXPECTED_TOOLS)
    for name, params in EXPECTED_TOOLS.items():
        schema = by_name[name]["inputSchema"]
        assert list(schema["properties"]) == params
        for param in params:
            assert len(schema["properties"][param].get("description", "")) > 20, (name, param)
    image_doc = by_name["process_image"]["description"]
    assert "absolute pixel" in image_doc and "every box is one object" in image_doc
    everything_doc = by_name["generate_masks"]["description"]
    assert "LARGEST FIRST" in everything_doc and "truncated" in everything_doc
    video_doc = by_name["process_video"]["description"]
    assert "SAMPLED" in video_doc and "sigmoid" in video_doc and "NORMALISED" in video_doc


def test_mcp_lists_tools_and_segments_a_data_uri_image(server, image_file):
    async def work(session):
        tools = await session.list_tools()
        ok = await session.call_tool("process_image", {
            "im": data_uri(image_file), "variant": "tiny",
            "bboxes": '[{"x0": 100, "y0": 60, "x1": 220, "y1": 180}]', "output_format": "rle"})
        bad = await session.call_tool("process_image", {"im": data_uri(image_file), "variant": "tiny"})
        everything = await session.call_tool("generate_masks", {
            "im": data_uri(image_file), "variant": "tiny", "points_per_side": 4, "pred_iou_thresh": 0,
            "stability_score_thresh": 0})
        too_big = await session.call_tool("generate_masks", {"im": data_uri(image_file), "points_per_side": 500})
        return tools, ok, bad, everything, too_big

    tools, ok, bad, everything, too_big = asyncio.run(mcp_session(server, work))
    assert {tool.name for tool in tools.tools} == set(EXPECTED_TOOLS)
    assert not ok.isError
    text = ok.content[0].text
    masks = json.loads(text)
    assert len(masks) == 1 and masks[0]["size"] == [240, 320]
    assert bad.isError and "`bboxes`" in bad.content[0].text
    assert not everything.isError
    result = json.loads(everything.content[0].text)
    assert result["image_size"] == [240, 320] and isinstance(result["truncated"], bool) and result["masks"]
    assert too_big.isError and "`points_per_side`" in too_big.content[0].text


def test_generate_masks_over_gradio_client(client, image_file):
    result = client.predict(handle_file(image_file), "tiny", 4, 0, 0, 0, 0, 5, "png", api_name="/generate_masks")
    assert result["image_size"] == [240, 320] and result["masks"]
    assert decode_mask(result["masks"][0]["segmentation"]).shape == (240, 320)
    with pytest.raises(AppError, match="`crop_n_layers`"):
        client.predict(handle_file(image_file), "tiny", 4, 0, 0, 9, api_name="/generate_masks")

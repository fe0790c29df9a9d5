"""Two adaptations of gradio 6.31's MCP server: JSON results and the busy answer.

JSON: gradio 6.31 renders a tool's non-file output as `str(output)`, so a list of dicts reaches MCP
clients as a Python repr (single quotes), which is not the JSON our docstrings promise.
`install()` wraps `GradioMCPServer.postprocess_output_data` so that list and dict outputs are
serialised with `json.dumps` (compact separators); file outputs and everything else keep
gradio's own handling. The e2e test parses MCP results with `json.loads`, so a gradio upgrade
that changes this surface fails loudly there.

Busy: gradio runs a queued tool by calling its own app back through gradio_client, which turns
the queue's refusal (HTTP 503) into `QueueError("Queue is full! Please try again.")` whatever the
server said. `install_busy_answer(message)` replaces that error with `message()` (admission's
"busy: N requests waiting, retry in 5 s"), which reaches the agent as the tool's error result.
"""

import json
import logging
from collections.abc import Callable

logger = logging.getLogger("sam2space")


def install() -> bool:
    try:
        from gradio.mcp import GradioMCPServer
        from gradio_client import utils as client_utils
    except ImportError:  # gradio without the MCP extra: nothing to patch
        return False
    original = GradioMCPServer.postprocess_output_data
    if getattr(original, "_json_text", False):
        return True

    def postprocess_output_data(self, data, root_url):
        contents = []
        for output in data:
            if isinstance(output, (list, dict)) and not client_utils.is_file_obj_with_meta(output):
                text = json.dumps(output, separators=(",", ":"), ensure_ascii=False)
                contents.append(self.types.TextContent(type="text", text=text))
            else:
                contents.extend(original(self, [output], root_url))
        return contents

    postprocess_output_data._json_text = True
    GradioMCPServer.postprocess_output_data = postprocess_output_data
    return True


def install_busy_answer(message: Callable[[], str]) -> bool:
    try:
        from gradio.mcp import GradioMCPServer
        from gradio_client.utils import QueueError
    except ImportError:
        return False
    for name in ("_execute_tool_without_progress", "_execute_tool_with_progress"):
        original = getattr(GradioMCPServer, name)
        if getattr(original, "_busy_answer", False):
            continue

        async def execute(self, *args, _original=original, **kwargs):
            try:
                return await _original(self, *args, **kwargs)
            except QueueError as exc:
                raise RuntimeError(message()) from exc

        execute._busy_answer = True
        setattr(GradioMCPServer, name, execute)
    return True

"""MCP text results as JSON.

gradio 6.31 renders a tool's non-file output as `str(output)`, so a list of dicts reaches MCP
clients as a Python repr (single quotes), which is not the JSON our docstrings promise.
`install()` wraps `GradioMCPServer.postprocess_output_data` so that list and dict outputs are
serialised with `json.dumps` (compact separators); file outputs and everything else keep
gradio's own handling. The e2e test parses MCP results with `json.loads`, so a gradio upgrade
that changes this surface fails loudly there.
"""

import json
import logging

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

"""Domain errors of the Space.

Every module below the UI raises these; `app.py` turns them into `gr.Error` so that
browser users, gradio_client callers (`AppError`) and MCP agents (`isError=True`) read the
same message. Messages name the argument and say what to do about it.
"""


class Sam2SpaceError(Exception):
    """Base class of every error this project raises on purpose."""


class InputError(Sam2SpaceError, ValueError):
    """A request argument is missing, malformed or outside its limits.

    `argument` is the public parameter name (`bboxes`, `masks[2]`, `video_path`, ...).
    """

    def __init__(self, argument: str, message: str):
        # args stay (argument, message) so the error pickles across the ZeroGPU worker boundary
        super().__init__(argument, message)
        self.argument = argument
        self.message = message

    def __str__(self) -> str:
        return f"Invalid `{self.argument}`: {self.message}"


class ModelLoadError(Sam2SpaceError, RuntimeError):
    """A model variant could not be loaded from its source."""


class FrameLoadError(Sam2SpaceError, RuntimeError):
    """The frame producer of a video request failed or stalled."""

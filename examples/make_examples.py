"""Generate the bundled example media (synthetic scenes; same licence as the project).

    python examples/make_examples.py

shapes.png (640x400), shapes_portrait.png (300x420) and moving_shapes.webm (320x240, 40 frames
at 10 fps, VP8): simple shapes on a soft gradient, so anyone can check that a click on a shape
masks that shape. Deterministic: rerunning rewrites the same pixels.
"""

import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from video_io import write_webm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def background(width: int, height: int) -> np.ndarray:
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    out = np.empty((height, width, 3), np.float32)
    out[..., 0] = 200 - 60 * ys / height
    out[..., 1] = 215 - 40 * xs / width
    out[..., 2] = 235 - 30 * (xs + ys) / (width + height)
    return out.astype(np.uint8)


def shapes(width: int, height: int, t: float = 0.0) -> np.ndarray:
    """RGB scene: a red disc, a blue rectangle and a yellow triangle; `t` in [0, 1] moves them."""
    img = background(width, height)
    u = min(width, height)
    cx = int(width * (0.25 + 0.35 * t))
    cv2.circle(img, (cx, int(height * 0.35)), int(u * 0.14), (215, 45, 50), -1, cv2.LINE_AA)
    x0 = int(width * (0.55 - 0.25 * t))
    y0 = int(height * (0.55 + 0.08 * np.sin(6.28 * t)))
    cv2.rectangle(img, (x0, y0), (x0 + int(u * 0.32), y0 + int(u * 0.22)), (40, 90, 200), -1)
    tri = np.array([[width * 0.78, height * (0.12 + 0.2 * t)], [width * 0.93, height * (0.42 + 0.2 * t)],
                    [width * 0.63, height * (0.42 + 0.2 * t)]], np.int32)
    cv2.fillPoly(img, [tri], (235, 200, 40), cv2.LINE_AA)
    return img


def main() -> None:
    cv2.imwrite(os.path.join(HERE, "shapes.png"), cv2.cvtColor(shapes(640, 400), cv2.COLOR_RGB2BGR))
    cv2.imwrite(os.path.join(HERE, "shapes_portrait.png"), cv2.cvtColor(shapes(300, 420), cv2.COLOR_RGB2BGR))
    frames = (shapes(320, 240, i / 39) for i in range(40))
    write_webm(os.path.join(HERE, "moving_shapes.webm"), frames, 10)


if __name__ == "__main__":
    main()

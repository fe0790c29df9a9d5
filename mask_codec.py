"""Pure mask codecs and geometry: binary masks <-> base64 PNG, COCO RLE, boxes.

A mask is a 2-D numpy array of shape (height, width); any non-zero value is "inside".
Nothing here knows about models, requests or gradio.
"""

import base64
import binascii
import io

import numpy as np
from PIL import Image
from pycocotools import mask as coco_mask

OUTPUT_FORMATS = ("png", "rle")


def _as_binary(mask: np.ndarray) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"a mask must be 2-D (height, width), got shape {mask.shape}")
    return mask.astype(bool, copy=False)


def encode_png_b64(mask: np.ndarray) -> str:
    """Encode a mask as a base64 (ASCII) 1-bit PNG of the same size; decoded pixels are 1 inside."""
    image = Image.fromarray(_as_binary(mask))  # bool -> PIL mode "1"
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def strip_b64_wrappers(text: str) -> str:
    """Remove the wrappers callers put around base64 PNGs: `b'...'`, a data: URI prefix, whitespace."""
    text = text.strip()
    if len(text) >= 3 and text[:2] in ("b'", 'b"') and text[-1] == text[1]:
        text = text[2:-1]
    if text.startswith("data:"):
        _, _, text = text.partition(",")
    return "".join(text.split())


def decode_png_b64(text: str | bytes) -> np.ndarray:
    """Decode a base64 PNG (any mode; non-zero = inside) into a bool mask (height, width).

    Raises ValueError with the reason when the text is not base64 or not a readable image.
    """
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    if not isinstance(text, str):
        raise ValueError(f"expected a base64 string, got {type(text).__name__}")
    text = strip_b64_wrappers(text)
    if not text:
        raise ValueError("the mask string is empty")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not valid base64 ({exc})") from None
    try:
        with Image.open(io.BytesIO(raw)) as image:
            image.load()
            if image.mode == "1":
                return np.array(image, dtype=bool)
            if image.mode in ("RGBA", "LA", "PA"):
                image = image.convert("RGBA")
                return np.array(image)[..., :3].any(axis=-1)
            return np.array(image.convert("L")) > 0
    except (OSError, Image.DecompressionBombError) as exc:
        raise ValueError(f"not a readable PNG image ({exc})") from None


def encode_rle(mask: np.ndarray) -> dict:
    """COCO RLE of a mask: {"size": [h, w], "counts": "<ascii>"} (pycocotools compressed counts)."""
    binary = _as_binary(mask)
    rle = coco_mask.encode(np.asfortranarray(binary.astype(np.uint8)))
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": rle["counts"].decode("ascii")}


def decode_rle(rle: dict) -> np.ndarray:
    """Inverse of `encode_rle` (also accepts uncompressed COCO RLE with a list of counts)."""
    h, w = (int(v) for v in rle["size"])
    counts = rle["counts"]
    if isinstance(counts, list):
        rle = coco_mask.frPyObjects({"size": [h, w], "counts": counts}, h, w)
    else:
        rle = {"size": [h, w], "counts": counts.encode("ascii") if isinstance(counts, str) else counts}
    return coco_mask.decode(rle).astype(bool)


def encode_mask(mask: np.ndarray, output_format: str):
    """Encode one mask in a public output format ("png" -> base64 str, "rle" -> dict)."""
    if output_format == "png":
        return encode_png_b64(mask)
    if output_format == "rle":
        return encode_rle(mask)
    raise ValueError(f"unknown output format {output_format!r}; expected one of {OUTPUT_FORMATS}")


def decode_mask(encoded) -> np.ndarray:
    """Decode either output format back into a bool mask."""
    if isinstance(encoded, dict):
        return decode_rle(encoded)
    return decode_png_b64(encoded)


def mask_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """Pixel extent of a mask as (x_min, y_min, width, height), or None for an empty mask.

    The box covers whole pixels: a mask filling columns 10..19 has x_min 10 and width 10.
    """
    binary = _as_binary(mask)
    cols = np.flatnonzero(binary.any(axis=0))
    if cols.size == 0:
        return None
    rows = np.flatnonzero(binary.any(axis=1))
    x0, x1 = int(cols[0]), int(cols[-1]) + 1
    y0, y1 = int(rows[0]), int(rows[-1]) + 1
    return x0, y0, x1 - x0, y1 - y0

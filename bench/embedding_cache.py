"""Latency of one prompt on an image whose embedding is cached vs not.

The real tiny architecture (`Sam2VideoConfig()` defaults) with random weights, on the CPU (or
--device cuda), a 1280x720 image, a box prompt. Each mode runs in a fresh process after a
warm-up: "uncached" with the cache disabled (every prompt runs the image encoder), "cached"
after one call has filled the cache (every prompt runs only the prompt encoder and mask
decoder). Medians over --prompts prompts with different boxes.

    python bench/embedding_cache.py
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, real_tiny_checkpoint, run_child  # noqa: E402


def child(mode: str, checkpoint: str, prompts: int, device: str) -> dict:
    import numpy as np
    from PIL import Image

    os.environ["SAM2_MODEL"] = checkpoint
    if mode == "uncached":
        os.environ["SAM2_EMBEDDING_CACHE_MB"] = "0"
    import samv2_handler
    from prompts import parse_image_prompt

    models = samv2_handler.get_models("tiny").to(device)
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8))
    warm = Image.fromarray(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8))

    def prompt(i):
        return parse_image_prompt([{"x0": 10 + i, "y0": 20 + i, "x1": 600 + i, "y1": 400 + i}], None, None, 1280, 720)

    samv2_handler.segment_image(models, warm, prompt(0))  # warm-up on another image
    samv2_handler.segment_image(models, image, prompt(0))  # fills the cache in "cached" mode
    times = []
    for i in range(1, prompts + 1):
        started = time.perf_counter()
        samv2_handler.segment_image(models, image, prompt(i))
        if device.startswith("cuda"):
            import torch
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return {"mode": mode, "median_s": median(times), "hits": samv2_handler.embedding_cache.hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        mode, checkpoint, prompts, device = args.child
        print(json.dumps(child(mode, checkpoint, int(prompts), device)))
        return

    print(banner())
    print(f"model: real tiny architecture, random weights, {args.device}; 1280x720 image; box prompts; "
          f"median of {args.prompts} prompts per mode, fresh process each")
    with tempfile.TemporaryDirectory(prefix="bench-embedding-cache-") as workdir:
        checkpoint = real_tiny_checkpoint(workdir)
        rows = {mode: run_child(__file__, [mode, checkpoint, str(args.prompts), args.device])
                for mode in ("uncached", "cached")}
    for mode, row in rows.items():
        print(f"  {mode:9s} {1000 * row['median_s']:9.1f} ms per prompt (cache hits: {row['hits']})")
    print(f"  cached is {rows['uncached']['median_s'] / rows['cached']['median_s']:.1f}x faster")


if __name__ == "__main__":
    main()

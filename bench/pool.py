"""Per-slot latency of `generate_masks` with two requests at once vs one alone (the pool's case).

One process holds one copy of the weights, as the app does; "solo" runs --repeats requests one
after another, "pair" runs two threads that each run --repeats requests at the same time (two
pool slots busy). Each mode runs in a fresh process after a warm-up; the embedding cache is off,
so every request encodes its image, as a new image would. Printed: median seconds per request
per slot, the per-slot ratio to solo, and the throughput ratio. The real tiny architecture
(`Sam2VideoConfig()`) with random weights, a 640x480 image, points_per_side --points.

    python bench/pool.py                 # CPU
    python bench/pool.py --device cuda   # the comparison issue 6 asks for on a GPU
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, real_tiny_checkpoint, run_child  # noqa: E402


def child(mode: str, checkpoint: str, repeats: int, points: int, device: str) -> dict:
    import numpy as np
    from PIL import Image

    os.environ["SAM2_MODEL"] = checkpoint
    os.environ["SAM2_EMBEDDING_CACHE_MB"] = "0"
    import mask_generation
    import samv2_handler

    models = samv2_handler.get_models("tiny").to(device)
    params = mask_generation.EverythingParams(points_per_side=points, pred_iou_thresh=0.0, stability_score_thresh=0.0)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)) for _ in range(2)]

    def run(slot: int, times: list) -> None:
        for _ in range(repeats):
            started = time.perf_counter()
            mask_generation.generate_masks(models, images[slot], params)
            if device.startswith("cuda"):
                import torch
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)

    run(0, [])  # warm-up
    slots = 1 if mode == "solo" else 2
    per_slot = [[] for _ in range(slots)]
    threads = [threading.Thread(target=run, args=(slot, per_slot[slot])) for slot in range(slots)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {"mode": mode, "per_slot_s": [median(times) for times in per_slot], "wall_s": wall,
            "requests": slots * repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", nargs=5)
    args = parser.parse_args()
    if args.child:
        mode, checkpoint, repeats, points, device = args.child
        print(json.dumps(child(mode, checkpoint, int(repeats), int(points), device)))
        return

    print(banner())
    print(f"model: real tiny architecture, random weights, {args.device}; 640x480 image; generate_masks "
          f"points_per_side {args.points}, thresholds 0, embedding cache off; {args.repeats} requests per slot "
          "after a warm-up, fresh process per mode")
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as workdir:
        checkpoint = real_tiny_checkpoint(workdir)
        rows = {mode: run_child(__file__, [mode, checkpoint, str(args.repeats), str(args.points), args.device])
                for mode in ("solo", "pair")}
    solo = rows["solo"]["per_slot_s"][0]
    print(f"  solo: {solo:.3f} s per request")
    for slot, seconds in enumerate(rows["pair"]["per_slot_s"]):
        print(f"  pair, slot {slot}: {seconds:.3f} s per request ({seconds / solo:.2f}x solo)")
    throughput = {mode: row["requests"] / row["wall_s"] for mode, row in rows.items()}
    print(f"  throughput: solo {throughput['solo']:.3f} req/s, pair {throughput['pair']:.3f} req/s "
          f"({throughput['pair'] / throughput['solo']:.2f}x)")


if __name__ == "__main__":
    main()

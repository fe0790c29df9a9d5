"""generate_masks per stage, output bytes, and whether mask encoding deserves a thread pool.

A 1920x1080 synthetic image, the real tiny architecture (`Sam2VideoConfig()` defaults) with
random weights, on the CPU, thresholds at 0 so that every candidate passes the filters.

Part 1 (fresh process, warm-up, medians over --repeats, embedding cache off): seconds per stage
(embedding, prompt decoding, filtering, NMS, encoding) and the JSON size of the result in both
output formats.
Random weights give near-full-image masks, which NMS merges into very few; so part 2 measures
encoding on the pre-NMS candidate masks (up to --candidates of them, 1080p each): serial vs a
thread pool of --workers, each in a fresh process, RLE and PNG, medians over --repeats.

    python bench/everything.py
    python bench/everything.py --points-per-side 32 --repeats 1   # the endpoint default grid
"""

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, real_tiny_checkpoint, run_child  # noqa: E402

STAGES = ("preprocess", "encoder", "decoder", "postprocess", "nms", "encoding")


def scene():
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 60, (1080, 1920, 3), dtype=np.uint8)
    for i, (x, y) in enumerate([(200, 150), (900, 300), (1400, 600), (500, 700)]):
        pixels[y:y + 250, x:x + 350] = (60 * i + 40, 200 - 40 * i, 120)
    return Image.fromarray(pixels)


def stages_child(checkpoint: str, points: int, repeats: int, candidates_path: str) -> dict:
    import numpy as np

    os.environ["SAM2_MODEL"] = checkpoint
    os.environ["SAM2_EMBEDDING_CACHE_MB"] = "0"  # every run pays the encoder, as a new image would
    import mask_generation
    import samv2_handler
    from stage_times import StageTimer

    models = samv2_handler.get_models("tiny")
    image = scene()
    params = mask_generation.EverythingParams(points_per_side=points, pred_iou_thresh=0.0,
                                              stability_score_thresh=0.0, max_masks=1000)
    processor = models.image_processor.image_processor
    captured = {}
    original_nms = processor.post_process_for_mask_generation

    def capture(all_masks, all_scores, all_boxes, thresh):  # keep the pre-NMS candidates for part 2
        captured.setdefault("rles", all_masks)
        return original_nms(all_masks, all_scores, all_boxes, thresh)

    processor.post_process_for_mask_generation = capture
    mask_generation.generate_masks(models, image, mask_generation.EverythingParams(points_per_side=2))  # warm-up
    captured.clear()
    runs = []
    for _ in range(repeats):
        timer = StageTimer()
        started = time.perf_counter()
        result = mask_generation.generate_masks(models, image, params, timer=timer)
        runs.append({**timer.seconds, "total": time.perf_counter() - started})
    png = mask_generation.generate_masks(models, image, mask_generation.EverythingParams(
        **{**params.__dict__, "output_format": "png"}))
    from pycocotools import mask as coco

    rles = captured["rles"]
    step = max(1, len(rles) // CANDIDATES)
    chosen = [coco.decode(coco.frPyObjects(r, *r["size"])) for r in rles[::step][:CANDIDATES]]
    np.save(candidates_path, np.packbits(np.stack(chosen).astype(bool), axis=-1))
    return {"stages": {k: median([r.get(k, 0.0) for r in runs]) for k in (*STAGES, "total")},
            "masks": len(result["masks"]), "candidates": len(rles),
            "bytes_rle": len(json.dumps(result)), "bytes_png": len(json.dumps(png)),
            "candidate_shape": list(chosen[0].shape), "saved": len(chosen)}


def encode_child(candidates_path: str, fmt: str, workers: int, repeats: int) -> dict:
    import numpy as np

    from mask_codec import encode_mask

    packed = np.load(candidates_path)
    masks = np.unpackbits(packed, axis=-1)[..., :1920].astype(bool)

    def encode_all():
        if workers <= 1:
            return [encode_mask(m, fmt) for m in masks]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda m: encode_mask(m, fmt), masks))

    encode_all()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        encoded = encode_all()
        times.append(time.perf_counter() - started)
    return {"seconds": median(times), "masks": len(masks), "bytes": len(json.dumps(encoded))}


CANDIDATES = 200


def main() -> None:
    global CANDIDATES
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points-per-side", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--candidates", type=int, default=CANDIDATES)
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    CANDIDATES = args.candidates
    if args.child:
        kind, *rest = args.child
        if kind == "stages":
            print(json.dumps(stages_child(rest[0], int(rest[1]), int(rest[2]), rest[3])))
        else:
            print(json.dumps(encode_child(rest[0], rest[1], int(rest[2]), int(rest[3]))))
        return

    print(banner())
    print(f"image: synthetic 1920x1080; model: real tiny architecture, random weights, CPU; points_per_side "
          f"{args.points_per_side}; thresholds 0; medians of {args.repeats}")
    with tempfile.TemporaryDirectory(prefix="bench-everything-") as workdir:
        checkpoint = real_tiny_checkpoint(workdir)
        candidates = os.path.join(workdir, "candidates.npy")
        part1 = run_child(__file__, ["stages", checkpoint, str(args.points_per_side), str(args.repeats), candidates,
                                     "--candidates", str(args.candidates)])
        print(f"\npart 1: {part1['candidates']} candidates passed the filters, {part1['masks']} after NMS")
        total = part1["stages"]["total"]
        for stage in STAGES:
            seconds = part1["stages"][stage]
            print(f"  {stage:10s} {seconds:8.3f} s  {100 * seconds / total:5.1f} %")
        print(f"  {'total':10s} {total:8.3f} s")
        print(f"  result JSON: {part1['bytes_rle']} bytes (rle), {part1['bytes_png']} bytes (png)")
        print(f"\npart 2: encoding {part1['saved']} candidate masks of {part1['candidate_shape'][1]}x"
              f"{part1['candidate_shape'][0]} (fresh process per mode)")
        for fmt in ("rle", "png"):
            serial = run_child(__file__, ["encode", candidates, fmt, "1", str(args.repeats),
                                          "--candidates", str(args.candidates)])
            pooled = run_child(__file__, ["encode", candidates, fmt, str(args.workers), str(args.repeats),
                                          "--candidates", str(args.candidates)])
            per_mask = 1000 * serial["seconds"] / serial["masks"]
            print(f"  {fmt}: serial {serial['seconds']:.3f} s ({per_mask:.2f} ms/mask, "
                  f"{serial['bytes'] / serial['masks'] / 1024:.1f} KiB/mask), {args.workers} threads "
                  f"{pooled['seconds']:.3f} s, pool/serial {pooled['seconds'] / serial['seconds']:.3f}")


if __name__ == "__main__":
    main()

"""async_frame_load vs eager: wall time, time to the first propagated mask, peak RSS.

A synthetic 1080p video of N frames (default 300), a random-weights model with the micro
architecture at the real 1024 input size (so preprocessing costs what it costs in production),
or with --real-tiny the real tiny architecture (`Sam2VideoConfig()` defaults). Each mode runs in
a fresh process (so peak RSS is its own), after a short warm-up; medians over --repeats runs.
The clock starts when tracking is called with the extracted JPEG frames, as in the app; "first
mask" is the first propagated frame's mask (frame 1; frame 0 is the seeded reference frame).

    python bench/video_async.py                 # CPU, N=300, 3 repeats
    python bench/video_async.py --frames 60 --repeats 1
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, peak_rss_mib, run_child  # noqa: E402


def prepare(workdir: str, frames: int, real_tiny: bool) -> tuple[str, list[str], str]:
    import numpy as np
    from transformers import Sam2VideoConfig

    import video_io
    from micro import build_checkpoint, micro_config, rect_frames, write_video

    config = Sam2VideoConfig() if real_tiny else micro_config(1024)
    checkpoint = build_checkpoint(os.path.join(workdir, "model"), config)
    video = write_video(os.path.join(workdir, "video.avi"),
                        rect_frames(1920, 1080, frames, rect=(400, 300, 900, 700), step=3), fps=30.0)
    frames_dir = os.path.join(workdir, "frames")
    os.makedirs(frames_dir)
    info = video_io.probe(video)
    paths = video_io.extract_frames(video, frames_dir, video_io.plan_sampling(info, None, None), 100_000)
    mask = np.zeros((1080, 1920), bool)
    mask[300:700, 400:900] = True
    mask_path = os.path.join(workdir, "mask.npy")
    np.save(mask_path, mask)
    return checkpoint, paths, mask_path


def child(mode: str, checkpoint: str, frames_dir: str, mask_path: str, device: str) -> dict:
    import numpy as np

    os.environ["SAM2_MODEL"] = checkpoint
    import samv2_handler

    paths = sorted(os.path.join(frames_dir, name) for name in os.listdir(frames_dir))
    mask = np.load(mask_path)
    models = samv2_handler.get_models("tiny").to(device)
    track = samv2_handler.track_video_streaming if mode == "async" else samv2_handler.track_video_eager
    for _ in track(models, paths[:3], [mask], 0):  # warm-up
        pass
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    first = None
    frames = 0
    for result in track(models, paths, [mask], 0):
        if first is None and result.frame_idx == 1:  # the first propagated (not seeded) frame
            if device.startswith("cuda"):
                import torch
                torch.cuda.synchronize()
            first = time.perf_counter() - started
        samv2_handler.frame_detections(result, 1920, 1080, drop_masks=True)
        frames += 1
    wall = time.perf_counter() - started
    return {"mode": mode, "wall_s": wall, "first_mask_s": first, "frames": frames,
            "peak_rss_mib": peak_rss_mib(), "rss_before_mib": rss_before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--real-tiny", action="store_true", help="real tiny architecture instead of micro@1024")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", nargs=5, metavar=("MODE", "CKPT", "FRAMES", "MASK", "DEVICE"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return

    print(banner())
    arch = "real tiny architecture (Sam2VideoConfig())" if args.real_tiny else "micro architecture at 1024 input"
    print(f"video: synthetic 1920x1080, {args.frames} frames; model: {arch}, random weights; "
          f"device {args.device}; {args.repeats} repeat(s) per mode, fresh process each")
    with tempfile.TemporaryDirectory(prefix="bench-video-async-") as workdir:
        started = time.perf_counter()
        checkpoint, paths, mask_path = prepare(workdir, args.frames, args.real_tiny)
        print(f"prepared video and {len(paths)} JPEG frames in {time.perf_counter() - started:.1f} s")
        runs = {"eager": [], "async": []}
        for repeat in range(args.repeats):
            for mode in ("eager", "async"):  # interleaved, so drift hits both modes alike
                result = run_child(__file__, [mode, checkpoint, os.path.dirname(paths[0]), mask_path, args.device])
                runs[mode].append(result)
                print(f"  run {repeat + 1} {mode:5s}: wall {result['wall_s']:7.2f} s, first mask "
                      f"{result['first_mask_s']:6.2f} s, peak RSS {result['peak_rss_mib']:7.0f} MiB", flush=True)
    rows = {mode: {key: median([r[key] for r in results]) for key in ("wall_s", "first_mask_s", "peak_rss_mib")}
            for mode, results in runs.items()}
    print("\nmedians       wall (s)  first mask (s)  peak RSS (MiB)")
    for mode in ("eager", "async"):
        row = rows[mode]
        print(f"  {mode:10s} {row['wall_s']:9.2f} {row['first_mask_s']:15.2f} {row['peak_rss_mib']:15.0f}")
    e, a = rows["eager"], rows["async"]
    print(f"  async/eager {a['wall_s'] / e['wall_s']:9.3f} {a['first_mask_s'] / e['first_mask_s']:15.4f} "
          f"{a['peak_rss_mib'] / e['peak_rss_mib']:15.3f}")
    print(f"  first mask {e['first_mask_s'] / a['first_mask_s']:.1f}x sooner with async_frame_load")


if __name__ == "__main__":
    main()

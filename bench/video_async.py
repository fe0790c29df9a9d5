"""async_frame_load vs eager: wall time, time to the first propagated mask, peak RSS.

A synthetic 1080p video of N frames (default 300), a random-weights model with the micro
architecture at the real 1024 input size (so preprocessing costs what it costs in production),
or with --real-tiny the real tiny architecture (`Sam2VideoConfig()` defaults). Each mode runs in
a fresh process (so peak RSS is its own), after a short warm-up; medians over --repeats runs,
modes interleaved. The clock starts when tracking is called with the extracted JPEG frames, as
in the app; "first mask" is frame 1's (frame 0 is the seeded reference frame). Every mask is
encoded as the endpoint does.

    python bench/video_async.py                          # CPU, N=300, 3 repeats
    python bench/video_async.py --frames 60 --repeats 1
    python bench/video_async.py --real-tiny --device cuda  # on a GPU machine
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, prepare_video, run_child, track_once  # noqa: E402

MODES = ("eager", "bounded")  # "bounded" is what async_frame_load=true runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--real-tiny", action="store_true", help="real tiny architecture instead of micro@1024")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--modes", default=",".join(MODES), help="comma list of eager, async-unbounded, bounded")
    parser.add_argument("--child", nargs=5, metavar=("MODE", "CKPT", "FRAMES", "MASK", "DEVICE"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(track_once(*args.child)))
        return

    modes = args.modes.split(",")
    print(banner())
    arch = "real tiny architecture (Sam2VideoConfig())" if args.real_tiny else "micro architecture at 1024 input"
    print(f"video: synthetic 1920x1080, {args.frames} frames, reference frame 0; model: {arch}, random weights; "
          f"device {args.device}; {args.repeats} repeat(s) per mode, fresh process each")
    runs = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="bench-video-async-") as workdir:
        started = time.perf_counter()
        checkpoint, frames_dir, mask_path = prepare_video(workdir, 1920, 1080, args.frames, args.real_tiny)
        print(f"prepared the video's JPEG frames in {time.perf_counter() - started:.1f} s")
        for repeat in range(args.repeats):
            for mode in modes:  # interleaved, so drift hits every mode alike
                result = run_child(__file__, [mode, checkpoint, frames_dir, mask_path, args.device])
                runs[mode].append(result)
                print(f"  run {repeat + 1} {mode:15s}: wall {result['wall_s']:7.2f} s, first mask "
                      f"{result['first_mask_s']:6.2f} s, peak RSS {result['peak_rss_mib']:7.0f} MiB", flush=True)
    rows = {mode: {key: median([r[key] for r in results]) for key in ("wall_s", "first_mask_s", "peak_rss_mib")}
            for mode, results in runs.items()}
    print("\nmedians              wall (s)  first mask (s)  peak RSS (MiB)")
    for mode in modes:
        row = rows[mode]
        print(f"  {mode:17s} {row['wall_s']:9.2f} {row['first_mask_s']:15.2f} {row['peak_rss_mib']:15.0f}")
    base = rows[modes[0]]
    for mode in modes[1:]:
        row = rows[mode]
        print(f"  {mode}/{modes[0]:9s} {row['wall_s'] / base['wall_s']:9.3f} "
              f"{row['first_mask_s'] / base['first_mask_s']:15.4f} {row['peak_rss_mib'] / base['peak_rss_mib']:15.3f}"
              f"   (first mask {base['first_mask_s'] / row['first_mask_s']:.1f}x sooner)")


if __name__ == "__main__":
    main()

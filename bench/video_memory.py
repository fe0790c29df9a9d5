"""Peak host memory vs video length: the bounded path (async_frame_load=true) against eager.

Synthetic 720p videos of 150 and 600 frames, a random-weights model with the micro architecture
at the real 1024 input size, on the CPU. Every (mode, length) runs in a fresh process after a
short warm-up, so its peak RSS is its own; "after load" is the peak before tracking (Python,
torch, the model). Masks are encoded as the endpoint does.

    python bench/video_memory.py                   # 150 and 600 frames, reference frame 0
    python bench/video_memory.py --lengths 60,240 --ref-middle
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import banner, median, prepare_video, run_child, track_once  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default="150,600")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--ref-middle", action="store_true", help="seed on the middle frame (bidirectional)")
    parser.add_argument("--modes", default="eager,bounded")
    parser.add_argument("--child", nargs=6, metavar=("MODE", "CKPT", "FRAMES", "MASK", "DEVICE", "REF"))
    args = parser.parse_args()
    if args.child:
        *rest, ref = args.child
        print(json.dumps(track_once(*rest, ref=int(ref))))
        return

    lengths = [int(n) for n in args.lengths.split(",")]
    modes = args.modes.split(",")
    print(banner())
    print(f"videos: synthetic 1280x720, {lengths} frames, reference frame "
          f"{'in the middle' if args.ref_middle else '0'}; model: micro architecture at 1024 input, random "
          f"weights; {args.repeats} repeat(s), fresh process per run")
    table = {}
    for length in lengths:
        with tempfile.TemporaryDirectory(prefix="bench-video-memory-") as workdir:
            started = time.perf_counter()
            checkpoint, frames_dir, mask_path = prepare_video(workdir, 1280, 720, length)
            print(f"prepared {length} frames in {time.perf_counter() - started:.1f} s", flush=True)
            ref = length // 2 if args.ref_middle else 0
            for mode in modes:
                results = [run_child(__file__, [mode, checkpoint, frames_dir, mask_path, "cpu", str(ref)])
                           for _ in range(args.repeats)]
                table[mode, length] = {key: median([r[key] for r in results])
                                       for key in ("peak_rss_mib", "rss_after_load_mib", "wall_s")}
                row = table[mode, length]
                print(f"  {mode:8s} {length:4d} frames: peak RSS {row['peak_rss_mib']:7.0f} MiB (after load "
                      f"{row['rss_after_load_mib']:5.0f}), wall {row['wall_s']:7.1f} s", flush=True)
    short, long = lengths[0], lengths[-1]
    print(f"\npeak RSS (MiB)   {short:>8d} frames {long:>8d} frames   {long}/{short}")
    for mode in modes:
        a, b = table[mode, short]["peak_rss_mib"], table[mode, long]["peak_rss_mib"]
        print(f"  {mode:14s} {a:15.0f} {b:15.0f} {b / a:9.3f}")
    if {"eager", "bounded"} <= set(modes):
        ratio = table["bounded", long]["peak_rss_mib"] / table["eager", long]["peak_rss_mib"]
        print(f"  bounded/eager at {long} frames: {ratio:.3f}")


if __name__ == "__main__":
    main()

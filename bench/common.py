"""Helpers shared by the benchmarks: machine/version banner, peak RSS, fresh child processes."""

import json
import os
import platform
import resource
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (ROOT, os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)


def banner() -> str:
    import torch
    import transformers

    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (f"machine: {cpu}, {os.cpu_count()} logical cores, GPU: {gpu}\n"
            f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
            f"torch threads {torch.get_num_threads()}")


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB.

    Read from VmHWM, which belongs to the address space and so starts afresh at exec; getrusage's
    ru_maxrss survives exec and would report the parent's peak when it is higher than the child's.
    """
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(script: str, args: list[str]) -> dict:
    """Run `script --child ...args` in a fresh interpreter; it prints one JSON line last."""
    done = subprocess.run([sys.executable, script, "--child", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"child {args} failed with exit code {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median(values):
    return statistics.median(values)


def real_tiny_checkpoint(workdir: str) -> str:
    """A random-weights checkpoint of the real tiny architecture (`Sam2VideoConfig()`) in `workdir`."""
    from transformers import Sam2VideoConfig

    from micro import build_checkpoint

    return build_checkpoint(os.path.join(workdir, "model"), Sam2VideoConfig())


def prepare_video(workdir: str, width: int, height: int, frames: int, real_tiny: bool = False):
    """A random-weights checkpoint (micro architecture at the real 1024 input, or the real tiny
    architecture), a synthetic video of a moving rectangle, its extracted JPEG frames and the
    rectangle's mask on frame 0. Returns (checkpoint, frames_dir, mask_path)."""
    import numpy as np
    import video_io
    from micro import build_checkpoint, iter_rect_frames, micro_config, write_video

    if real_tiny:
        checkpoint = real_tiny_checkpoint(workdir)
    else:
        checkpoint = build_checkpoint(os.path.join(workdir, "model"), micro_config(1024))
    rect = (width // 5, height // 4, width // 5 + width // 4, height // 4 + height // 3)
    video = write_video(os.path.join(workdir, "video.avi"),
                        iter_rect_frames(width, height, frames, rect=rect, step=1), fps=30.0)
    frames_dir = os.path.join(workdir, "frames")
    os.makedirs(frames_dir)
    info = video_io.probe(video)
    video_io.extract_frames(video, frames_dir, video_io.plan_sampling(info, None, None), 100_000)
    os.remove(video)
    mask = np.zeros((height, width), bool)
    mask[rect[1]:rect[3], rect[0]:rect[2]] = True
    mask_path = os.path.join(workdir, "mask.npy")
    np.save(mask_path, mask)
    return checkpoint, frames_dir, mask_path


TRACKERS = {
    "eager": ("track_video_eager", {}),
    "async-unbounded": ("track_video_streaming", {"bounded": False}),
    "bounded": ("track_video_streaming", {"bounded": True}),
}


def track_once(mode: str, checkpoint: str, frames_dir: str, mask_path: str, device: str, ref: int = 0) -> dict:
    """Child-process body: load, warm up on 3 frames, then track every frame once and measure."""
    import time

    import numpy as np

    os.environ["SAM2_MODEL"] = checkpoint
    import samv2_handler

    name, options = TRACKERS[mode]
    track = getattr(samv2_handler, name)
    paths = sorted(os.path.join(frames_dir, f) for f in os.listdir(frames_dir))
    mask = np.load(mask_path)
    height, width = mask.shape
    models = samv2_handler.get_models("tiny").to(device)
    for _ in track(models, paths[:3], [mask], 0, **options):  # warm-up
        pass
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    first = None
    frames = 0
    for result in track(models, paths, [mask], ref, **options):
        if first is None and result.frame_idx == ref + 1:  # the first propagated (not seeded) frame
            if device.startswith("cuda"):
                import torch
                torch.cuda.synchronize()
            first = time.perf_counter() - started
        samv2_handler.frame_detections(result, width, height, drop_masks=False)
        frames += 1
    return {"mode": mode, "wall_s": time.perf_counter() - started, "first_mask_s": first, "frames": frames,
            "peak_rss_mib": peak_rss_mib(), "rss_after_load_mib": rss_before}

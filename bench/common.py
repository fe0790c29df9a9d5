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
    """Peak resident set size of this process so far (Linux reports KiB)."""
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

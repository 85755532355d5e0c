"""What the PyTorch measurement scripts of validate/ share: finding a CUDA device, timing a call on
the GPU, reading the driver, and writing a result file. Imported by every measure_*.py,
probe_host_bound.py and profile_torch_layers.py (run from the repository root:
python3 validate/<script>.py)."""
import datetime
import json
import subprocess


def cuda_time_us(fn, torch, min_ms=100.0, warmup=3):
    """Mean microseconds of fn() on the current stream: `warmup` untimed calls, one call to size
    the loop, then enough calls to last about `min_ms` (at least 3), between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    iters = max(3, int(min_ms / max(start.elapsed_time(end), 1e-3)))
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters * 1e3


def events_ms(torch, fn, iters, warmup=3):
    """Mean milliseconds of fn() on the current stream over `iters` back-to-back calls between two
    CUDA events, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / iters


def held_rate_windows(fn, torch, flops, seconds, label, burst_us=None):
    """fn() back to back for `seconds`, in windows of about one second timed with CUDA events: per
    window the achieved TFLOP/s (`flops` per call), and the SM clock and power read after it, each
    printed as `label` ... . What a 50 ms benchmark misses: the clocks the power limit holds."""
    import time
    if burst_us is None:
        burst_us = cuda_time_us(fn, torch)
    per_window = max(1, int(1e6 / burst_us))
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    windows, start = [], time.time()
    while time.time() - start < seconds:
        s.record()
        for _ in range(per_window):
            fn()
        e.record()
        torch.cuda.synchronize()
        clock, power = (nvidia_smi("clocks.sm,power.draw") + ["", ""])[:2]
        windows.append({"t_s": round(time.time() - start, 2),
                        "tflops": round(flops * per_window / (s.elapsed_time(e) / 1e3) / 1e12, 1),
                        "sm_clock_mhz": clock, "power_w": power})
        print("%s  %6.1f s  %7.1f TFLOP/s  SM %s MHz  %s W" % (label, windows[-1]["t_s"], windows[-1]["tflops"], clock, power),
              flush=True)
    return windows


def nvidia_smi(query):
    """nvidia-smi's values for a --query-gpu list (first GPU), or [] where it cannot run."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, check=True).stdout.strip()
        return [x.strip() for x in out.splitlines()[0].split(",")]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return []


def driver_version():
    return (nvidia_smi("driver_version") or ["unknown"])[0]


def write_json(path, doc):
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def measured_provenance(torch, source):
    """The provenance block of a result file measured on the current GPU by `source`."""
    return {"method": "measured", "source": source, "date": datetime.date.today().isoformat(),
            "gpu": torch.cuda.get_device_properties(0).name, "driver": driver_version(),
            "cuda": torch.version.cuda, "torch": torch.__version__}


def run_rows_measurement(doc, source, measure_rows):
    """The command line of a script that writes rows measured on the current GPU: --out FILE gets
    {"provenance", "rows": measure_rows(torch)}; exit status 1 (said on stderr) without a GPU."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch(source.split("/")[-1].rsplit(".", 1)[0])
    if torch is None:
        return 1
    write_json(args.out, {"provenance": measured_provenance(torch, source), "rows": measure_rows(torch)})
    return 0


def cuda_torch(script):
    """PyTorch, where a CUDA device is present; else None, having said so on stderr as `script`."""
    import sys
    import torch
    if not torch.cuda.is_available():
        print("%s: no CUDA device" % script, file=sys.stderr)
        return None
    return torch


def failure(e):
    """A failed measurement's record: the exception's type and first line."""
    text = str(e).splitlines()[0] if str(e) else ""
    return "%s: %s" % (type(e).__name__, text)

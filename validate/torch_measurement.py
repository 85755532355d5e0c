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


def cuda_torch(script):
    """PyTorch, where a CUDA device is present; else None, having said so on stderr as `script`."""
    import sys
    import torch
    if not torch.cuda.is_available():
        print("%s: no CUDA device" % script, file=sys.stderr)
        return None
    return torch

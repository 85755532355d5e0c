#!/usr/bin/env python3
"""What does the CUDA caching allocator's retry cost when an FSDP-like loop runs near the memory
limit? PyTorch's allocator, when no cached block fits and cudaMalloc fails, frees every cached
block (synchronizing) and calls cudaMalloc again (memory_stats "num_alloc_retries"; Composer logs
it as alloc_retries). The simulator does not model this: no source gives its cost. This script
measures it on one GPU with FSDP 1.13's allocation pattern per unit: the unsharded parameters
allocated on a gather stream, used by the compute stream; the unsharded gradient allocated on the
compute stream; its F.pad copy on a post-backward stream; each freed under record_stream. A
ballast stands for the sharded state; the per-process memory fraction is lowered step by step
until the loop retries (or runs out of memory), and each fraction's step time and retries per
step are recorded. (time at a fraction - time with room) / retries is the cost of one retry at
that unit size, the number a model of the allocator would need.
Run on a GPU machine: python3 validate/measure_allocator_retry.py --out FILE
(defaults: 1.61 GB units, a 70B MPT block in bf16; --unit-mb 630 for a 13B block)."""
import argparse
import sys
import time

from torch_measurement import cuda_torch, measured_provenance, write_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--unit-mb", type=float, default=1610.0, help="unsharded unit size in MB (bf16)")
    ap.add_argument("--units", type=int, default=8, help="units per step")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per fraction")
    ap.add_argument("--max-ahead", type=int, default=0,
                    help="units the host may issue ahead of the GPU (FSDP's limit_all_gathers holds it to 2 "
                         "in-flight all-gathers); 0: unlimited, the host issues the whole step at once")
    ap.add_argument("--headroom-gb", type=float, nargs="+", default=[40, 12, 9, 8, 7, 6.5, 6, 5.5, 5],
                    help="memory left above the ballast, GB, from ample to tight")
    args = ap.parse_args()
    torch = cuda_torch("measure_allocator_retry")
    if torch is None:
        return 1
    import torch.nn.functional as F
    dev = torch.device("cuda", 0)  # set_per_process_memory_fraction needs an index
    total = torch.cuda.get_device_properties(dev).total_memory
    n = int(args.unit_mb * 1e6 / 2)
    h = min(8192, int(n ** 0.5) // 64 * 64)  # the compute reads an h x h view of the unit
    x = torch.randn((4096, h), device=dev, dtype=torch.bfloat16)
    gather, post = torch.cuda.Stream(), torch.cuda.Stream()
    done = []  # per unit issued this step: an event after its last work (the post stream's)

    def unit():
        if args.max_ahead > 0 and len(done) >= args.max_ahead:
            done[len(done) - args.max_ahead].synchronize()  # the rate limiter's wait
        with torch.cuda.stream(gather):
            param = torch.empty(n, device=dev, dtype=torch.bfloat16).fill_(1e-3)  # the all-gather
        torch.cuda.current_stream().wait_stream(gather)
        param.record_stream(torch.cuda.current_stream())
        w = param[: h * h].view(h, h)
        y = x @ w
        y = y @ w  # some compute that reads the gathered unit
        grad = torch.empty(n, device=dev, dtype=torch.bfloat16).fill_(1e-3)  # autograd's gradient
        post.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(post):
            padded = F.pad(grad, [0, 64])  # _post_backward_hook's copy, the reduce-scatter's input
            padded.mul_(0.5)
        grad.record_stream(post)
        event = torch.cuda.Event()
        event.record(post)
        done.append(event)
        del param, grad, padded, y

    def step():
        done.clear()
        for _ in range(args.units):
            unit()
        torch.cuda.synchronize()

    rows = []
    for headroom in args.headroom_gb:
        torch.cuda.empty_cache()
        torch.cuda.set_per_process_memory_fraction(1.0, dev)
        ballast_bytes = max(0, total - int(headroom * 1e9) - (1 << 30))
        ballast = torch.empty(ballast_bytes // 2, device=dev, dtype=torch.bfloat16) if ballast_bytes else None
        fraction = min(1.0, (ballast_bytes + headroom * 1e9) / total)
        torch.cuda.set_per_process_memory_fraction(fraction, dev)
        row = {"headroom_gb": headroom, "memory_fraction": round(fraction, 4)}
        try:
            step()  # warm-up: fills the per-stream pools
            before = torch.cuda.memory_stats(dev).get("num_alloc_retries", 0)
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step()
            row["step_ms"] = round((time.perf_counter() - t0) / args.steps * 1e3, 3)
            row["retries_per_step"] = (torch.cuda.memory_stats(dev).get("num_alloc_retries", 0) - before) / args.steps
        except RuntimeError as e:  # out of memory even after the retry
            row["error"] = str(e).splitlines()[0]
        rows.append(row)
        print(row, flush=True)
        del ballast
        torch.cuda.synchronize()
    base = next((r["step_ms"] for r in rows if "step_ms" in r and r["retries_per_step"] == 0), None)
    for r in rows:
        if base is not None and r.get("retries_per_step", 0) > 0:
            r["ms_per_retry"] = round((r["step_ms"] - base) / r["retries_per_step"], 3)
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_allocator_retry.py"),
                          "unit_mb": args.unit_mb, "units_per_step": args.units, "max_ahead": args.max_ahead,
                          "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

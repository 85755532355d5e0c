#!/usr/bin/env python3
"""Host- and device-side cost of what DeepSpeed v0.3.13's Init._allgather_param and PyTorch's
list-output all_gather do around the NCCL call, per rank of a group of n (no NCCL involved):
  - a Python loop building n narrow() views of the flat buffer (partition_parameters.py);
  - n non_blocking copy_ of S/n elements each (ProcessGroupNCCL copies its flattened output back
    into the list), timed end to end (best of 5) and host-side only (the first issue);
  - one copy of S and torch.zeros(S), for comparison.
What topologies/devices/a100-80gb.json's eager_view_call and eager_copy_call cite (per call).
Run on a CUDA machine with PyTorch: python3 validate/measure_gather_host_costs.py --out FILE"""
import sys
import time

from torch_measurement import run_rows_measurement

SIZES = (151_000_000, 453_000_000)  # fp16 elements: 302 MB and 906 MB flat buffers
GROUPS = (64, 384, 768, 1120)       # ranks of Megatron Table 2's ZeRO-3 runs and below


def best_wall_s(torch, fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def measure(torch, elements, ranks):
    flat = torch.empty(elements, dtype=torch.half, device="cuda")
    out = torch.empty(elements, dtype=torch.half, device="cuda")
    part = elements // ranks

    def views():
        return [flat.narrow(0, part * i, part) for i in range(ranks)]

    view_s = best_wall_s(torch, views)
    sources = views()
    targets = [out.narrow(0, part * i, part) for i in range(ranks)]

    def copies():
        for dst, src in zip(targets, sources):
            dst.copy_(src, non_blocking=True)

    torch.cuda.synchronize()
    start = time.perf_counter()
    copies()
    host_s = time.perf_counter() - start  # issuing only: the first call, warm-up included
    torch.cuda.synchronize()
    copies_s = best_wall_s(torch, copies)
    row = {"bytes": 2 * elements, "ranks": ranks,
           "view_us_per_call": round(view_s / ranks * 1e6, 2),
           "copy_us_per_call": round(copies_s / ranks * 1e6, 2),
           "copy_host_us_per_call": round(host_s / ranks * 1e6, 2),
           "one_copy_ms": round(best_wall_s(torch, lambda: out.copy_(flat)) * 1e3, 3),
           "zeros_ms": round(best_wall_s(torch, lambda: torch.zeros(elements, dtype=torch.half, device="cuda")) * 1e3, 3)}
    print("S=%.0fMB n=%d: view %.2f us/call; copies %.2f us/call (host %.2f); one copy %.3f ms; zeros %.3f ms" %
          (row["bytes"] / 1e6, ranks, row["view_us_per_call"], row["copy_us_per_call"],
           row["copy_host_us_per_call"], row["one_copy_ms"], row["zeros_ms"]), flush=True)
    return row


def main():
    return run_rows_measurement(__doc__, "validate/measure_gather_host_costs.py",
                                lambda torch: [measure(torch, s, n) for s in SIZES for n in GROUPS])


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Host cost per call of what torchmetrics' gather_all_tensors does on world_size ranks, per
0-dim metric state (Composer's train metrics, sim/model/composer_metric_sync.hpp), without NCCL:
  - [torch.zeros_like(x) for _ in range(n)]: its output list (_simple_gather_all_tensors);
  - n copy_ of one entry each out of a flat buffer: what ProcessGroupNCCL's list all_gather does
    after the collective (from C++ there; from Python here, so an upper bound by the binding);
  - torch.stack of the n entries and the sum (_sync_dist's reduction), for comparison.
Each timed end to end (best of 5) and host-side only (the first issue, warm-up included). One
process cannot run an all_gather of n ranks; these are the O(n) calls around it.
What topologies/devices/*.json's eager_copy_call stands for in that model (ASSUMED 13 us per call,
measured for Tensor.copy_ of slices by validate/measure_gather_host_costs.py).
Run on a CUDA machine with PyTorch: python3 validate/measure_metric_sync_host.py --out FILE"""
import time

from torch_measurement import run_rows_measurement

WORLDS = (8, 128, 256, 512, 1024)  # llm-foundry's tables: 8-512 GPUs
DTYPES = ("float32", "int64")      # LanguageCrossEntropy's sum_loss and total_items


def best_wall_s(torch, fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def host_s(torch, fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed


def measure(torch, dtype, n):
    x = torch.zeros((), dtype=getattr(torch, dtype), device="cuda")
    flat = torch.zeros(n, dtype=x.dtype, device="cuda")

    def fills():
        return [torch.zeros_like(x) for _ in range(n)]

    outputs = fills()

    def copies():
        for i, out in enumerate(outputs):
            out.copy_(flat[i], non_blocking=True)

    def stack_sum():
        return torch.stack(outputs).sum(dim=0)

    row = {"dtype": dtype, "world_size": n,
           "zeros_like_us_per_call": round(best_wall_s(torch, fills) / n * 1e6, 2),
           "zeros_like_host_us_per_call": round(host_s(torch, fills) / n * 1e6, 2),
           "copy_us_per_call": round(best_wall_s(torch, copies) / n * 1e6, 2),
           "copy_host_us_per_call": round(host_s(torch, copies) / n * 1e6, 2),
           "stack_sum_us": round(best_wall_s(torch, stack_sum) * 1e6, 1)}
    print("%s n=%d: zeros_like %.2f us/call (host %.2f); copy_ %.2f us/call (host %.2f); stack+sum %.1f us" %
          (dtype, n, row["zeros_like_us_per_call"], row["zeros_like_host_us_per_call"], row["copy_us_per_call"],
           row["copy_host_us_per_call"], row["stack_sum_us"]), flush=True)
    return row


def main():
    return run_rows_measurement(__doc__, "validate/measure_metric_sync_host.py",
                                lambda torch: [measure(torch, d, n) for d in DTYPES for n in WORLDS])


if __name__ == "__main__":
    raise SystemExit(main())

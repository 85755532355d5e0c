#!/usr/bin/env python3
"""Host time of the loop DeepSpeed v0.3.12-v0.4.2 runs after every optimizer step to rebuild the
persistent parameters (biases and norms) from the ranks' shards (Init._allgather_params in
deepspeed/runtime/zero/partition_parameters.py, called from stage3.py _post_step), on one GPU and
without NCCL: the gathered flat buffer is a local tensor, narrowed into one view per rank as the
code does. For every persistent parameter and every rank whose slice holds part of it, the code
takes a narrow of that rank's view, a view(-1) and a narrow of the rebuilt tensor, and a copy_.
program/deepspeed_zero3_schedule.cpp charges each such iteration 3 x eager_view_call + eager_copy_call
(topologies/devices/a100-80gb.json); this script measures the iteration as a whole, and the two
calls alone in the same process, for the Megatron Table 2 shapes:
  - 174.6B (96 layers, hidden 12288) at 384 and 768 ranks,
  - 529.6B (105 layers, hidden 20480) at 640 and 1120 ranks.
Run on a CUDA machine with PyTorch:
  python3 validate/measure_persistent_regather.py --out validate/results/<gpu>-persistent-regather.json"""
import argparse
import math
import sys
import time

from torch_measurement import cuda_torch, measured_provenance, write_json

CASES = (("GPT 174.6B", 96, 12288, 384), ("GPT 174.6B", 96, 12288, 768),
         ("GPT 529.6B", 105, 20480, 640), ("GPT 529.6B", 105, 20480, 1120))


def persistent_sizes(layers, hidden):
    """Megatron GPT's tensors under stage3_param_persistence_threshold (1e5), in module order:
    per layer the input norm (weight, bias), QKV bias, attention output bias, the post-attention
    norm (weight, bias), MLP biases; then the final norm."""
    h = hidden
    per_layer = [h, h, 3 * h, h, h, h, 4 * h, h]
    return per_layer * layers + [h, h]


def rebuild(torch, sizes, ranks):
    """The step's rebuild, as a loop of our own over the shapes DeepSpeed uses: shards padded to
    the group (ceil(numel / ranks) each), concatenated per rank in the flat buffer."""
    shard = [math.ceil(e / ranks) for e in sizes]
    per_rank = sum(shard)
    flat = torch.zeros(per_rank * ranks, dtype=torch.half, device="cuda")
    views = [flat.narrow(0, per_rank * r, per_rank) for r in range(ranks)]
    iterations = 0
    torch.cuda.synchronize()
    start = time.perf_counter()
    offset = 0
    for numel, part in zip(sizes, shard):
        full = torch.empty(numel, dtype=torch.half, device="cuda")
        for r in range(ranks):
            first = r * part
            if first >= numel:
                continue  # the code tests every rank
            count = min(numel - first, part)
            src = views[r].narrow(0, offset, count)
            full.view(-1).narrow(0, first, count).copy_(src)
            iterations += 1
        offset += part
    host_s = time.perf_counter() - start
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - start
    return iterations, host_s, wall_s


def call_costs(torch, calls=20000):
    """One narrow and one small device-to-device copy_, each alone in a loop (per call)."""
    flat = torch.zeros(1 << 20, dtype=torch.half, device="cuda")
    dst = torch.zeros(64, dtype=torch.half, device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(calls):
        flat.narrow(0, i % 1000, 32)
    view_s = (time.perf_counter() - start) / calls
    src = flat.narrow(0, 0, 32)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        dst.narrow(0, 0, 32).copy_(src)
    torch.cuda.synchronize()
    copy_s = (time.perf_counter() - start) / calls - view_s
    return view_s, copy_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_persistent_regather")
    if torch is None:
        return 1
    rebuild(torch, persistent_sizes(2, 1024), 64)  # warm-up: allocator, kernels
    view_s, copy_s = call_costs(torch)
    print("narrow %.2f us, copy_ %.2f us per call" % (view_s * 1e6, copy_s * 1e6), flush=True)
    rows = []
    for name, layers, hidden, ranks in CASES:
        sizes = persistent_sizes(layers, hidden)
        iterations, host_s, wall_s = rebuild(torch, sizes, ranks)
        row = {"model": name, "ranks": ranks, "persistent_parameters": len(sizes), "iterations": iterations,
               "host_s": round(host_s, 3), "wall_s": round(wall_s, 3),
               "us_per_iteration": round(wall_s / iterations * 1e6, 2),
               "model_us_per_iteration": round((3 * view_s + copy_s) * 1e6, 2)}
        print("%s at %d ranks: %d parameters, %d iterations, %.2f s (%.2f us each; 3 narrows + copy_ "
              "alone: %.2f us)" % (name, ranks, len(sizes), iterations, wall_s, row["us_per_iteration"],
                                   row["model_us_per_iteration"]), flush=True)
        rows.append(row)
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_persistent_regather.py"),
                          "view_us_per_call": round(view_s * 1e6, 2), "copy_us_per_call": round(copy_s * 1e6, 2),
                          "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The measured MPT block's step kernel by kernel, with llm-foundry's split of Wqkv's output.

Why: validate/measure_mpt_block.py's block takes q, k, v out of Wqkv's output by indexing a
[b, s, 3, heads, d_head] view, whose backward is three zero fills, three strided copies and two
qkv-sized adds; llm-foundry (v0.3.0 llmfoundry/models/layers/attention.py) runs
qkv.chunk(3, dim=2), whose backward is one cat, as the simulator's "mpt" layer has it. And its
profiled kernels of one step sum to less than its timed step (13B micro-batch 2: 11.81 against
13.26 ms). Per shape, SDPA backend and split ("select": measure_mpt_block's, "chunk":
llm-foundry's; make_block):
  - the step timed with CUDA events, 20 steps after 5 warm-up steps (step_ms);
  - 3 steps under the torch profiler, kernels from its Chrome trace: per step the kernel sum,
    the union of kernel intervals (busy), the span first start -> last end, the idle gaps over
    20 us (cuDNN runs) with the kernel after each, and the kernels by name (us per step).
Compared with the simulator by build/validate/trainsim-mpt-block-ops (validate/ACCURACY.md).
Run on a GPU machine: python3 validate/probe_mpt_block_timeline.py --out FILE"""
import argparse
import json
import os
import tempfile

from torch_measurement import cuda_torch, events_ms, measured_provenance, write_json
from measure_mpt_block import Case

RUNS = (("cudnn", ((5120, 40, 2048, 2), (1536, 12, 512, 96)), ("select", "chunk")),
        ("flash", ((1536, 12, 512, 96), (2560, 20, 512, 40), (2048, 16, 2048, 12), (5120, 40, 2048, 2)), ("chunk",)))


def step_ms(torch, fn, iters=20, warmup=5):
    return events_ms(torch, fn, iters, warmup)


def profiled_kernels(torch, fn, steps):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    return sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])


def timeline(kernels, steps):
    busy, end, gaps = 0.0, None, []
    for k in kernels:
        s, e = k["ts"], k["ts"] + k["dur"]
        if end is not None and s - end > 20:
            gaps.append({"gap_us": round(s - end), "before": k["name"][:90]})
        busy += k["dur"] if end is None or s >= end else max(0.0, e - end)
        end = e if end is None else max(end, e)
    names = {}
    for k in kernels:
        n = names.setdefault(k["name"][:100], [0, 0.0])
        n[0] += 1
        n[1] += k["dur"]
    return {"kernel_sum_us": round(sum(k["dur"] for k in kernels) / steps, 1), "busy_us": round(busy / steps, 1),
            "span_us": round((kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]) / steps, 1),
            "gaps_over_20us": sorted(gaps, key=lambda g: -g["gap_us"])[:20],
            "by_kernel": [{"name": n, "calls": c / steps, "us": round(u / steps, 1)}
                          for n, (c, u) in sorted(names.items(), key=lambda x: -x[1][1])]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("probe_mpt_block_timeline.py")
    if torch is None:
        return 1
    rows = []
    for attention, shapes, splits in RUNS:
        for d, heads, seq, mb in shapes:
            for split in splits:
                case = Case(torch, d, heads, seq, mb, attention, split)
                row = {"hidden": d, "heads": heads, "seq_len": seq, "micro_batch": mb, "split": split,
                       "attention": attention, "step_ms": round(step_ms(torch, case.step), 4)}
                row.update(timeline(profiled_kernels(torch, case.step, 3), 3))
                print(json.dumps({k: v for k, v in row.items() if k != "by_kernel"}), flush=True)
                rows.append(row)
                del case
                torch.cuda.empty_cache()
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/probe_mpt_block_timeline.py"), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

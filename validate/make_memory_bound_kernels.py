#!/usr/bin/env python3
"""Writes a trainsim.memory_bound_kernels/1 file (sim/model/memory_bound_kernels.hpp) from the
memory-bound rows measure_torch_ops.py measured: the rates of the kernels a PyTorch training job
runs, per kernel class, with the measurement's provenance (GPU, driver, CUDA, torch, date).

Names are the simulator's kernel classes (model::Operation::kernel); they are the measured names,
except "adamw_fused_fp32" (torch.optim.AdamW(fused=True)), which becomes "adamw", the class of the
optimizer step. Bytes and times are copied unchanged: nothing is fitted.

Run from the repository root:
  python3 validate/make_memory_bound_kernels.py validate/results/h100-sxm-torch-ops-measured.json \
      topologies/calibration/h100-sxm-pytorch-kernels.json"""
import json
import sys

RENAMED = {"adamw_fused_fp32": "adamw"}
NOTES = {
    "adamw": "torch.optim.AdamW(fused=True) over fp32 parameters (28 bytes per parameter)",
    "embedding_bwd": "scatter-add into the table's gradient (embedding_dense_backward)",
}


def convert(measured, source_path):
    p = measured["provenance"]
    if p.get("method") != "measured":
        raise SystemExit("%s: expected provenance.method \"measured\"" % source_path)
    provenance = {
        "method": "measured",
        "source": "%s, written by validate/make_memory_bound_kernels.py from %s" % (p["source"], source_path),
        "date": p["date"],
        "framework": "torch " + p["torch"],
        "gpu": p["gpu"],
    }
    for key in ("sm_count", "driver", "cuda"):
        if key in p:
            provenance[key] = p[key]
    provenance["note"] = ("64 Mi bf16 elements per call (rows of 4096, softmax rows of 1024); "
                          "backward = forward+backward - forward; CUDA events over ~100 ms")
    kernels = []
    for row in measured["memory_bound"]:
        name = RENAMED.get(row["name"], row["name"])
        k = {"name": name, "bytes": row["bytes"], "time_us": row["time_us"]}
        if name in NOTES:
            k["note"] = NOTES[name]
        kernels.append(k)
    return {
        "schema": "trainsim.memory_bound_kernels/1",
        "description": "PyTorch's own memory-bound kernels (eager, unfused) on %s" % p["gpu"],
        "provenance": provenance,
        "kernels": kernels,
    }


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_memory_bound_kernels.py MEASURED_TORCH_OPS.json OUT.json")
    with open(sys.argv[1]) as f:
        measured = json.load(f)
    out = convert(measured, sys.argv[1])
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a trainsim.memory_bound_kernels/1 file (sim/model/memory_bound_kernels.hpp) from the
memory-bound rows measure_torch_ops.py measured: the rates of the kernels a PyTorch training job
runs, per kernel class, with the measurement's provenance (GPU, driver, CUDA, torch, date).

Names are the simulator's kernel classes (model::Operation::kernel); they are the measured names,
except "adamw_fused_fp32" (torch.optim.AdamW(fused=True)), which becomes "adamw", the class of the
optimizer step. Bytes and times are copied unchanged: nothing is fitted.

With a layer profile (validate/profile_torch_layers.py), three classes the isolated rows lack are
taken from one profiled layer, LAYER_SAMPLE (gpt-7.5b, unfused attention), as timed there (aten
op, device time per call): "bias_grad" (aten::sum of an nn.Linear's output gradient over the
tokens, [2048, 16384]), "chunk_grad_cat" (aten::cat, the gradient of qkv.chunk, 3 x 2048 x 4096
elements), "permute_copy" (aten::copy_ of the permuted QKV gradient, [2048, 1, 32, 384]). The
other layers' rows of the profile are left for checking (trainsim-framework-layers --profile).

Run from the repository root:
  python3 validate/make_memory_bound_kernels.py validate/results/h100-sxm-torch-ops-measured.json \
      topologies/calibration/h100-sxm-pytorch-kernels.json \
      [validate/results/h100-sxm-torch-layer-profile.json]"""
import json
import sys

LAYER_SAMPLE = ("gpt-7.5b", "unfused")
# class: (aten op, input shapes as the profiler wrote them, bytes read + written per call)
LAYER_KERNELS = {
    "bias_grad": ("aten::sum", "[[2048, 16384], [], [], []]", 2 * (2048 * 16384 + 16384)),
    "chunk_grad_cat": ("aten::cat", "[[], []]", 2 * 2 * 3 * 2048 * 4096),
    "permute_copy": ("aten::copy_", "[[2048, 1, 32, 384], [2048, 1, 32, 384], []]", 2 * 2 * 2048 * 32 * 384),
}
RENAMED = {"adamw_fused_fp32": "adamw"}
NOTES = {
    "adamw": "torch.optim.AdamW(fused=True) over fp32 parameters (28 bytes per parameter)",
    "embedding_bwd": "scatter-add into the table's gradient (embedding_dense_backward)",
    "bias_grad": "reduce_kernel sum over the tokens of an nn.Linear output gradient (bf16, 2048 x 16384)",
    "chunk_grad_cat": "CatArrayBatchedCopy: qkv.chunk(3, dim=-1)'s gradient, 3 x [1, 32, 2048, 128] into [1, 32, 2048, 384]",
    "permute_copy": "direct_copy_kernel of a permuted bf16 tensor made contiguous ([2048, 1, 32, 384])",
}


def layer_kernels(profile, profile_path):
    """The LAYER_KERNELS classes from the LAYER_SAMPLE layer of a layer profile."""
    rows = [l for l in profile["layers"] if (l["model"], l["attention"]) == LAYER_SAMPLE]
    if len(rows) != 1:
        raise SystemExit("%s: expected one layer %s %s" % (profile_path, *LAYER_SAMPLE))
    out = []
    for name, (op, shapes, nbytes) in LAYER_KERNELS.items():
        hits = [o for o in rows[0]["aten_ops"] if o["op"] == op and o["shapes"] == shapes]
        if len(hits) != 1:
            raise SystemExit("%s: expected one %s %s in %s %s" % (profile_path, op, shapes, *LAYER_SAMPLE))
        per_call = hits[0]["self_device_us"] / hits[0]["calls"]
        out.append({"name": name, "bytes": nbytes, "time_us": round(per_call, 2),
                    "note": "%s; from %s (%s %s layer, %s)" % (NOTES[name], profile_path, *LAYER_SAMPLE,
                                                             profile["provenance"]["date"])})
    return out


def convert(measured, source_path, profile=None, profile_path=None):
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
    if profile is not None:
        kernels += layer_kernels(profile, profile_path)
    return {
        "schema": "trainsim.memory_bound_kernels/1",
        "description": "PyTorch's own memory-bound kernels (eager, unfused) on %s" % p["gpu"],
        "provenance": provenance,
        "kernels": kernels,
    }


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit("usage: make_memory_bound_kernels.py MEASURED_TORCH_OPS.json OUT.json [LAYER_PROFILE.json]")
    with open(sys.argv[1]) as f:
        measured = json.load(f)
    profile = None
    if len(sys.argv) == 4:
        with open(sys.argv[3]) as f:
            profile = json.load(f)
    out = convert(measured, sys.argv[1], profile, sys.argv[3] if profile else None)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The simulator's isolated MPT layer beside the block measured by measure_mpt_block.py.

For every measured shape it simulates llm-foundry's H100 scenario (scenarios/llmfoundry-fsdp-h100.json:
module_kernels "mpt", amp_bf16, FSDP mixed precision) on one H100 of the same node model, with no
other rank (so no collective runs beside the layer), no activation checkpointing, and the
attention kernel the measurement ran (PyTorch SDPA's cuDNN or flash backend: the profile's
"cudnn-attention" or "flash-attention-2", measured alone by measure_attention.py), and
reads each layer's forward and backward span off the trace. Printed per shape: measured and
simulated forward, backward and forward+backward (ms), and the error of the simulated step.
Nothing is fitted: the H100 profile's kernel rates were measured on the same GPU model and PyTorch
(validate/README.md), but never on this block.
  python3 validate/mpt_block_accuracy.py build/sim/trainsim validate/results/h100-mpt-block.json [--max-error PCT]"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "scenarios", "llmfoundry-fsdp-h100.json")
LAYERS = 3
# the measurement's SDPA backend -> the H100 profile's fused attention kernel measured for it
ATTENTION = {"cudnn": "cudnn-attention", "flash": "flash-attention-2"}


def one_gpu_topology(path):
    """The scenario's node with its accelerator 0 alone (its PCIe switch and NIC kept)."""
    doc = json.load(open(path))
    text = json.dumps(doc).replace("{0..7}", "{0..0}")
    doc = json.loads(text)
    node = doc["node"]
    node["links"] = [l for l in node["links"]
                     if not ("between" in l and any(v[-1].isdigit() and v[-1] != "0" for v in l["between"]))]
    doc["description"] = "one accelerator of " + doc["name"] + " (validate/mpt_block_accuracy.py)"
    # written elsewhere: the files it names, by absolute path
    base = os.path.dirname(os.path.abspath(path))
    doc["accelerator"]["device"] = os.path.join(base, doc["accelerator"]["device"])
    doc["collective_calibration"] = os.path.join(base, doc["collective_calibration"])
    return doc


def simulate(trainsim, shape, attention, scenario_doc, topology_path, tmp):
    d, heads, seq, mb = shape
    doc = json.loads(json.dumps(scenario_doc))
    doc["topology"] = topology_path
    doc["model"]["layers"] = LAYERS
    point = {"label": "block", "nodes": 1, "data_parallel_degree": 1,
             "model": {"hidden": d, "heads": heads, "seq_len": seq, "layers": LAYERS},
             "training": {"micro_batch": mb, "gradient_accumulation": 1, "activation_checkpointing": False,
                          "attention_kernel": ATTENTION[attention]}}
    doc["points"] = [point]
    scenario, trace = os.path.join(tmp, "scenario.json"), os.path.join(tmp, "trace.json")
    with open(scenario, "w") as fh:
        json.dump(doc, fh)
    run = subprocess.run([trainsim, "run", scenario, "--format", "json", "--no-wall-time", "--trace", trace],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError("trainsim failed on shape %s: %s" % (shape, run.stderr.strip()))
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    fwd = [e["dur"] / 1e3 for e in events if e.get("ph") == "X" and e["name"].startswith("forward layer ")]
    bwd = [e["dur"] / 1e3 for e in events if e.get("ph") == "X" and e["name"].startswith("backward layer ")]
    if len(fwd) != LAYERS or len(bwd) != LAYERS:
        raise RuntimeError("trace of shape %s: %d forward and %d backward layer spans, expected %d" %
                           (shape, len(fwd), len(bwd), LAYERS))
    # the middle layer: the first and last border the embedding and the head
    return fwd[LAYERS // 2], bwd[LAYERS // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trainsim")
    ap.add_argument("measured")
    ap.add_argument("--max-error", type=float, default=None,
                    help="exit 1 when a shape's simulated forward+backward is off by more (percent)")
    args = ap.parse_args()
    measured = json.load(open(args.measured))
    scenario_doc = json.load(open(SCENARIO))
    topo_path = os.path.normpath(os.path.join(os.path.dirname(SCENARIO), scenario_doc["topology"]))
    tmp = tempfile.mkdtemp(prefix="mpt_block_accuracy")
    topology = os.path.join(tmp, "topology.json")
    with open(topology, "w") as fh:
        json.dump(one_gpu_topology(topo_path), fh)
    prov = measured["provenance"]
    print("MPT block, measured on %s (driver %s, PyTorch %s, %s) against the simulator's isolated layer (ms)" %
          (prov["gpu"], prov["driver"], prov["torch"], prov["date"]))
    print("%-5s %6s %4s %6s %4s | %8s %8s %8s | %8s %8s %8s | %7s %7s %7s" %
          ("attn", "hidden", "head", "seq", "mb", "fwd", "bwd", "step", "sim fwd", "sim bwd", "sim stp", "fwd", "bwd", "step"))
    errors = {}
    try:
        for row in measured["shapes"]:
            if "error" in row:
                continue
            attention = row.get("attention", "cudnn")
            shape = (row["hidden"], row["heads"], row["seq_len"], row["micro_batch"])
            sf, sb = simulate(args.trainsim, shape, attention, scenario_doc, topology, tmp)
            mf, mb_, ms = row["forward_with_grad_ms"], row["backward_ms"], row["step_ms"]
            err = lambda s, m: (s - m) / m * 100
            errors.setdefault(attention, []).append(err(sf + sb, ms))
            print("%-5s %6d %4d %6d %4d | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f | %+6.1f%% %+6.1f%% %+6.1f%%" %
                  (attention, *shape, mf, mb_, ms, sf, sb, sf + sb, err(sf, mf), err(sb, mb_), errors[attention][-1]),
                  flush=True)
    finally:
        shutil.rmtree(tmp)
    worst = 0.0
    for attention, errs in errors.items():
        worst = max(worst, max(abs(e) for e in errs))
        print("%s: forward+backward mean |error| %.1f%%, mean %+.1f%%, max |error| %.1f%%, within 5%%: %d of %d" %
              (attention, sum(abs(e) for e in errs) / len(errs), sum(errs) / len(errs), max(abs(e) for e in errs),
               sum(1 for e in errs if abs(e) <= 5), len(errs)))
    if args.max_error is not None and worst > args.max_error:
        print("FAILED: a shape is off by %.1f%%, above --max-error %.1f%%" % (worst, args.max_error))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Fits the three fitted parameters of the dl1 hardware profile to the rows named in their
"fitted" entries, by bisection on the simulator's own output (trainsim run --format json):

  topologies/devices/gaudi1.json          /gemm_efficiency    <- dl1-bert-large-zero1 #1 instance
  topologies/devices/gaudi1.json          /launch_overhead    <- dl1-bert-1.5b-zero1  #1 instance
  topologies/calibration/dl1-hccl.json    /inter_node/bandwidth_efficiency <- dl1-bert-1.5b-zero1 #8 instances

Every other row of the two scenarios is a prediction. Usage: validate/fit_dl1.py [build/sim/trainsim]
Rewrites the two JSON files in place (values only) and prints the fitted values.
"""
import json
import subprocess
import sys

TRAINSIM = sys.argv[1] if len(sys.argv) > 1 else "build/sim/trainsim"
DEVICE = "topologies/devices/gaudi1.json"
COLL = "topologies/calibration/dl1-hccl.json"


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def throughput(scenario, nodes):
    out = subprocess.run([TRAINSIM, "run", scenario, "--format", "json", "--no-wall-time"],
                         check=True, capture_output=True, text=True).stdout
    for p in json.loads(out)["points"]:
        if p["nodes"] == nodes:
            return p["samples_per_s"], p["reference_samples_per_s"]
    raise SystemExit(f"no point with {nodes} nodes in {scenario}")


def bisect(set_value, lo, hi, scenario, nodes, increasing, iters=40):
    """Finds v in [lo, hi] where simulated throughput equals the reference."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        set_value(mid)
        sim, ref = throughput(scenario, nodes)
        if (sim < ref) == increasing:
            lo = mid
        else:
            hi = mid
    set_value((lo + hi) / 2)
    return (lo + hi) / 2


def set_gemm(v):
    d = load(DEVICE)
    d["gemm_efficiency"]["value"] = round(v, 6)
    save(DEVICE, d)


def set_launch(v):
    d = load(DEVICE)
    d["launch_overhead"]["value"] = f"{v:.3f}us"
    save(DEVICE, d)


def set_inter(v):
    c = load(COLL)
    c["inter_node"]["bandwidth_efficiency"] = round(v, 6)
    save(COLL, c)


def main():
    large = "scenarios/dl1-bert-large-zero1.json"
    big = "scenarios/dl1-bert-1.5b-zero1.json"
    # The two compute parameters interact; alternate until they settle.
    for _ in range(6):
        g = bisect(set_gemm, 0.05, 1.0, large, 1, increasing=True)
        l = bisect(set_launch, 0.0, 500.0, big, 1, increasing=False)
    b = bisect(set_inter, 0.005, 1.0, big, 8, increasing=True)
    print(f"gemm_efficiency={g:.6f} launch_overhead={l:.3f}us inter_node.bandwidth_efficiency={b:.6f}")


if __name__ == "__main__":
    main()

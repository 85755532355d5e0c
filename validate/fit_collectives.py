#!/usr/bin/env python3
"""Fits the fitted values of the NCCL fabric calibrations (topologies/calibration/nccl-*.json) to
the reference rows named in their "fitted" entries, by bisection on the simulator's own output
(trainsim collective --compare FILE --format json). At most 3 values per fabric:

  nccl-nvswitch-a100.json  /efficiency/ring, /step_latency/Simple, /simple_chunk/value
                           <- azure-nd-a100-v4 all_reduce 1 node at 8 GiB, 1 MiB, 64 MiB
  nccl-nvswitch-h100.json  /efficiency/nvls, /nvls_latency/value, /simple_chunk/value
                           <- azure-nd-h100-v5 all_reduce 1 node at 8 GiB, 1 MiB, 64 MiB
  nccl-efa.json            /efficiency/tree <- awsome p5 2 nodes 8 GiB
                           /efficiency/ring <- crazyguitar p5 all_reduce 8 nodes 8 GiB
                           /ll128_efficiency/value <- crazyguitar p5 all_reduce 8 nodes 2 GiB
                           (ring LL128, chosen there by aws-ofi-nccl's region tuner)

The values interact (latency and chunk both shape the middle of a curve), so the script sweeps
them in turn a few times (coordinate descent). Every other reference row is a prediction.
Usage: validate/fit_collectives.py [build/sim/trainsim]   (from the repository root)
Rewrites the fabric files in place (values only) and prints the fitted values.
"""
import json
import re
import subprocess
import sys
from collections import namedtuple

TRAINSIM = sys.argv[1] if len(sys.argv) > 1 else "build/sim/trainsim"
CAL = "topologies/calibration/"
REF = "validate/reference/"
GIB, MIB = 1 << 30, 1 << 20

# One fitted value: where it is (fabric file, JSON path, the unit its string carries, "" for a
# bare number), its bisection range [lo, hi], whether busbw rises with it, and the reference row
# it is fitted to (topology, reference file, op, nodes, size).
Fit = namedtuple("Fit", "fabric path unit lo hi rising topology reference op nodes size")


def all_reduce_fits(fabric, topology, rows):
    """The fits of one fabric file, all to all_reduce rows measured on `topology`; a row is
    (path, unit, lo, hi, rising, reference, nodes, size)."""
    return [Fit(fabric, path, unit, lo, hi, rising, topology, reference, "all_reduce", nodes, size)
            for path, unit, lo, hi, rising, reference, nodes, size in rows]


FITS = {
    "a100": all_reduce_fits("nccl-nvswitch-a100.json", "p4de.24xlarge", [
        (["efficiency", "ring"], "", 0.3, 1.0, True, "azure-nd-a100-v4", 1, 8 * GIB),
        (["step_latency", "Simple"], "us", 0.0, 20.0, False, "azure-nd-a100-v4", 1, MIB),
        (["simple_chunk", "value"], "MB", 0.05, 40.0, False, "azure-nd-a100-v4", 1, 64 * MIB),
    ]),
    "h100": all_reduce_fits("nccl-nvswitch-h100.json", "p5.48xlarge", [
        (["efficiency", "nvls"], "", 0.3, 1.0, True, "azure-nd-h100-v5", 1, 8 * GIB),
        (["nvls_latency", "value"], "us", 0.0, 60.0, False, "azure-nd-h100-v5", 1, MIB),
        (["simple_chunk", "value"], "MB", 0.05, 60.0, False, "azure-nd-h100-v5", 1, 64 * MIB),
    ]),
    "efa": all_reduce_fits("nccl-efa.json", "p5.48xlarge", [
        (["efficiency", "tree"], "", 0.2, 1.0, True, "awsome-p5-2node-all-reduce", 2, 8 * GIB),
        (["efficiency", "ring"], "", 0.3, 1.0, True, "crazyguitar-p5-scaling", 8, 8 * GIB),
        (["ll128_efficiency", "value"], "", 0.3, 1.0, True, "crazyguitar-p5-scaling", 8, 2 * GIB),
    ]),
}


def set_value(fabric, path, unit, v):
    """Rewrites one value in place, keeping the file's layout."""
    text = open(CAL + fabric).read()
    doc = json.loads(text)
    node = doc
    for k in path[:-1]:
        node = node[k]
    old = node[path[-1]]
    new = round(v, 4) if unit == "" else f"{round(v, 3):g}{unit}"
    node[path[-1]] = new
    key = json.dumps(path[-1])
    pattern = re.escape(key) + r"\s*:\s*" + re.escape(json.dumps(old))
    text, n = re.subn(pattern, f"{key}: {json.dumps(new)}", text, count=1)
    assert n == 1, (fabric, path)
    open(CAL + fabric, "w").write(text)


def busbw(topology, ref, op, nodes, size):
    out = subprocess.run([TRAINSIM, "collective", "--topology", f"topologies/{topology}.json",
                          "--compare", REF + ref + ".json", "--op", op, "--nodes", str(nodes),
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    for r in json.loads(out)["rows"]:
        if r["size_bytes"] == size:
            return r["busbw_gbps"], r["reference_busbw_gbps"]
    raise SystemExit(f"no row {op} {nodes} {size} in {ref}")


def bisect(fit, iters=30):
    fabric, path, unit, lo, hi, rising, topo, ref, op, nodes, size = fit
    for _ in range(iters):
        mid = (lo + hi) / 2
        set_value(fabric, path, unit, mid)
        sim, meas = busbw(topo, ref, op, nodes, size)
        if (sim < meas) == rising:
            lo = mid
        else:
            hi = mid
    set_value(fabric, path, unit, (lo + hi) / 2)
    return (lo + hi) / 2


def main():
    fabrics = sys.argv[2:] or list(FITS)
    for name in fabrics:
        for _ in range(3):
            values = [bisect(f) for f in FITS[name]]
        for f, v in zip(FITS[name], values):
            print(f"{f.fabric} /{'/'.join(f.path)} = {v:.4g}{f.unit}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints issue 4's collective error table: busbw error of `trainsim collective --compare` on
every reference curve of validate/reference/, per fabric and per size band, on the points not
used for fitting (the calibration files name those; `trainsim` marks them "fitted").

Error of a point = |ln(simulated busbw / measured busbw)|; a band's figure is the geometric mean
over its points, exp(mean) - 1, as `trainsim collective --compare` prints it for one curve.
Usage: validate/collective_errors.py [build/sim/trainsim] [--points]   (from the repository root)
--points also lists every point (simulated, measured, error, algorithm/protocol).
"""
import json
import math
import subprocess
import sys

TRAINSIM = next((a for a in sys.argv[1:] if not a.startswith("--")), "build/sim/trainsim")
SHOW_POINTS = "--points" in sys.argv
REF = "validate/reference/"
MIB = 1 << 20

# (fabric, reference file, nodes kept (None: all), split the rows by op)
FABRICS = [
    ("A100 NVSwitch (Azure ND A100 v4, p4de)", "azure-nd-a100-v4", None, False),
    ("A100 NVSwitch (p4d 1 node, nccl#527)", "nccl527-p4d", [1], False),
    ("H100 NVSwitch (Azure ND H100 v5, p5)", "azure-nd-h100-v5", None, False),
    ("EFA, p5 2 nodes (awsome, full curve)", "awsome-p5-2node-all-reduce", None, False),
    ("EFA, p5 2/4/8 nodes, all three ops (crazyguitar)", "crazyguitar-p5-scaling", None, True),
    ("EFA, p4d 2 nodes (nccl#527)", "nccl527-p4d", [2], False),
    ("HDR IB, DGX A100 1 and 8 nodes (nccl-tests#175, nccl#812)", "dgx-a100-ib", None, False),
]
BANDS = [("1-16 MiB", MIB, 16 * MIB), ("16-256 MiB", 16 * MIB, 256 * MIB),
         (">= 256 MiB", 256 * MIB, math.inf), ("all >= 1 MiB", MIB, math.inf)]


def simulate(ref):
    topology = json.load(open(REF + ref + ".json"))["topology"]
    out = subprocess.run([TRAINSIM, "collective", "--topology", f"topologies/{topology}.json",
                          "--compare", REF + ref + ".json", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["rows"]


def band_cells(rows):
    cells = []
    for _, lo, hi in BANDS:
        errs = [abs(math.log(r["busbw_gbps"] / r["reference_busbw_gbps"])) for r in rows
                if lo <= r["size_bytes"] < hi and not r["fitted"]]
        cells.append(f"{100 * (math.exp(sum(errs) / len(errs)) - 1):.1f}% ({len(errs)})"
                     if errs else "")
    return cells


def main():
    cache = {}
    print("| fabric (reference) | " + " | ".join(b[0] for b in BANDS) + " | fitted rows |")
    print("|---" * (len(BANDS) + 2) + "|")
    listing = []
    for name, ref, nodes, by_op in FABRICS:
        if ref not in cache:
            cache[ref] = simulate(ref)
        rows = [r for r in cache[ref] if "reference_busbw_gbps" in r
                and (nodes is None or r["nodes"] in nodes)]
        fitted = ", ".join(f"{r['op']} {r['nodes']} nodes {size_label(r['size_bytes'])}"
                           for r in rows if r["fitted"])
        print(f"| {name} | " + " | ".join(band_cells(rows)) + f" | {fitted} |")
        if by_op:
            for op in sorted({r["op"] for r in rows}):
                print(f"| - of which {op} | " +
                      " | ".join(band_cells([r for r in rows if r["op"] == op])) + " | |")
        listing += [(name, r) for r in rows]
    if SHOW_POINTS:
        print()
        for name, r in listing:
            err = 100 * (r["busbw_gbps"] / r["reference_busbw_gbps"] - 1)
            print(f"{ref_short(name):28s} {r['op']:10s} {r['nodes']:2d}n {int(r['size_bytes']):>12d} "
                  f"sim {r['busbw_gbps']:8.2f} ref {r['reference_busbw_gbps']:8.2f} "
                  f"{err:+7.1f}% {r['algorithm']}/{r['protocol']}{' fitted' if r['fitted'] else ''}")


def size_label(size):
    size = int(size)
    return f"{size >> 30}G" if size >= 1 << 30 else f"{size >> 20}M"


def ref_short(name):
    return name.split(" (")[0]


if __name__ == "__main__":
    main()

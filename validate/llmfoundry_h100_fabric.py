#!/usr/bin/env python3
"""How much do the llm-foundry H100 rows depend on the unstated inter-node fabric? Runs the
multi-node rows of scenarios/llmfoundry-fsdp-h100.json on the assumed 8 x 400 Gb/s per node
(topologies/mosaicml-h100-ib.json) and on the A100 cluster's 1600 Gbps
(topologies/mosaicml-h100-ib-1600g.json), and prints reference, both predictions and errors.
  python3 validate/llmfoundry_h100_fabric.py [--trainsim build/sim/trainsim]"""
import argparse
import json
import os
import subprocess
import tempfile

FABRICS = [("3200 Gbps (assumed)", "mosaicml-h100-ib.json"), ("1600 Gbps", "mosaicml-h100-ib-1600g.json")]


def run(trainsim, spec, topology):
    """The predicted TFLOP/s per GPU by label, every point on `topology`."""
    doc = json.loads(json.dumps(spec))
    doc["topology"] = topology
    doc["points"] = [p for p in doc["points"] if p["nodes"] > 1]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(doc, fh)
    try:
        out = subprocess.run([trainsim, "run", fh.name, "--format", "json", "--no-wall-time"],
                             capture_output=True, text=True, check=True)
    finally:
        os.unlink(fh.name)
    return {p["label"]: p for p in json.loads(out.stdout)["points"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", default="build/sim/trainsim")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = json.load(open(os.path.join(root, "scenarios/llmfoundry-fsdp-h100.json")))
    results = [run(args.trainsim, spec, os.path.join(root, "topologies", f)) for _, f in FABRICS]
    print("| row | reference TFLOP/s | " + " | ".join(f"{n}: predicted, error" for n, _ in FABRICS) + " |")
    print("|---|---|" + "---|" * len(FABRICS))
    for label, first in results[0].items():
        cells = []
        for r in results:
            p = r[label]
            cells.append("%.1f, %+.1f%%" % (p["tflops_per_accelerator"], p["error_pct"]))
        print("| %s | %.1f | %s |" % (label, first["reference_tflops_per_accelerator"], " | ".join(cells)))


if __name__ == "__main__":
    main()

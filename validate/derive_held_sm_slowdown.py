#!/usr/bin/env python3
"""Derives the H100 device profile's "held_sm_slowdown" (topologies/devices/h100-80gb.json) from
validate/results/h100-mpt-block-by-class.json, section "interference_by_class": an MPT block's
forward+backward kernels (validate/measure_mpt_block.py) alone and beside a side kernel of K CTAs
x 512 threads that spins on the clock and touches no memory (standing for a NCCL kernel's resident
thread blocks), device time per kernel class from the torch profiler.

Derivation (no fitting to any training row):
  * arithmetic time of a shape at K = its "gemm" + "attention" class times;
  * slowdown of a shape at K = arithmetic(K) / arithmetic(0);
  * the profile's point at K = the mean of the shapes' slowdowns (their spread printed beside);
  * the memory-bound classes (elementwise, reduction, copy) are printed to show they are not
    slowed (the engine's assumption: memory-bound compute ignores held SMs).
Prints the table and the profile's "points" array."""
import argparse
import json

ARITHMETIC = ("gemm", "attention")
MEMORY_BOUND = ("elementwise", "reduction", "copy")
SM_COUNT = 132  # H100 SXM (the profile's sm_count)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="validate/results/h100-mpt-block-by-class.json")
    args = ap.parse_args()
    with open(args.results) as f:
        shapes = json.load(f)["interference_by_class"]

    def total(row, classes):
        return sum(row["classes_us"][c] for c in classes)

    by_k = {}
    for s in shapes:
        base = {r["ctas"]: r for r in s["rows"]}[0]
        label = f"d{s['hidden']}"
        for r in s["rows"]:
            if r["ctas"] == 0:
                continue
            k = by_k.setdefault(r["ctas"], {"arith": {}, "memory": {}})
            k["arith"][label] = total(r, ARITHMETIC) / total(base, ARITHMETIC)
            k["memory"][label] = total(r, MEMORY_BOUND) / total(base, MEMORY_BOUND)

    labels = [f"d{s['hidden']}" for s in shapes]
    print("| K | " + " | ".join(f"{l} arith" for l in labels) + " | mean | spread | proportional "
          f"{SM_COUNT}/({SM_COUNT}-K) | " + " | ".join(f"{l} memory-bound" for l in labels) + " |")
    points = []
    for k in sorted(by_k):
        a = [by_k[k]["arith"][l] for l in labels]
        mean = sum(a) / len(a)
        points.append({"sms": k, "slowdown": round(mean, 3)})
        print(f"| {k} | " + " | ".join(f"{x:.3f}" for x in a) + f" | {mean:.3f} | {max(a) - min(a):.3f} | "
              f"{SM_COUNT / (SM_COUNT - k):.3f} | " + " | ".join(f"{by_k[k]['memory'][l]:.3f}" for l in labels) + " |")
    print(json.dumps(points))


if __name__ == "__main__":
    main()

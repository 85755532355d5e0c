#!/usr/bin/env python3
"""How close is trainsim to each of llm-foundry's MPT throughput tables? Runs
scenarios/llmfoundry-fsdp-{a100,h100}.json and prints, per table (A100 40GB, A100 80GB, H100 BF16,
H100 FP8, H100 BF16 Large Scale's FULL_SHARD and SHARD_GRAD_OP rows): rows, mean |error|, signed mean, rows within 5%
and 10%, the worst rows, and the rows that retry in the caching allocator or do not fit. A row's
error is the simulated samples/s against the measured tokens/s (as samples/s), positive when
trainsim predicts faster. --halving checks the
memory model against Composer's 'auto' micro-batch on the A100 40GB rows (validate/ACCURACY.md, llm-foundry).
validate/ACCURACY.md's llm-foundry sections quote it.
  python3 validate/llmfoundry_tables_accuracy.py [--trainsim build/sim/trainsim] [--worst N] [--by-model] [--halving]"""
import argparse
import json
import os

from trainsim_runs import run, run_with_points

# Label prefixes written by make_llmfoundry_scenarios.py, longest first.
TABLES = [("H100 large-scale ", "H100 80GB BF16 Large Scale"), ("H100 FP8 ", "H100 80GB FP8"), ("H100 ", "H100 80GB BF16"),
          ("40GB ", "A100 40GB"), ("80GB ", "A100 80GB")]


def table_of(label):
    return next(name for prefix, name in TABLES if label.startswith(prefix))


def halving_check(trainsim, root):
    """The 2023-05 submit_benchmarks.py asks Composer for micro-batch 'auto' unless one is given,
    which halves the per-device batch after each OOM: a 40GB row whose accumulation is a power of
    two above 1 could be such a halving, so twice its micro-batch would not have fit on the real
    GPU. A hint, not a proof: that commit's sweep.sh (300cc5c58) passes --microbatch_size for every
    40GB row, hand-set values equal to the table's on 74 of its 78 rows, so twice a row's
    micro-batch did not fit only if the sweep's author chose the largest that did. Prints the rows
    trainsim judges to fit at twice the micro-batch."""
    path = os.path.join(root, "scenarios", "llmfoundry-fsdp-a100.json")
    doc = json.load(open(path))
    rows = [p for p in doc["points"] if p["label"].startswith("40GB ") and p["training"]["gradient_accumulation"] > 1
            and p["training"]["gradient_accumulation"] & (p["training"]["gradient_accumulation"] - 1) == 0]
    doubled = json.loads(json.dumps(rows))
    for p in doubled:
        p["training"]["micro_batch"] *= 2
        p["training"]["gradient_accumulation"] //= 2
    out = run_with_points(trainsim, path, doubled)
    fits = [f"{p['label']} (micro-batch {q['training']['micro_batch']}: {p['memory']['peak_bytes'] / 2**30:.1f} GiB)"
            for p, q in zip(out, doubled) if p["status"] == "simulated"]
    print(f"\nA100 40GB: {len(rows)} rows may be 'auto' halvings; at twice the micro-batch {len(rows) - len(fits)} do not fit "
          f"in trainsim memory, {len(fits)} do: " + "; ".join(fits))


def summary_line(name, errors):
    a = [abs(e) for e in errors]
    return ("| %s | %d | %.1f%% | %+.1f%% | %.1f%% | %d | %d |" %
            (name, len(a), sum(a) / len(a), sum(errors) / len(errors), max(a), sum(x <= 5 for x in a), sum(x <= 10 for x in a)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", default="build/sim/trainsim")
    ap.add_argument("--worst", type=int, default=5, help="worst rows listed per table")
    ap.add_argument("--by-model", action="store_true", help="also the signed mean per table and model")
    ap.add_argument("--halving", action="store_true", help="also the 40GB rows' micro-batch at twice its size")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    points = []
    for name in ("llmfoundry-fsdp-a100", "llmfoundry-fsdp-h100"):
        points += run(args.trainsim, os.path.join(root, "scenarios", name + ".json"))
    by_table = {name: [p for p in points if table_of(p["label"]) == name] for _, name in TABLES}
    order = ["A100 40GB", "A100 80GB", "H100 80GB BF16", "H100 80GB FP8", "H100 80GB BF16 Large Scale"]
    print("| table | rows | mean abs error | signed mean | max abs error | within 5% | within 10% |")
    print("|---|---|---|---|---|---|---|")
    for name in order:
        print(summary_line(name, [p["error_pct"] for p in by_table[name] if p["status"] == "simulated"]))
    for name in order:
        rows = by_table[name]
        worst = sorted((p for p in rows if p["status"] == "simulated"), key=lambda p: -abs(p["error_pct"]))[:args.worst]
        print(f"\n{name}: worst rows: " + "; ".join(f"{p['label']} {p['error_pct']:+.1f}%" for p in worst))
        not_fit = [p["label"] for p in rows if p["status"] != "simulated" or not p["memory"]["fits"]]
        retries = [f"{p['label']} ({p['memory']['allocator_retries']})" for p in rows
                   if p["status"] == "simulated" and p["memory"].get("allocator_retries", 0) > 0]
        print(f"{name}: not fitting: {not_fit or 'none'}; allocator retries per step: {retries or 'none'}")
        if args.by_model:
            models = sorted({p["label"].split(" seq")[0] for p in rows})
            for m in models:
                e = [p["error_pct"] for p in rows if p["label"].split(" seq")[0] == m and p["status"] == "simulated"]
                print(f"  {m}: {len(e)} rows, signed mean {sum(e) / len(e):+.1f}%, range {min(e):+.1f}..{max(e):+.1f}%")
    if args.halving:
        halving_check(args.trainsim, root)


if __name__ == "__main__":
    main()

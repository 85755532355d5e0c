#!/usr/bin/env python3
"""Did the amp_bf16 / DEFAULT stack slow llm-foundry's A100 80GB rows? Compares the two
measurements the 80GB table has had of the same configurations: the 2023-05 table (300cc5c58,
86 rows: Composer 0.13.4, PyTorch 1.13.1, precision "bf16", FSDP mixed_precision PURE) and the
2023-10 one that replaced it (b2a43a147, 61 rows: Composer 0.16, PyTorch 2.1.0, amp_bf16,
DEFAULT), matched on model, seq, GPUs, micro-batch and accumulation. Both ran under
torch.autocast(bf16): Composer 0.13.4 maps "bf16" to Precision.AMP_BF16 (trainer.py:357-372,
_get_backwards_compatible_precision). With --trainsim it also runs the 2023-05 rows as scenario
points (gradient_dtype bf16, the rest as scenarios/llmfoundry-fsdp-a100.json) and prints trainsim's
error against each measurement. Run from the repository root:
  python3 validate/llmfoundry_80gb_stacks.py [--trainsim build/sim/trainsim]"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmfoundry_tables as tables  # noqa: E402
import make_llmfoundry_scenarios as scenarios  # noqa: E402
from trainsim_runs import run, run_with_points  # noqa: E402

SCENARIO = os.path.join("scenarios", "llmfoundry-fsdp-a100.json")


def key(r):
    return (r.model, r.seq, r.gpus, r.micro_batch, r.accumulation)


def matched_rows():
    """(2023-05 row, 2023-10 row) for every configuration both tables measured, after checking
    every 2023-05 row against the table's arithmetic and llm-foundry's MFU/HFU formula."""
    for r in tables.A80_2023_05:
        scenarios.check_row(r, "A80_2023_05", 312)
    old = {}
    for r in tables.A80_2023_05:
        if key(r) in old:
            raise SystemExit(f"llmfoundry_80gb_stacks.py: A80_2023_05: two rows share {key(r)}")
        old[key(r)] = r
    # The 2023-10 table kept the two 70B rows of 2023-05 (bf16 / PURE): one measurement, not two.
    return [(old[key(r)], r) for r in tables.A80 if key(r) in old and r.precision == "amp_bf16"]


def simulated_errors(trainsim, pairs):
    """trainsim's samples/s error (%) against the 2023-05 and the 2023-10 measurement, per pair."""
    new_errors = {p["label"]: p for p in run(trainsim, SCENARIO) if p["label"].startswith("80GB ")}
    old_points = []
    for label, o in scenarios.labelled("80GB 2023-05 ", [o for o, _ in pairs]):
        p, _ = scenarios.point(label, o, 312, "2023-05 bf16 / PURE", topology="../topologies/mosaicml-a100-80g-roce.json")
        old_points.append(p)
    old_out = run_with_points(trainsim, SCENARIO, old_points)
    # The scenario's labels: make_llmfoundry_scenarios.py's order decides which of two rows sharing
    # model, seq and GPUs gets its micro-batch appended.
    new_labels = {key(r): label for label, r in scenarios.labelled("80GB ", scenarios.ordered(tables.A80, "A80"))}
    return [(o["error_pct"], new_errors[new_labels[key(n)]]["error_pct"]) for o, (_, n) in zip(old_out, pairs)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", help="also trainsim's error against both measurements")
    args = ap.parse_args()
    pairs = matched_rows()
    errors = simulated_errors(args.trainsim, pairs) if args.trainsim else None
    print("| row (micro-batch x accumulation) | 2023-05 tokens/s/GPU | 2023-10 | change |"
          + (" trainsim vs 2023-05 | vs 2023-10 |" if errors else ""))
    print("|---|---|---|---|" + ("---|---|" if errors else ""))
    change = [n.tokens_per_s_per_gpu / o.tokens_per_s_per_gpu - 1 for o, n in pairs]
    for i, (o, n) in enumerate(pairs):
        line = (f"| {n.model} seq {n.seq} x {n.gpus} ({n.micro_batch} x {n.accumulation}) | {o.tokens_per_s_per_gpu} | "
                f"{n.tokens_per_s_per_gpu} | {change[i]:+.1%} |")
        if errors:
            line += f" {errors[i][0]:+.1f}% | {errors[i][1]:+.1f}% |"
        print(line)
    print(f"\n{len(pairs)} configurations measured twice ({len(tables.A80_2023_05)} rows in 2023-05, {len(tables.A80)} in 2023-10, "
          "of which the two 70B rows are 2023-05's); "
          f"2023-10 against 2023-05: median {statistics.median(change):+.1%}, mean {statistics.mean(change):+.1%}")
    for model in dict.fromkeys(o.model for o, _ in pairs):
        c = [x for x, (o, _) in zip(change, pairs) if o.model == model]
        print(f"  {model}: {len(c)} rows, median {statistics.median(c):+.1%}, range {min(c):+.1%}..{max(c):+.1%}")
    if errors:
        for which, e in (("2023-05", [a for a, _ in errors]), ("2023-10", [b for _, b in errors])):
            print(f"trainsim against the {which} measurements of these rows: mean |error| "
                  f"{statistics.mean(abs(x) for x in e):.1f}%, signed {statistics.mean(e):+.1f}%, max {max(abs(x) for x in e):.1f}%")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How close is trainsim to the published measurements, scenario by scenario? Runs
`trainsim run SCENARIO --format json --no-wall-time` on each scenario that has references and prints
one markdown table: non-fitted rows, mean and max |error|, rows within 5% and 10%, and the fitted
rows apart (they were used to fit a parameter, so their error says nothing about prediction).
A row's error is that of the reference the scenario gives: samples/s where given, else TFLOP/s per
accelerator. Rows whose note calls the reference weak are counted apart too, and so are lower bounds
(`reference_tflops_per_accelerator_at_least`: a source's "more than X"), listed as meets / misses.
  python3 validate/accuracy_summary.py [--trainsim build/sim/trainsim] [--rows] [SCENARIO ...]"""
import argparse
import glob
import json
import subprocess
import sys


def row_error(point):
    """(error %, what was compared) of one simulated point as trainsim's report computes it, or
    None without a reference."""
    if point.get("error_pct") is not None:
        return point["error_pct"], "samples/s"
    if point.get("tflops_error_pct") is not None:
        return point["tflops_error_pct"], "TFLOP/s"
    return None


def bound_text(point):
    """'meets (+21.0%)' or 'misses by 4.3%', as trainsim's table prints a lower bound."""
    margin = point["tflops_bound_margin_pct"]
    return "meets (%+.1f%%)" % margin if point["tflops_bound_verdict"] == "meets" else "misses by %.1f%%" % -margin


def is_weak(scenario_point):
    return "WEAK REFERENCE" in scenario_point.get("note", "")


def summarise(name, errors):
    absolute = [abs(e) for e in errors]
    n = len(absolute)
    return ("| %s | %d | %.1f%% | %.1f%% | %d | %d |" %
            (name, n, sum(absolute) / n, max(absolute), sum(a <= 5 for a in absolute),
             sum(a <= 10 for a in absolute)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", default="build/sim/trainsim")
    ap.add_argument("--rows", action="store_true", help="also list every row")
    ap.add_argument("scenarios", nargs="*")
    args = ap.parse_args()
    paths = args.scenarios or sorted(glob.glob("scenarios/*.json"))
    table, rows, everything = [], [], []
    fitted_count = weak_count = bound_count = bound_met = 0
    for path in paths:
        with open(path) as fh:
            spec = json.load(fh)
        labels_weak = {p.get("label"): is_weak(p) for p in spec.get("points", [])}
        has_reference = any(k.startswith("reference_") for p in spec.get("points", []) for k in p)
        if not has_reference:
            continue
        out = subprocess.run([args.trainsim, "run", path, "--format", "json", "--no-wall-time"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print("accuracy_summary: %s failed: %s" % (path, out.stderr.strip()), file=sys.stderr)
            return 1
        errors = []
        bounds = met = 0
        for point in json.loads(out.stdout)["points"]:
            if point.get("tflops_bound_verdict") is not None:
                bounds += 1
                met += point["tflops_bound_verdict"] == "meets"
                rows.append("| %s | %s | TFLOP/s >= %g | %s | bound |" %
                            (spec.get("name", path), point["label"], point["reference_tflops_per_accelerator_at_least"],
                             bound_text(point)))
            got = row_error(point)
            if got is None:
                continue
            error, what = got
            kind = "fitted" if point.get("fitted") else "weak" if labels_weak.get(point["label"]) else ""
            rows.append("| %s | %s | %s | %+.1f%% | %s |" % (spec.get("name", path), point["label"], what, error, kind))
            if kind == "fitted":
                fitted_count += 1
            elif kind == "weak":
                weak_count += 1
            else:
                errors.append(error)
        if errors:
            table.append(summarise(spec.get("name", path), errors))
            everything += errors
        elif bounds:
            table.append("| %s | 0 (bounds: %d of %d met) | - | - | - | - |" % (spec.get("name", path), met, bounds))
        bound_count += bounds
        bound_met += met
    print("| scenario | non-fitted rows | mean abs error | max abs error | within 5% | within 10% |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
    if everything:
        print(summarise("**all**", everything))
    print("\nFitted rows (not counted): %d. Weak references (not counted): %d. Lower bounds (not counted): %d, %d met."
          % (fitted_count, weak_count, bound_count, bound_met))
    if args.rows:
        print("\n| scenario | row | compared | error | |\n|---|---|---|---|---|")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Simulated pass times against the zero-bubble paper's own profile of them.

The paper's runtime times every F, B and W pass of its first iterations between two
torch.cuda.synchronize() (megatron/timers.py Timer, zb_schedules.py ScheduleTimers) and builds
its schedule from the medians. Its schedule generator lists the profiled values of its runs
(sail-sg/zero-bubble-pipeline-parallelism 678c9996, megatron/core/pipeline_parallel/
v_schedule.py, __main__'s `settings`: stages, micro-batches, F, B, W and communication in us,
hidden size, heads, layers): the ZB-V runs of the arXiv version's Table 6 (one layer per model
chunk) and, commented out there, runs of Table 4's settings (a stage of 3 / 4 / 3 / 2 layers).
This script runs the matching points of scenarios/zero-bubble-a100.json with a trace of one
middle stage and prints the simulated pass times beside the profiled ones: what a pass costs,
apart from the schedule around it.

    python3 validate/zero_bubble_pass_times.py build/sim/trainsim
"""
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

SCENARIO = "scenarios/zero-bubble-a100.json"

# (point label, layers a profiled pass covers, profiled F, B, W in us, the setting as listed)
PROFILED = [
    ("1.5B ZB-H1 24 micro-batches", 3, (18522, 18086, 9337), "(8, 24, 18522, 18086, 9337, 601, 2304, 24, 24)"),
    ("6.2B ZB-H1 24 micro-batches", 4, (29718, 29444, 19927), "(8, 24, 29718, 29444, 19927, 527, 4096, 32, 32)"),
    ("14.6B ZB-H1 48 micro-batches", 3, (11347, 11248, 8132), "(16, 48, 11347, 11248, 8132, 377, 5120, 40, 48)"),
    ("28.3B ZB-H1 96 micro-batches", 2, (10419, 10207, 7715), "(32, 96, 10419, 10207, 7715, 408, 6144, 48, 64)"),
    ("6.2B 16 GPUs b6 ZB-V 48 micro-batches", 1, (14407, 14380, 9676), "(16, 48, 14407, 14380, 9676, 1610, 4096, 32, 32)"),
    ("14.6B 24 GPUs b2 ZB-V 72 micro-batches", 1, (6763, 6969, 5251), "(24, 72, 6763, 6969, 5251, 755, 5120, 40, 48)"),
    ("28.3B 32 GPUs b2 ZB-V 96 micro-batches", 1, (9458, 9748, 7288), "(32, 96, 9458, 9748, 7288, 879, 6144, 48, 64)"),
]
TRACED_RANK = 3  # a middle stage: whole layers in every chunk


def simulated_passes(trainsim, scenario, label):
    """Median simulated F, B (input gradients) and W of one micro-batch on the traced stage, in ms,
    per pass as the profile times it: a model chunk's layers together."""
    doc = dict(scenario)
    doc["points"] = [p for p in scenario["points"] if p["label"] == label]
    if not doc["points"]:
        sys.exit(f"no point {label!r} in {SCENARIO}")
    with tempfile.TemporaryDirectory() as tmp:
        # Beside the shipped scenario, so that its relative topology path resolves.
        path = os.path.join("scenarios", f".pass-times-{os.getpid()}.json")
        trace = os.path.join(tmp, "trace.json")
        try:
            with open(path, "w") as f:
                json.dump(doc, f)
            subprocess.run([trainsim, "run", path, "--trace", trace, "--trace-ranks", str(TRACED_RANK)],
                           check=True, capture_output=True)
        finally:
            os.remove(path)
        with open(trace) as f:
            events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    # Sum each (pass, micro-batch, chunk)'s layer tasks.
    passes = collections.defaultdict(float)
    for e in events:
        if e.get("ph") != "X":
            continue
        name = e.get("name", "")
        for kind in ("forward", "backward", "weight gradient"):
            if name.startswith(kind + " mb") and " layer " in name:
                key = name[: name.index(" layer ")]
                passes[(kind, key)] += e["dur"] / 1000.0
    by_kind = {k: [v for (kind, _), v in passes.items() if kind == k] for k in ("forward", "backward", "weight gradient")}
    split = {key for (kind, key) in passes if kind == "weight gradient"}
    # A split backward is B alone; an unsplit one (ZB-H1's other backwards) B + W.
    inputs = [v for (kind, key), v in passes.items()
              if kind == "backward" and key.replace("backward", "weight gradient") in split]
    return statistics.median(by_kind["forward"]), statistics.median(inputs), statistics.median(by_kind["weight gradient"])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    trainsim = sys.argv[1]
    with open(SCENARIO) as f:
        scenario = json.load(f)
    print("| point (profiled setting) | layers a pass | F profiled -> simulated (ms) | B | W | F + B + W |")
    print("|---|---|---|---|---|---|")
    for label, layers, profiled, setting in PROFILED:
        sim = simulated_passes(trainsim, scenario, label)
        prof = [p / 1000.0 for p in profiled]
        cells = [f"{p:.2f} -> {s:.2f} ({(s / p - 1) * 100:+.1f}%)" for p, s in zip(prof, sim)]
        total_p, total_s = sum(prof), sum(sim)
        cells.append(f"{total_p:.2f} -> {total_s:.2f} ({(total_s / total_p - 1) * 100:+.1f}%)")
        print(f"| {label} `{setting}` | {layers} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

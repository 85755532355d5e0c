#!/usr/bin/env python3
"""Robustness sweep: variants of the shipped scenarios through `trainsim run` and `trainsim memory`.

Each variant is one shipped scenario cut to one small point, with one or two fields changed to
values the readers accept (or deliberately do not: bad-input cases). Every result is checked:
exit 0 with finite, non-negative numbers and TFLOP/s per accelerator under the device's peak, or
exit 2 with one `trainsim: error:` line naming the file and a JSON path; never a crash, an
internal error (exit 1), an abort, a hang, or output that differs between two identical runs.

Deterministic: the variants depend on --seed only. Prints one line per finding and a summary;
exit status 1 when anything was found. Failing variants are kept under --keep DIR.
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPOLOGIES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "topologies", "*.json")))
# Output that only a crash or an escaped invariant prints.
CRASH_TEXT = re.compile(r"terminate called|Assertion|xbt_die|Backtrace|backtrace|Segmentation|core dumped|"
                        r"Aborted|what\(\):|std::bad_alloc|out_of_range|type_error|stack smashing")

TINY_MODEL = {"layers": 1, "hidden": 64, "heads": 1, "ffn_hidden": 256, "vocab": 128, "seq_len": 128}
# About 1T parameters: 128 layers of hidden 25600 (12 h^2 per layer).
HUGE_MODEL = {"layers": 128, "hidden": 25600, "heads": 160, "ffn_hidden": 102400, "vocab": 51200, "seq_len": 2048}


def training(d):
    return d["training"]


def set_training(key, value):
    return (f"training.{key}={value}", lambda d: training(d).__setitem__(key, value))


def context_parallel(k, **extra):
    """context_parallel k with other training keys set together (the exchange, recompute)."""
    def apply(d):
        training(d)["context_parallel"] = k
        for key, value in extra.items():
            training(d)[key] = value
    return (f"training.context_parallel={k}" + "".join(f",{key}={value}" for key, value in extra.items()), apply)


def set_model(key, value):
    return (f"model.{key}={value}", lambda d: d["model"].__setitem__(key, value))


def set_point(key, value):
    return (f"points.0.{key}={value}", lambda d: d["points"][0].__setitem__(key, value))


def del_point_overrides(d):
    # A point's own training / model override would hide the scenario-level change.
    for key in ("training", "model"):
        d["points"][0].pop(key, None)


def replace_model(spec, name):
    def apply(d):
        d["model"].update(spec)
        d["model"]["kv_heads"] = spec["heads"]
        d["points"][0].pop("model", None)
    return (f"model={name}", apply)


def schedule(name):
    def apply(d):
        t = training(d)
        t["schedule"] = name
        if name != "fsdp" and t.get("precision") == "fsdp_mixed":
            t["precision"] = "amp"
        if name == "fsdp" and t.get("precision") == "amp":
            t["precision"] = "fsdp_mixed"
        if name == "ddp":
            t.pop("hybrid_shard_degree", None)
        del_point_overrides(d)
    return (f"schedule={name}", apply)


def hybrid(degree):
    def apply(d):
        if training(d)["schedule"] == "ddp":
            training(d)["schedule"] = "zero1"
        training(d)["hybrid_shard_degree"] = degree
        d["points"][0].get("training", {}).pop("hybrid_shard_degree", None)
    return (f"hybrid_shard_degree={degree}", apply)


def pipeline(pp, sched, virtual):
    def apply(d):
        t = training(d)
        if t["schedule"] in ("fsdp", "zero2", "zero3"):
            t["schedule"] = "zero1"
            t.pop("hybrid_shard_degree", None)
            if t.get("precision") == "fsdp_mixed":
                t["precision"] = "amp"
        t["pipeline_parallel"] = pp
        t["pipeline_schedule"] = sched
        if virtual > 1:
            t["virtual_stages"] = virtual
        else:
            t.pop("virtual_stages", None)
        del_point_overrides(d)
    return (f"pp={pp},{sched},v{virtual}", apply)


def nodes(n):
    def apply(d):
        d["points"][0]["nodes"] = n
        d["points"][0].pop("data_parallel_degree", None)
    return (f"nodes={n}", apply)


def topology(name):
    def apply(d):
        d["topology"] = f"../topologies/{name}"
        d["points"][0].pop("topology", None)
    return (f"topology={name}", apply)


def checkpointing(mode):
    def apply(d):
        t = training(d)
        t.pop("checkpoint_policy", None)
        t["activation_checkpointing"] = mode != "off"
        if mode == "off":
            t["activation_offloading"] = False
        elif mode != "full":
            t["checkpoint_policy"] = mode
        del_point_overrides(d)
    return (f"checkpointing={mode}", apply)


def sequence_parallel_tp(tp):
    """Megatron's sequence parallelism needs TP > 1: both at once, or a random pair rarely meets."""
    def apply(d):
        training(d)["tensor_parallel"] = tp
        training(d)["sequence_parallel"] = True
        del_point_overrides(d)
        d["points"][0].pop("data_parallel_degree", None)  # the new TP changes it
    return (f"sequence_parallel_tp{tp}", apply)


def fsdp2_pipeline(pp):
    """torchtitan's FSDP2 inside pipeline stages: the schedule, its runtime and PP at once."""
    def apply(d):
        t = training(d)
        t["schedule"] = "fsdp"
        t["precision"] = "fsdp_mixed"
        t["fsdp_implementation"] = "torch-fsdp2"
        t["pipeline_parallel"] = pp
        for key in ("fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_limit_all_gathers",
                    "fsdp_sharding_strategy", "fsdp_pad_copy", "zero3_implementation"):
            t.pop(key, None)
        del_point_overrides(d)
        d["points"][0].pop("data_parallel_degree", None)  # the new PP changes it
    return (f"fsdp2_pipeline_pp{pp}", apply)


def offload(d):
    training(d)["activation_checkpointing"] = True
    training(d)["activation_offloading"] = True
    training(d).pop("checkpoint_policy", None)


def valid_mutations():
    m = [topology(t) for t in TOPOLOGIES]
    m += [schedule(s) for s in ("ddp", "zero1", "zero2", "zero3", "fsdp")]
    m += [hybrid(k) for k in (1, 2, 3, 4, 8, 16)]
    m += [set_training("tensor_parallel", k) for k in (1, 2, 3, 4, 8, 16)]
    m += [pipeline(pp, s, v) for pp, s, v in ((2, "1f1b", 1), (3, "gpipe", 1), (4, "interleaved", 2),
                                              (2, "interleaved", 3), (4, "gpipe", 1), (8, "1f1b", 1),
                                              (2, "zb-h1", 1), (4, "zb-h1", 1), (2, "zb-v", 1), (4, "zb-v", 1))]
    m += [set_training("pipeline_partition", "transformer_and_embedding")]
    m += [set_training("micro_batch", k) for k in (1, 2, 3, 7, 16)]
    m += [set_training("gradient_accumulation", k) for k in (1, 3, 8)]
    m += [checkpointing(c) for c in ("off", "full", "selective_op", "selective_attention")]
    m += [("offload", offload)]
    m += [set_training("precision", p) for p in ("amp", "fp32", "fsdp_mixed", "bf16_fp32_grads")]
    m += [set_training("optimizer", o) for o in ("adam", "sgd", "sgd_momentum")]
    m += [set_training("flash_attention", b) for b in (True, False)]
    m += [set_training("sequence_parallel", True)]
    m += [sequence_parallel_tp(k) for k in (2, 4)]
    m += [fsdp2_pipeline(k) for k in (2, 4)]
    m += [set_training("eager_kernels", True)]
    m += [set_training("context_parallel", k) for k in (2, 4)]
    m += [context_parallel(2, cp_comm_type="a2a"), context_parallel(4, cp_comm_type="all_gather"),
          context_parallel(2, context_parallel_rotate_method="alltoall"),
          context_parallel(2, activation_checkpointing=True, checkpoint_policy="full")]
    m += [set_training("linear_precision", "fp8")]
    m += [set_model("seq_len", s) for s in (128, 32768)]
    m += [replace_model(TINY_MODEL, "tiny"), replace_model(HUGE_MODEL, "1T")]
    m += [set_model("architecture", a) for a in ("bert", "gpt", "llama")]
    m += [nodes(n) for n in (1, 2, 3, 16, 128)]
    m += [set_point("storage_capacity", c) for c in ("1.2TiB", "0.5TiB", "100TiB")]
    m += [set_point("storage_kind", k) for k in ("fsx_lustre", "local_nvme")]
    return m


def bad_mutations():
    """Inputs that must be rejected with a clear error (exit 2)."""
    def unknown_field(d):
        training(d)["micro_batchh"] = 1

    def wrong_type(d):
        training(d)["micro_batch"] = "four"

    def empty_points(d):
        d["points"] = []

    def missing_topology(d):
        d["topology"] = "../topologies/no-such-instance.json"
        d["points"][0].pop("topology", None)

    def heads_not_divided(d):
        d["model"]["heads"] = 7
        d["model"].pop("kv_heads", None)
        d["points"][0].pop("model", None)

    def negative_nodes(d):
        d["points"][0]["nodes"] = -1

    def zero_nodes(d):
        d["points"][0]["nodes"] = 0

    def fractional_micro_batch(d):
        training(d)["micro_batch"] = 1.5

    def model_null(d):
        d["model"] = None

    def points_object(d):
        d["points"] = {"nodes": 1}

    def bad_capacity(d):
        d["points"][0]["storage_capacity"] = "lots"

    def bad_schema(d):
        d["schema_version"] = 99

    return [(f"bad:{f.__name__}", f) for f in
            (unknown_field, wrong_type, empty_points, missing_topology, heads_not_divided, negative_nodes,
             zero_nodes, fractional_micro_batch, model_null, points_object, bad_capacity, bad_schema)]


def base_documents():
    """Each shipped scenario cut to its smallest point (at most 8 nodes where it has one)."""
    bases = []
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json"))):
        d = json.load(open(path))
        smallest = min(d["points"], key=lambda p: p.get("nodes", 1))
        d["points"] = [copy.deepcopy(smallest)]
        if d["points"][0].get("nodes", 1) > 8 and "data_parallel_degree" not in d["points"][0]:
            pass  # keep: shrinking a PTD-P point usually breaks its degrees; the nodes mutation does it
        bases.append((os.path.basename(path)[:-5], d))
    return bases


def variants(seed, count):
    rng = random.Random(seed)
    bases = base_documents()
    good, bad = valid_mutations(), bad_mutations()
    out = []
    # Every bad-input case once on a rotating base, then random one- or two-field variants.
    for i, (name, fn) in enumerate(bad):
        base_name, base = bases[(i * 7) % len(bases)]
        out.append((f"{base_name}+{name}", base, [fn], True))
    for base_name, base in bases:
        out.append((f"{base_name}+none", base, [], False))
    # What earlier sweeps found, fixed since: kept in the quick set.
    by_name = dict(bases)
    for base_name, (name, fn), must_fail in (
            ("dl1-bert-large-zero1", pipeline(2, "1f1b", 1), True),  # HCCL has no send_recv: exit 1 before
            ("p4d-llama2-7b-tokens-fsx", set_training("gradient_accumulation", 5), False),  # hung before
            # TP 4 x PP 2 on 3 nodes: data-parallel groups of 2 + 1 ranks per node, exit 1 before
            ("p4d-10b-smp-v1-pipeline", nodes(3), False)):
        out.append((f"{base_name}+{name}+regression", by_name[base_name], [fn], must_fail))
    while len(out) < count:
        base_name, base = bases[rng.randrange(len(bases))]
        picks = rng.sample(good, rng.choice((1, 1, 2)))
        out.append((base_name + "+" + "+".join(n for n, _ in picks), base, [f for _, f in picks], False))
    return out[:count]


def device_peak_flops(topology_file, fp8):
    """The accelerator's dense BF16 peak in TFLOP/s, doubled where FP8 linear layers run (H100: 2x)."""
    topo = json.load(open(topology_file))
    dev = json.load(open(os.path.join(os.path.dirname(topology_file), topo["accelerator"]["device"])))
    v = dev["peak_bf16"]
    value = v["value"] if isinstance(v, dict) else v
    return (2.0 if fp8 else 1.0) * float(re.match(r"[0-9.]+", value).group(0))


def runs_fp8(doc):
    blocks = [doc.get("training", {})] + [p.get("training", {}) for p in doc.get("points", [])]
    return any(isinstance(b, dict) and b.get("linear_precision") == "fp8" for b in blocks)


def walk_numbers(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk_numbers(v, f"{path}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk_numbers(v, f"{path}/{i}")
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path, x
    elif x is None or isinstance(x, str):
        if isinstance(x, str) and x.lower() in ("nan", "inf", "-inf", "-nan"):
            yield path, float("nan")


# AddressSanitizer's warning about SimGrid's stack switching: three lines per forked point, the
# first with its process id and stack addresses, so it differs between identical runs.
ASAN_STACK_WARNING = re.compile(r"^==\d+==WARNING: ASan is ignoring requested __asan_handle_no_return.*\n"
                                r"False positive error reports may follow\n"
                                r"For details see https://github.com/google/sanitizers/issues/189\n", re.MULTILINE)


def invoke(trainsim, args, timeout):
    # A session of its own: trainsim forks a child per point, and a timeout must end both (the
    # child would otherwise hold the output pipe open until it finishes).
    p = subprocess.Popen([trainsim] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "", ""
    return p.returncode, out.decode(errors="replace"), ASAN_STACK_WARNING.sub("", err.decode(errors="replace"))


def check_error(kind, rc, out, err, file_name):
    """Problems with a non-zero exit: it must be exit 2, one line, the file and a JSON path."""
    problems = []
    if rc < 0 or rc > 2:
        problems.append(f"crash: {kind} exit {rc}")
    elif rc == 1:
        problems.append(f"internal-error: {kind}: {err.strip()[:200]}")
    lines = [l for l in err.splitlines() if l.strip()]
    if rc == 2:
        if len(lines) != 1 or not lines[0].startswith("trainsim: error: "):
            problems.append(f"unclear-error: {kind} printed {len(lines)} lines: {err.strip()[:200]}")
        elif file_name not in lines[0] and "topolog" not in lines[0]:
            problems.append(f"error-without-file: {kind}: {lines[0][:200]}")
        elif not re.search(r"(^|[ :])/[A-Za-z_0-9]", lines[0]):
            problems.append(f"error-without-json-path: {kind}: {lines[0][:200]}")
    if CRASH_TEXT.search(err):
        problems.append(f"crash-text: {kind}: {err.strip()[:200]}")
    return problems


def check_run_json(out, peak):
    problems = []
    try:
        doc = json.loads(out)
    except ValueError as e:
        return [f"bad-json: run: {e}"]
    for path, v in walk_numbers(doc):
        if not math.isfinite(v):
            problems.append(f"non-finite: run {path}={v}")
        elif v < 0 and "error" not in path.rsplit("/", 1)[-1]:  # signed errors against the reference
            problems.append(f"negative: run {path}={v}")
    for p in doc.get("points", []):
        status = p.get("status")
        if status == "simulated":
            for key in ("step_time_s", "samples_per_s"):
                if not (p.get(key, 0) > 0):
                    problems.append(f"zero-result: run {key}={p.get(key)} with status simulated")
            tf = p.get("tflops_per_accelerator", 0)
            if tf > peak:
                problems.append(f"above-peak: run tflops_per_accelerator={tf:.1f} > {peak:.1f}")
    return problems


def check_variant(trainsim, name, doc, timeout, workdir):
    scen_dir = os.path.join(workdir, "scenarios")
    file_name = re.sub(r"[^A-Za-z0-9_.+=,-]", "_", name)[:120] + ".json"
    path = os.path.join(scen_dir, file_name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    problems = []
    runs = []
    for _ in range(2):
        rc, out, err = invoke(trainsim, ["run", path, "--format", "json", "--no-wall-time"], timeout)
        if rc is None:
            return "hang", [f"hang: run over {timeout} s"], path, ""
        runs.append((rc, out, err))
    (rc, out, err), (rc2, out2, err2) = runs
    if rc != rc2 or out != out2 or err != err2:
        problems.append("non-deterministic: run output differs between two runs")
    if rc == 0:
        topo = doc.get("topology")
        topo_file = os.path.normpath(os.path.join(scen_dir, topo)) if isinstance(topo, str) else None
        peak = device_peak_flops(topo_file, runs_fp8(doc)) if topo_file and os.path.exists(topo_file) else float("inf")
        problems += check_run_json(out, peak)
        if CRASH_TEXT.search(err):
            problems.append(f"crash-text: run: {err.strip()[:200]}")
        # The table formats the same results: no nan / inf printed there either.
        trc, tout, terr = invoke(trainsim, ["run", path, "--no-wall-time"], timeout)
        if trc != 0:
            problems.append(f"inconsistent: run --format table exit {trc} where json exit 0: {terr.strip()[:200]}")
        elif re.search(r"\b(-?nan|-?inf)\b", tout, re.IGNORECASE):
            problems.append("non-finite: run --format table prints nan or inf")
    else:
        problems += check_error("run", rc, out, err, file_name)
    mrc, mout, merr = invoke(trainsim, ["memory", path, "--format", "json"], timeout)
    if mrc is not None and invoke(trainsim, ["memory", path, "--format", "json"], timeout) != (mrc, mout, merr):
        problems.append("non-deterministic: memory output differs between two runs")
    if mrc is None:
        problems.append(f"hang: memory over {timeout} s")
    elif mrc == 0:
        try:
            for p, v in walk_numbers(json.loads(mout)):
                if not math.isfinite(v) or v < 0:
                    problems.append(f"bad-number: memory {p}={v}")
        except ValueError as e:
            problems.append(f"bad-json: memory: {e}")
        if rc == 2:
            problems.append("inconsistent: run rejects what memory accepts")
    else:
        problems += check_error("memory", mrc, mout, merr, file_name)
    outcome = "error" if rc == 2 else "crash" if rc != 0 else "flagged"
    if rc == 0 and not problems:
        outcome = json.loads(out)["points"][0].get("status", "flagged")  # simulated, oom, not_simulated
    return outcome, problems, path, err.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainsim", default=os.environ.get("TRAINSIM_BIN", os.path.join(ROOT, "build/sim/trainsim")))
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--count", type=int, default=200, help="variants (the bad-input and unchanged bases come first)")
    ap.add_argument("--quick", action="store_true",
                    help="only the bad-input cases and each scenario's unchanged smallest point (the ctest)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per trainsim call")
    ap.add_argument("--keep", help="copy failing variants into this folder")
    ap.add_argument("--show-errors", action="store_true", help="print every clean error too (to review its wording)")
    ap.add_argument("--only", help="run only variants whose name contains this text")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="trainsim-fuzz-")
    os.makedirs(os.path.join(work, "scenarios"))
    os.symlink(os.path.join(ROOT, "topologies"), os.path.join(work, "topologies"))
    todo = []
    for name, base, fns, must_fail in variants(args.seed, args.count):
        if args.quick and not (must_fail or name.endswith("+none") or name.endswith("+regression")):
            continue
        if args.only and args.only not in name:
            continue
        doc = copy.deepcopy(base)
        for fn in fns:
            fn(doc)
        todo.append((name, doc, must_fail))
    counts = {"simulated": 0, "oom": 0, "not_simulated": 0, "flagged": 0, "error": 0, "crash": 0, "hang": 0}
    classes = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(check_variant, args.trainsim, n, d, args.timeout, work): (n, m) for n, d, m in todo}
        for fut in concurrent.futures.as_completed(futures):
            name, must_fail = futures[fut]
            outcome, problems, path, err = fut.result()
            if args.show_errors and outcome == "error":
                print(f"{name}: [clean] {err[:300]}", flush=True)
            if must_fail and outcome == "ok":
                problems.append("accepted: bad input simulated without an error")
            counts[outcome] = counts.get(outcome, 0) + 1
            for p in problems:
                classes.setdefault(p.split(":")[0], []).append(name)
                print(f"{name}: {p}", flush=True)
            if problems and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copy(path, args.keep)
    shutil.rmtree(work)
    print(f"{len(todo)} variants: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n or k in ("crash", "hang")))
    for cls, names in sorted(classes.items()):
        print(f"  {cls}: {len(names)}")
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())

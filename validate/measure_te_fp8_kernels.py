#!/usr/bin/env python3
"""The kernels Transformer Engine launches around its FP8 linears, and their times on this GPU: what
trainsim's Transformer Engine casts (sim/model/fp8_linear.hpp) assume, measured.

Profiles (torch.profiler, CUDA kernels only) forward and backward of one te.LayerNormLinear (the
QKV / first MLP linear of Megatron-core's TE layer) and one te.Linear (the attention output / second
MLP linear), with and without sequence_parallel set on the module after its constructor (on one
GPU the gathers return at once, but the module takes the sequence-parallel code path: a cast
without transpose, a transpose in backward),
each in bf16 and under fp8_autocast with delayed scaling, as NeMo runs them. Per configuration it
writes every kernel's name, launches and mean microseconds, so one can check, against the model:
 - LayerNormLinear in FP8: the norm kernel writes the FP8 output (no separate cast kernel) and
   takes about 3/4 of the bf16 norm's time (2 B read + 1 B written instead of 2 + 2);
 - its backward: one FP8 transpose of the norm output (1 + 1 B per element);
 - Linear without sequence_parallel: one cast-transpose kernel per input and per gradient
   (2 B read, 1 + 1 B written); with it, a cast (2 + 1) and a transpose (1 + 1);
 - the weights cast only when is_first_microbatch is True (the second call, False, casts none).
Needs Transformer Engine 1.x (the version NeMo 24.12 shipped, 1.12/1.13; NGC's PyTorch 24.11-24.12
containers) on an H100. Writes --out (JSON: provenance, shapes, per-configuration kernel tables).
  python3 validate/measure_te_fp8_kernels.py --out validate/results/h100-sxm-te-fp8-kernels.json"""
import argparse
import sys

from torch_measurement import cuda_torch, measured_provenance, write_json


def kernel_table(prof, steps):
    """{kernel name: [launches per step, mean us]} from a profile of `steps` repetitions."""
    table = {}
    for e in prof.key_averages():
        if e.device_type.name != "CUDA" or e.count == 0:
            continue
        total = getattr(e, "self_device_time_total", None)
        if total is None:
            total = e.self_cuda_time_total
        table[e.key] = [e.count / steps, total / e.count]
    return dict(sorted(table.items()))


def profile(torch, fn, steps):
    for _ in range(3):
        fn(True)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            fn(i == 0)  # the first micro-batch of a step casts the weights, the others reuse them
        torch.cuda.synchronize()
    return kernel_table(prof, steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=8192)
    ap.add_argument("--out-features", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_te_fp8_kernels")
    if torch is None:
        return 1
    try:
        import transformer_engine
        import transformer_engine.pytorch as te
        from transformer_engine.common.recipe import DelayedScaling, Format
    except ImportError as e:
        print("measure_te_fp8_kernels: Transformer Engine is not installed (%s)" % e, file=sys.stderr)
        return 1
    recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024, amax_compute_algo="max")
    x = torch.randn(args.tokens, args.hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(args.tokens, args.out_features, device="cuda", dtype=torch.bfloat16)
    results = {}
    for name in ("LayerNormLinear", "Linear"):
        for sequence_parallel in (False, True):
            kwargs = dict(bias=False, params_dtype=torch.bfloat16)
            if name == "LayerNormLinear":
                module = te.LayerNormLinear(args.hidden, args.out_features, parallel_mode="column", **kwargs)
            else:
                module = te.Linear(args.hidden, args.out_features, parallel_mode="row", **kwargs)
            module = module.cuda()
            # The constructor clears sequence_parallel at tp_size 1; set after it, the forward takes
            # the sequence-parallel path, whose gathers and scatters return at once on one rank.
            module.sequence_parallel = sequence_parallel
            for fp8 in (False, True):
                def step(first, module=module, fp8=fp8):
                    with te.fp8_autocast(enabled=fp8, fp8_recipe=recipe):
                        y = module(x, is_first_microbatch=first)
                    y.backward(grad)
                label = "%s sp=%s %s" % (name, sequence_parallel, "fp8" if fp8 else "bf16")
                try:
                    results[label] = profile(torch, step, args.steps)
                except Exception as e:  # a TE build without this path: say so, keep the others
                    results[label] = {"error": repr(e)}
                print(label, file=sys.stderr)
                for k, (n, us) in results[label].items() if "error" not in results[label] else []:
                    print("  %6.2f x %9.1f us  %s" % (n, us, k[:110]), file=sys.stderr)
    doc = {"schema": "trainsim.te_fp8_kernels/1",
           "provenance": measured_provenance(torch, "validate/measure_te_fp8_kernels.py"),
           "transformer_engine": getattr(transformer_engine, "__version__", "unknown"),
           "shape": {"tokens": args.tokens, "hidden": args.hidden, "out_features": args.out_features,
                     "steps": args.steps, "note": "launches per step and mean us per launch; step 0 of "
                     "each profile has is_first_microbatch True, the others False"},
           "results": results}
    write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

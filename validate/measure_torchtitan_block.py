#!/usr/bin/env python3
"""One Llama-3 8B block forward+backward as torchtitan's llama3_8b.toml runs it: under selective op
activation checkpointing, eager or compiled per block, with nn.Linear in bf16 or torchao's
Float8Linear (tensorwise, the recipe of the awsome FP8 run). It separates what torch.compile buys
from what float8 buys under the op policy, which the session-9 layer check (measure_fp8_layer.py:
a hand-written FP8 linear, no checkpointing) did not.

Why: the awsome 4 x p5 rows (VALIDATION.md 3.3) measured 1.158x from "compile + float8" over the
eager default, where compiled FP8 over eager bf16 is 1.38x at the layer (measured) and compiled
bf16 over eager bf16 1.17x. Their log lines (no "[titan]" prefix, no "tflops:" field) date the
torchtitan they ran before 18 February 2025; from 15 February `[float8] enable_float8_linear`
(the README's switch) no longer existed and was ignored without an error. This script says which
speed-up each variant gives under the op policy, on the same block.

The op policy is the one torchtitan's parallelize_llama.py applied in 2025: inside the checkpointed
block every output of aten.mm is saved except every second one, the flash/efficient SDPA outputs
and aten.max (the float8 amax) are saved, everything else is recomputed in the backward.
Run on a GPU machine with FP8 tensor cores (torchao installed for the float8 rows):
python3 validate/measure_torchtitan_block.py --out FILE"""
import sys
from collections import defaultdict

import llama_layer
from torch_measurement import cuda_torch, failure, measured_provenance, write_json


def op_policy_context(torch):
    """A fresh pair of selective-checkpoint contexts per checkpointed call, counting mm outputs."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    ops = torch.ops.aten
    saved = {ops.mm.default, ops._scaled_dot_product_flash_attention.default,
             ops._scaled_dot_product_efficient_attention.default, ops.max.default}

    def make():
        counts = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            key = "recompute" if ctx.is_recompute else "forward"
            if func == ops.mm.default:
                counts[key] += 1
            keep = func in saved and not (func == ops.mm.default and counts[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return make


def checkpointed(torch, layer):
    """layer wrapped as torchtitan's checkpoint_wrapper with the op policy (non-reentrant)."""
    from torch.utils.checkpoint import checkpoint
    context = op_policy_context(torch)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = layer

        def forward(self, x, cos, sin):
            return checkpoint(self.inner, x, cos, sin, use_reentrant=False, context_fn=context,
                              preserve_rng_state=False)

    return Block()


def float8_converted(torch, layer):
    """torchao's convert_to_float8_training with its default (tensorwise dynamic) config."""
    from torchao.float8 import convert_to_float8_training
    convert_to_float8_training(layer)
    return layer


def time_variant(torch, F, linears, compiled, seq, batch, fullgraph=True):
    layer = llama_layer.build(torch, F, lambda i, o: torch.nn.Linear(i, o, bias=False))
    if linears == "torchao-fp8":
        layer = float8_converted(torch, layer)
    return llama_layer.time_module(torch, checkpointed(torch, layer), compiled, seq, batch, fullgraph=fullgraph)


def main():
    args = llama_layer.layer_arguments(__doc__.splitlines()[0])
    torch = cuda_torch("measure_torchtitan_block")
    if torch is None:
        return 1
    import torch.nn.functional as F
    variants = [("bf16", False), ("bf16", True)]
    if torch.cuda.get_device_capability(0) >= (8, 9):
        variants += [("torchao-fp8", True), ("torchao-fp8", False)]
    flops = llama_layer.model_flops(args.seq, args.batch)
    rows = []
    for linears, compiled in variants:
        row = {"linears": linears, "compiled": compiled, "checkpointing": "torchtitan op policy",
               "seq": args.seq, "batch": args.batch}
        try:
            try:
                tf, tfb = time_variant(torch, F, linears, compiled, args.seq, args.batch)
            except Exception as e:  # torchtitan compiles each block with fullgraph=True; if this
                if not compiled:    # PyTorch breaks the graph, time the block with its breaks
                    raise
                row["fullgraph_error"] = failure(e)
                torch._dynamo.reset()
                tf, tfb = time_variant(torch, F, linears, compiled, args.seq, args.batch, fullgraph=False)
            row.update({"forward_us": round(tf, 1), "forward_backward_us": round(tfb, 1),
                        "model_tflops": round(flops / (tfb / 1e6) / 1e12, 1)})
        except Exception as e:  # a failed variant (no torchao, a compile error) is recorded
            row["error"] = failure(e)
        print(row, flush=True)
        rows.append(row)
        torch._dynamo.reset()
    base = next((r["forward_backward_us"] for r in rows if r.get("linears") == "bf16" and not r["compiled"]
                 and "forward_backward_us" in r), None)
    for r in rows:
        if base and "forward_backward_us" in r:
            r["speedup_over_eager_bf16"] = round(base / r["forward_backward_us"], 3)
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_torchtitan_block.py"),
                          "layer": "Llama-3 8B (hidden 4096, 32 heads, 8 KV heads, FFN 14336)",
                          "model_flops": flops, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What one training step of a Llama-3 8B-shaped model holds on the GPU beyond its parameters, per
layer and for the embedding and head, under torchtitan's three activation-checkpointing modes (none,
full, selective "op"), measured with the caching allocator's statistics: the memory model's
activation terms (`trainsim memory`: activations, activation_workspace) checked on a real GPU.

The model is torchtitan's Llama (llama_layer.py) with L decoder layers (--layers, several values:
the slope over L is the per-layer term, the intercept the embedding, head and loss), the token
embedding, the final RMSNorm, an untied output projection and the loss as torchtitan computes it
(logits upcast to fp32, cross-entropy); parameters in bf16, as FSDP2's mixed precision computes with
them; no optimizer. torchtitan's selective "op" policy (torchtitan/models/llama/parallelize_llama.py,
_apply_ac_to_transformer_block): save the outputs of aten.mm (every second one recomputed) and of
flash attention, recompute the rest. For each mode and L, after a warm-up step: the peak of
allocated memory during forward+backward above what was allocated before it (parameters, inputs),
and the reserved peak (cached free blocks and fragmentation included: what torchtitan logs).
Run on a GPU machine: python3 validate/measure_activation_memory.py --out FILE"""
import argparse
import collections
import sys

import llama_layer
from torch_measurement import cuda_torch, failure, measured_provenance, write_json


def sac_context(torch):
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    save = {aten.mm.default, aten._scaled_dot_product_flash_attention.default,
            aten._scaled_dot_product_efficient_attention.default}
    meta = collections.defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        keep = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def build_model(torch, F, layers, vocab, hidden=4096, mode="none"):
    from torch.utils.checkpoint import checkpoint
    blocks = torch.nn.ModuleList(llama_layer.build(torch, F, lambda i, o: torch.nn.Linear(i, o, bias=False))
                                 for _ in range(layers))
    emb = torch.nn.Embedding(vocab, hidden).cuda().to(torch.bfloat16)
    norm_w = torch.nn.Parameter(torch.ones(hidden, device="cuda", dtype=torch.bfloat16))
    out = torch.nn.Linear(hidden, vocab, bias=False).cuda().to(torch.bfloat16)

    def forward(tokens, targets, cos, sin):
        h = emb(tokens)
        for b in blocks:
            if mode == "none":
                h = b(h, cos, sin)
            elif mode == "full":
                h = checkpoint(b, h, cos, sin, use_reentrant=False, preserve_rng_state=False)
            else:
                h = checkpoint(b, h, cos, sin, use_reentrant=False, preserve_rng_state=False,
                               context_fn=lambda: sac_context(torch))
        hf = h.float()
        h = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(h) * norm_w
        logits = out(h)
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))

    params = list(blocks.parameters()) + list(emb.parameters()) + [norm_w] + list(out.parameters())
    return forward, params


def training_step(torch, F, mode, layers, seq, vocab):
    """One forward+backward of the model on random tokens (gradients dropped after it), and the
    model's parameters."""
    forward, params = build_model(torch, F, layers, vocab, mode=mode)
    tokens = torch.randint(0, vocab, (1, seq), device="cuda")
    targets = torch.randint(0, vocab, (1, seq), device="cuda")
    _, cos, sin, _ = llama_layer.inputs(torch, seq)

    def step():
        forward(tokens, targets, cos, sin).backward()
        for p in params:
            p.grad = None

    return step, params


def measure(torch, F, mode, layers, seq, vocab):
    step, params = training_step(torch, F, mode, layers, seq, vocab)
    step()  # warm-up: autotuning, workspaces, the allocator's first blocks
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    base_reserved = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    gib = float(1 << 30)
    row = {"mode": mode, "layers": layers, "seq": seq,
           "parameters_gib": round(sum(p.numel() * p.element_size() for p in params) / gib, 3),
           "allocated_before_gib": round(base / gib, 3),
           "peak_above_gib": round((torch.cuda.max_memory_allocated() - base) / gib, 3),
           "reserved_before_gib": round(base_reserved / gib, 3),
           "reserved_peak_gib": round(torch.cuda.max_memory_reserved() / gib, 3)}
    del step, params
    return row


def explain(torch, F, mode, layers, seq, vocab, top=25):
    """Which allocations are alive at the step's allocated peak, grouped by the source line that
    made them (the allocator's recorded history, replayed to the peak): what each saved tensor is."""
    step, _ = training_step(torch, F, mode, layers, seq, vocab)
    step()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    live, total, peak, at_peak = {}, 0, 0, {}
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            frames = [f for f in e.get("frames", []) if f["filename"].endswith(("llama_layer.py", "measure_activation_memory.py"))
                      or "torch/utils/checkpoint" in f["filename"] or "autograd" in f["filename"]]
            where = "; ".join("%s:%d %s" % (f["filename"].rsplit("/", 1)[-1], f["line"], f["name"]) for f in frames[:2]) or "?"
            live[e["addr"]] = (e["size"], where)
            total += e["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif e["action"] in ("free_requested", "free") and e["addr"] in live:
            if e["action"] == "free_requested":
                total -= live.pop(e["addr"])[0]
    groups = collections.Counter()
    for size, where in at_peak.values():
        groups[where] += size
    rows = [{"where": w, "mib": round(b / 2 ** 20, 1)} for w, b in groups.most_common(top)]
    for r in rows:
        print("%9.1f MiB  %s" % (r["mib"], r["where"]), flush=True)
    return {"mode": mode, "layers": layers, "peak_above_step_start_mib": round(peak / 2 ** 20, 1), "at_peak": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--explain", choices=["none", "full", "selective_op"],
                    help="instead: what is alive at the peak of one step in this mode, by source line")
    args = ap.parse_args()
    torch = cuda_torch("measure_activation_memory")
    if torch is None:
        return 1
    import torch.nn.functional as F
    if args.explain:
        doc = {"provenance": measured_provenance(torch, "validate/measure_activation_memory.py --explain"),
               "explained": [explain(torch, F, args.explain, n, args.seq, args.vocab) for n in args.layers]}
        write_json(args.out, doc)
        return 0
    rows = []
    for mode in ("none", "full", "selective_op"):
        for layers in args.layers:
            torch.cuda.empty_cache()
            try:
                row = measure(torch, F, mode, layers, args.seq, args.vocab)
            except Exception as e:  # recorded; the other points still run
                row = {"mode": mode, "layers": layers, "error": failure(e)}
            print(row, flush=True)
            rows.append(row)
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_activation_memory.py"),
                          "model": "Llama-3 8B shapes (hidden 4096, 32 heads, 8 KV heads, FFN 14336), vocab %d, "
                                   "batch 1 x seq %d, bf16 parameters, no optimizer" % (args.vocab, args.seq),
                          "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Times one context-parallel (CP) attention layer, forward and backward, at the shapes of NeMo's
Llama3-8B CP2 row (seq 8192, CP 2, 32 heads, 8 KV heads, head dim 128, micro-batch 1), to
check what sim/program/context_parallel.* predicts for a ring step.

Two modes:
  te-cp    the real thing, on 2 GPUs: Transformer Engine's DotProductAttention in Megatron's sbhd
           layout with a CP group of both ranks (cp_comm_type p2p, TE's AttnFuncWithCPAndKVP2P),
           beside the same module without CP on the rank's seq/CP tokens (step 0 alone). Run:
             torchrun --nproc_per_node 2 validate/measure_cp_ring_attention.py --mode te-cp --out FILE
  emulate  one GPU, no TE needed: the per-step kernels one CP rank runs, each timed alone:
           cuDNN's fused attention through PyTorch's SDPA (causal at seq/CP, and both unmasked
           half shapes, q x kv = seq/CP x seq/2CP and seq/2CP x seq/CP; K and V expanded to the
           query heads, which SDPA's cuDNN path needs), and the ring's PyTorch kernels at their
           real sizes (K, V packed by torch.cat, the output zeroed, a fused output correction
           under torch.compile, dQ and dK, dV added, dK, dV concatenated). Run:
             python3 validate/measure_cp_ring_attention.py --mode emulate --out FILE

Compare with the prediction: `trainsim run scenarios/nemo-h100-fp8.json --trace T.json` and the
Llama3-8B point's tasks "cp attention step 0/1" (forward and backward) of one layer; the
emulate mode's kernels with the ops of context_parallel.cpp one by one (the attention blocks at
the profile's cudnn-attention curves, the copies and adds at its memory-bound kernel rates).
What to look at: whether the half blocks' backward runs at the curve's rate for its query
length (attention_loop_length), whether the two ranks' layer times differ as the model says
(rank 0 the slower), and how much of TE's whole layer (te-cp) the kernels explain."""
import argparse
import sys

from torch_measurement import cuda_time_us, cuda_torch, driver_version, write_json


def shapes(args):
    s = args.seq // args.cp  # the rank's tokens
    return s, args.heads, args.kv_heads, args.head_dim, args.batch


def emulate(torch, args):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    s, h, hkv, d, b = shapes(args)
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    rows = {}

    def attention(name, sq, skv, causal):
        q = torch.randn(b, h, sq, d, requires_grad=True, **bf16)
        k = torch.randn(b, h, skv, d, requires_grad=True, **bf16)
        v = torch.randn(b, h, skv, d, requires_grad=True, **bf16)
        grad = torch.randn(b, h, sq, d, **bf16)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def fwd_bwd():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(grad)

            t_f = cuda_time_us(fwd, torch)
            t_fb = cuda_time_us(fwd_bwd, torch)
        flops = 4.0 * sq * skv * d * h * b * (0.5 if causal else 1.0)
        rows[name] = {"q": sq, "kv": skv, "causal": causal, "forward_us": round(t_f, 1),
                      "backward_us": round(t_fb - t_f, 1), "forward_tflops": round(flops / t_f / 1e6, 1),
                      "backward_tflops": round(2.5 * flops / max(t_fb - t_f, 1e-3) / 1e6, 1)}

    attention("step 0 causal", s, s, True)
    attention("half kv (ranks r >= i)", s, s // 2, False)
    attention("half q (ranks r < i)", s // 2, s, False)

    # The ring's own kernels (sbhd: [s, b, heads, d]).
    q = torch.randn(s, b, h, d, **bf16)
    k = torch.randn(s, b, hkv, d, **bf16)
    v = torch.randn(s, b, hkv, d, **bf16)
    out = torch.zeros_like(q)
    out_step = torch.randn_like(q)
    lse = torch.randn(b, h, s, device="cuda", dtype=torch.float32)
    lse_step = torch.randn_like(lse)
    dq = torch.randn_like(q)
    dkv = torch.randn(2, s, b, hkv, d, **bf16)
    dkv_step = torch.randn_like(dkv)
    dk = torch.randn(s, b, hkv, 2, d, **bf16)[..., 0, :]  # strided views, as the kernel returns them
    dv = torch.randn(s, b, hkv, 2, d, **bf16)[..., 1, :]

    @torch.compile
    def out_correction(o, o_step, l_all, l_step):
        scale = torch.exp(l_step - l_all).movedim(2, 0).unsqueeze(-1)
        o.add_(o_step * scale)

    kernels = {
        "kv pack (torch.cat)": lambda: torch.cat((k.unsqueeze(-3), v.unsqueeze(-3)), dim=-3),
        "out zero": lambda: torch.zeros_like(q),
        "out correction (compiled)": lambda: out_correction(out, out_step, lse, lse_step),
        "dq add": lambda: dq.add_(out_step),
        "dkv cat": lambda: torch.cat((dk.unsqueeze(0), dv.unsqueeze(0)), dim=0),
        "dkv add": lambda: dkv.add_(dkv_step),
        "kv copy": lambda: dkv.copy_(dkv_step),
    }
    for name, fn in kernels.items():
        rows[name] = {"us": round(cuda_time_us(fn, torch), 1)}
    return rows


def te_cp(torch, args):
    import os
    import torch.distributed as dist
    from transformer_engine.pytorch import DotProductAttention
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    s, h, hkv, d, b = shapes(args)
    if world != args.cp:
        sys.exit("te-cp: run with --nproc_per_node %d (the CP degree)" % args.cp)
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    group = dist.new_group(list(range(world)))

    def module(cp):
        m = DotProductAttention(h, d, num_gqa_groups=hkv, attn_mask_type="causal", qkv_format="sbhd")
        if cp:
            m.set_context_parallel_group(group, list(range(world)), torch.cuda.Stream())
        return m

    def time_layer(m):
        q = torch.randn(s, b, h, d, requires_grad=True, **bf16)
        k = torch.randn(s, b, hkv, d, requires_grad=True, **bf16)
        v = torch.randn(s, b, hkv, d, requires_grad=True, **bf16)
        grad = torch.randn(s, b, h * d, **bf16)

        def fwd():
            with torch.no_grad():
                m(q, k, v)

        def fwd_bwd():
            m(q, k, v).backward(grad)

        dist.barrier()
        t_f = cuda_time_us(fwd, torch, min_ms=300)
        dist.barrier()
        t_fb = cuda_time_us(fwd_bwd, torch, min_ms=300)
        return {"forward_us": round(t_f, 1), "backward_us": round(t_fb - t_f, 1)}

    result = {"rank": rank, "cp": time_layer(module(True)), "no_cp_seq_per_rank": time_layer(module(False))}
    results = [None] * world
    dist.all_gather_object(results, result)
    dist.destroy_process_group()
    return results if rank == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["emulate", "te-cp"], required=True)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--cp", type=int, default=2)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_cp_ring_attention")
    if torch is None:
        return 1
    rows = emulate(torch, args) if args.mode == "emulate" else te_cp(torch, args)
    if rows is None:  # a te-cp rank other than 0
        return 0
    doc = {"what": "one CP attention layer at Llama3-8B CP2 shapes (%s)" % args.mode,
           "shapes": vars(args), "device": torch.cuda.get_device_name(), "driver": driver_version(),
           "torch": torch.__version__, "rows": rows}
    write_json(args.out, doc)
    print(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

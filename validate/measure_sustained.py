#!/usr/bin/env python3
"""Measures what a short kernel benchmark cannot: the GEMM rate sustained over many seconds (the
GPU's clocks under its power limit) and a whole Llama-style decoder layer in eager PyTorch.

1. Sustained GEMM: one bf16 GEMM shape run back to back for --seconds, timed in windows of about
   one second each with CUDA events; for each window the achieved TFLOP/s, and the SM clock and
   board power read from nvidia-smi right after it. Shapes: 8192^3, and the Llama-3 8B FFN GEMM
   of one 8192-token sequence (8192 x 14336 x 4096).
2. Llama layer (RMSNorm, GQA attention with RoPE through SDPA's flash backend, causal, SwiGLU
   FFN, no biases, bf16), forward and forward+backward, at Llama-3 8B's shape (hidden 4096, 32
   heads, 8 KV heads, FFN 14336) and seq 8192, batch 1: what torchtitan runs per layer without
   torch.compile (its RMSNorm, RoPE and SwiGLU written as in its model.py, eager).
Run on a GPU machine: python3 validate/measure_sustained.py --out FILE [--seconds S]"""
import argparse
import datetime
import sys

import llama_layer as llama_layer_module
from torch_measurement import cuda_torch, cuda_time_us, held_rate_windows, nvidia_smi, write_json


def sustained_gemm(torch, m, n, k, seconds):
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((k, n), device="cuda", dtype=torch.bfloat16)
    windows = held_rate_windows(lambda: a @ b, torch, 2.0 * m * n * k, seconds, "gemm %dx%dx%d" % (m, n, k))
    return {"m": m, "n": n, "k": k, "dtype": "bf16", "windows": windows}


def sustained_attention(torch, F, seq, head_dim, seconds, hidden=2048, tokens=16384):
    """SDPA flash forward+backward (causal, bf16, FlashAttention-2's benchmark setup) back to back
    for `seconds`, in windows of about one second: TFLOP/s per window (FA2's count: forward
    4 s^2 d heads batch halved under the mask, backward 2.5x), SM clock and power after each."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    heads, batch = hidden // head_dim, tokens // seq
    q, k, v = (torch.randn((batch, heads, seq, head_dim), device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    g = torch.randn((batch, heads, seq, head_dim), device="cuda", dtype=torch.bfloat16)
    flops = 3.5 * 4.0 * seq * seq * head_dim * heads * batch * 0.5

    def step():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)

    burst_us = cuda_time_us(step, torch)
    windows = held_rate_windows(step, torch, flops, seconds, "attention seq %d hd%d" % (seq, head_dim), burst_us)
    return {"kernel": "flash-attention-2 (SDPA flash)", "seq": seq, "head_dim": head_dim, "mask": "causal",
            "burst_tflops": round(flops / (burst_us / 1e6) / 1e12, 1), "windows": windows}


def llama_layer(torch, F, seq, batch=1):
    layer = llama_layer_module.build(torch, F, lambda i, o: torch.nn.Linear(i, o, bias=False))
    x, cos, sin, g = llama_layer_module.inputs(torch, seq, batch)
    tf, tfb = llama_layer_module.time_passes(torch, layer, layer, x, cos, sin, g)
    model_flops = llama_layer_module.model_flops(seq, batch)
    row = {"model": "llama3-8b layer", "seq": seq, "batch": batch, "forward_us": round(tf, 1),
           "backward_us": round(tfb - tf, 1), "total_us": round(tfb, 1),
           "model_tflops": round(model_flops / (tfb / 1e6) / 1e12, 1)}
    print("llama3-8b layer seq %d: fwd %.1f us, fwd+bwd %.1f us, %.1f model TFLOP/s" %
          (seq, tf, tfb, row["model_tflops"]), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--attention-only", action="store_true",
                    help="only the sustained fused-attention run (is its clock the GEMMs'?)")
    args = ap.parse_args()
    torch = cuda_torch("measure_sustained")
    if torch is None:
        return 1
    import torch.nn.functional as F
    props = torch.cuda.get_device_properties(0)
    name, driver, power_limit, max_clock = (nvidia_smi("name,driver_version,power.limit,clocks.max.sm") + [""] * 4)[:4]
    out = {"provenance": {"method": "measured", "source": "validate/measure_sustained.py",
                          "date": datetime.date.today().isoformat(), "gpu": props.name, "driver": driver,
                          "cuda": torch.version.cuda, "torch": torch.__version__,
                          "power_limit_w": power_limit, "max_sm_clock_mhz": max_clock},
           "idle": dict(zip(["sm_clock_mhz", "power_w"], nvidia_smi("clocks.sm,power.draw")))}
    if args.attention_only:
        out["sustained_attention"] = [sustained_attention(torch, F, 8192, 128, args.seconds)]
    else:
        out["sustained_gemm"] = [sustained_gemm(torch, 8192, 8192, 8192, args.seconds),
                                 sustained_gemm(torch, 8192, 14336, 4096, args.seconds)]
        out["layers"] = [llama_layer(torch, F, 8192), llama_layer(torch, F, 2048, batch=4)]
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

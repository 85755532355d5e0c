#!/usr/bin/env python3
"""Times PyTorch SDPA's flash backend with and without attention dropout, forward and backward,
at the shapes of measure_torch_ops.py's layers (causal, bf16, [batch, heads, seq, head_dim]).

Why: profiled in those layers (dropout_p 0.1), the flash forward took 44-89% longer and the
backward 4-21% longer than the device profile's dropout-free FlashAttention-2 curves predict
(trainsim-framework-layers --profile). The simulator has no dropout term for a fused attention
kernel; this measures one, per shape, so a curve (or a factor by head dim and sequence) can be
derived from measurements rather than from the layer rows it would then be checked against.
Backward = forward+backward - forward. Run on a GPU machine:
  python3 validate/measure_attention_dropout.py --out validate/results/<gpu>-attention-dropout-measured.json"""
import argparse
import sys

from torch_measurement import cuda_torch, cuda_time_us, measured_provenance, write_json

SHAPES = [  # name, batch, heads, seq, head_dim (measure_torch_ops.py MODELS)
    ("bert-large", 8, 16, 512, 64),
    ("gpt-1.7b", 4, 24, 2048, 96),
    ("gpt-7.5b", 1, 32, 2048, 128),
    ("gpt-18b", 1, 48, 2048, 128),
    ("seq-8192-d128", 1, 32, 8192, 128),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_attention_dropout")
    if torch is None:
        return 1
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(0)
    rows = []
    for name, b, a, s, d in SHAPES:
        q, k, v = (torch.randn((b, a, s, d), device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        g = torch.randn_like(q)
        for p in (0.0, 0.1):
            def fwd():
                with torch.no_grad(), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)

            def fwd_bwd():
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True).backward(g)
                q.grad = k.grad = v.grad = None
            tf = cuda_time_us(fwd, torch)
            tb = max(cuda_time_us(fwd_bwd, torch) - tf, 0.0)
            rows.append({"shape": name, "batch": b, "heads": a, "seq": s, "head_dim": d, "dropout_p": p,
                         "forward_us": round(tf, 1), "backward_us": round(tb, 1)})
            print("%-14s p=%.1f fwd %9.1f us bwd %9.1f us" % (name, p, tf, tb), flush=True)
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_attention_dropout.py"),
                          "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Derives the A100 fused-attention efficiency curves of topologies/devices/a100-*.json from the
FlashAttention-2 paper (Dao 2023, arXiv 2307.08691), as transcribed in VALIDATION.md 8.2.

Inputs (A100 80GB SXM4, batch x seq = 16k tokens, hidden 2048, FLOPs 4 s^2 d heads forward,
halved under a causal mask, backward 2.5x forward), forward+backward TFLOP/s by seq 512..16k:
  FA2 causal hd128, FA2 non-causal hd128, FA2 non-causal hd64.
Derivations (no fitting to any training row):
  * causal hd64 = causal hd128 x (non-causal hd64 / non-causal hd128) at each seq;
  * forward / backward split: the paper's best forward (73% of peak) and best backward (63%) fix
    r_f / r_b = 73/63; with backward FLOPs = 2.5 x forward, fwd+bwd rate R = 3.5 / (1/r_f + 2.5/r_b),
    so r_b = R (63/73 + 2.5) / 3.5 and r_f = r_b x 73/63;
  * flash-attn's Triton kernel (llm-foundry's attn_impl triton): FA2 is 1.3-1.5x faster forward
    (1.4 taken) and 2x faster backward (paper, section 4.1).
Prints the "fused_attention" object for the A100 device profiles, or with --h100 the H100's from the
paper; with --measured FILE, the object for a device measured by validate/measure_attention.py, to
which --triton adds flash-attn's Triton kernel derived from the measured flash-attention-2 curves
by the same 1.4x / 2x (the H100 profile: llm-foundry's H100 tables ran attn_impl triton)."""
import json

PEAK = 312.0
SEQ = [512, 1024, 2048, 4096, 8192, 16384]
CAUSAL_128 = [99, 131, 155, 182, 189, 189]
NONCAUSAL_128 = [131, 181, 196, 201, 203, 203]
NONCAUSAL_64 = [132, 162, 171, 175, 176, 176]
CAUSAL_64 = [c * a / b for c, a, b in zip(CAUSAL_128, NONCAUSAL_64, NONCAUSAL_128)]
FWD_OVER_BWD = 73.0 / 63.0
TRITON_FWD, TRITON_BWD = 1.4, 2.0


def split(r):
    rb = r * (1 / FWD_OVER_BWD + 2.5) / 3.5
    return rb * FWD_OVER_BWD, rb


def curve(rates, causal, hd, slow_f=1.0, slow_b=1.0):
    pts = []
    for s, r in zip(SEQ, rates):
        f, b = split(r)
        pts.append({"seq": s, "forward": round(f / slow_f / PEAK, 3), "backward": round(b / slow_b / PEAK, 3)})
    return {"mask": "causal" if causal else "none", "head_dim": hd, "points": pts}


SRC = ("FlashAttention-2 paper (arXiv 2307.08691) figures 4-6 as in VALIDATION.md 8.2: fwd+bwd TFLOP/s on A100 80GB "
       "SXM4 by seq 512-16k, split into forward and backward by the paper's best forward (73%) and backward (63%) "
       "rates; derived by validate/derive_attention_curves.py, not fitted")
fa2 = [curve(CAUSAL_128, True, 128), curve(CAUSAL_64, True, 64), curve(NONCAUSAL_128, False, 128),
       curve(NONCAUSAL_64, False, 64)]
tri = [curve(CAUSAL_128, True, 128, TRITON_FWD, TRITON_BWD), curve(CAUSAL_64, True, 64, TRITON_FWD, TRITON_BWD),
       curve(NONCAUSAL_128, False, 128, TRITON_FWD, TRITON_BWD), curve(NONCAUSAL_64, False, 64, TRITON_FWD, TRITON_BWD)]
for c in fa2 + tri:
    c["source"] = SRC
fa2[1]["source"] += "; causal hd64 = causal hd128 x non-causal hd64/hd128 at each seq"
tri[1]["source"] += "; causal hd64 = causal hd128 x non-causal hd64/hd128 at each seq"
out = {
    "default_kernel": "flash-attention-2",
    "kernels": [
        {"name": "flash-attention-2", "source": "FlashAttention-2 (Dao-AILab/flash-attention v2), the paper's kernel", "curves": fa2},
        {"name": "flash-attn-triton",
         "source": "flash-attn's Triton kernel (flash_attn_triton.py; llm-foundry attn_impl triton): FA2's curves slowed by "
                   "the paper's section 4.1 speed-ups of FA2 over it, 1.4x forward (1.3-1.5x) and 2x backward",
         "curves": tri},
    ],
    "note": "default: FlashAttention-2, what PyTorch SDPA (2.2+) and Transformer Engine run on A100 (SMP v2); a "
            "scenario names another with training.attention_kernel",
}

# H100 80GB SXM5 (peak 989.4 TFLOP/s dense BF16). VALIDATION.md 8.2 has FlashAttention-2 without
# Hopper features (the paper's H100 runs, figure 7): non-causal hd128 at every seq, causal hd128 only
# at 512 (163) and 16k (~328). Assumptions, stated in the profile: the causal curve between its two
# ends is linear in log2(seq); forward/backward split by the A100 ratio (73/63); no head-dim-64 curve
# (hd64 calls take the hd128 curve); no Triton kernel (no H100 source for it).
H100_PEAK = 989.4
NONCAUSAL_128_H100 = [248, 320, 326, 315, 318, 318]
CAUSAL_ENDS_H100 = (163.0, 328.0)


def causal_h100():
    import math
    lo, hi = CAUSAL_ENDS_H100
    span = math.log2(SEQ[-1] / SEQ[0])
    return [lo + (hi - lo) * math.log2(x / SEQ[0]) / span for x in SEQ]


def curve_h100(rates, causal):
    pts = []
    for x, r in zip(SEQ, rates):
        f, b = split(r)
        pts.append({"seq": x, "forward": round(f / H100_PEAK, 3), "backward": round(b / H100_PEAK, 3)})
    return {"mask": "causal" if causal else "none", "head_dim": 128, "points": pts}


SRC_H100 = ("FlashAttention-2 paper (arXiv 2307.08691) figure 7 as in VALIDATION.md 8.2: fwd+bwd TFLOP/s on H100 SXM5 "
            "(FA2 without Hopper-specific features) by seq 512-16k, split into forward and backward by the A100 ratio of "
            "the paper's best forward (73%) and backward (63%) rates; derived by validate/derive_attention_curves.py, "
            "not fitted")
h100 = [curve_h100(causal_h100(), True), curve_h100(NONCAUSAL_128_H100, False)]
h100[0]["source"] = SRC_H100 + "; causal: only 512 (163) and 16k (~328) are given, assumed linear in log2(seq) between"
h100[1]["source"] = SRC_H100
out_h100 = {
    "default_kernel": "flash-attention-2",
    "kernels": [{"name": "flash-attention-2",
                 "source": "FlashAttention-2 (Dao-AILab/flash-attention v2) as the paper ran it on H100; FlashAttention-3 "
                           "(Hopper features) is 1.5-2x faster and not modelled",
                 "curves": h100}],
    "note": "head dim 64 takes the head-dim-128 curve (no H100 source); no Triton kernel curve (no H100 source)",
}


def triton_from(fa2_kernel):
    """flash-attn's Triton kernel from measured FlashAttention-2 curves, slowed by the paper's
    section 4.1 speed-ups (an A100 measurement, assumed to carry over: on sm90 both kernels issue
    the Ampere-style mma.sync, the FA2 build without Hopper features and the Triton kernel as the
    pre-MLIR Triton fork llm-foundry v0.3.0 installs, triton_pre_mlir_sm90, compiles it)."""
    curves = []
    for c in fa2_kernel["curves"]:
        pts = [{"seq": p["seq"], "forward": round(p["forward"] / TRITON_FWD, 3),
                "backward": round(p["backward"] / TRITON_BWD, 3)} for p in c["points"]]
        curves.append({"mask": c["mask"], "head_dim": c["head_dim"], "points": pts,
                       "source": "the measured flash-attention-2 curve of the same mask and head dim / 1.4 forward, "
                                 "/ 2 backward; derived by validate/derive_attention_curves.py --measured --triton, not fitted"})
    return {"name": "flash-attn-triton",
            "source": "flash-attn's Triton kernel (llm-foundry v0.3.0 llmfoundry/models/layers/flash_attn_triton.py on "
                      "triton-pre-mlir's sm90 branch; attn_impl triton): the FlashAttention-2 paper's section 4.1 "
                      "speed-ups of FA2 over it on A100 (1.4x forward, 2x backward) applied to this device's measured "
                      "FA2; ASSUMPTION that the ratio carries over to sm90 (no H100 measurement of this kernel found)",
            "curves": curves}


def from_measurement(path, with_triton=False):
    """The profile's object from a measure_attention.py file: its curves as measured, each kernel's
    source naming the GPU, software and date (the profile format has no place for raw rows)."""
    m = json.load(open(path))
    p = m["provenance"]
    where = "measured on %s (driver %s, CUDA %s, PyTorch %s, cuDNN %s) on %s by validate/measure_attention.py" % (
        p["gpu"], p["driver"], p["cuda"], p["torch"], p["cudnn"], p["date"])
    kernels = []
    for k in m["kernels"]:
        curves = []
        for c in k["curves"]:
            curves.append({"mask": c["mask"], "head_dim": c["head_dim"], "points": c["points"],
                           "source": "FlashAttention-2 paper's benchmark setup (bf16, 16k tokens, hidden 2048), "
                                     "forward and forward+backward timed, backward = difference, efficiency = "
                                     "TFLOP/s / %.1f; raw rows in validate/results/" % p["peak_tflops"]})
        kernels.append({"name": k["name"], "source": k["source"] + "; " + where, "curves": curves})
    if with_triton:
        kernels.append(triton_from(kernels[[k["name"] for k in kernels].index("flash-attention-2")]))
    note = ("flash-attention-2 is the default: PyTorch's scaled_dot_product_attention tries its flash "
            "backend before cuDNN's; a scenario names cudnn-attention with training.attention_kernel")
    if with_triton:
        note += ("; flash-attn-triton (derived from the measured flash-attention-2, not measured) is "
                 "llm-foundry's attn_impl triton")
    return {"default_kernel": m["default_kernel"], "kernels": kernels, "note": note}


argv = __import__("sys").argv
if "--measured" in argv:
    print(json.dumps(from_measurement(argv[argv.index("--measured") + 1], "--triton" in argv), indent=1))
elif "--h100" in argv:
    print(json.dumps(out_h100, indent=1))
else:
    print(json.dumps(out, indent=1))

#!/usr/bin/env python3
"""Measures fused-attention kernels on the local GPU through PyTorch's scaled_dot_product_attention
and writes a device profile's "fused_attention" object (the format of topologies/devices/*.json,
read by sim/model/attention_kernel.*).

Method: the FlashAttention-2 paper's benchmark (Dao 2023, arXiv 2307.08691, section 4.1), so the
curves compare with the published ones: bf16, batch x seq = 16k tokens, hidden 2048 (heads =
2048 / head_dim), seq 512..16k, head dim 64 and 128, with and without a causal mask. FLOPs: forward
4 seq^2 head_dim heads batch, halved under a causal mask; backward 2.5x forward (the paper's count).
Each pass is timed with CUDA events over enough calls to last about 100 ms after 3 warm-up calls;
forward alone, then forward+backward, backward = difference. Efficiency = rate / the device's
dense bf16 peak (--peak-tflops, from the device profile).

Backends: 'flash' (PyTorch's FlashAttention-2 kernels, SDPA's first choice on sm80/sm90) and
'cudnn' (cuDNN's fused attention), each written as its own kernel when it runs.
Run on a GPU machine: python3 validate/measure_attention.py --peak-tflops 989.4 --out FILE"""
import argparse
import datetime
import sys

from torch_measurement import cuda_torch, cuda_time_us, driver_version, write_json

SEQ = [512, 1024, 2048, 4096, 8192, 16384]
HEAD_DIMS = [64, 128]
TOKENS = 16384
HIDDEN = 2048


def measure(torch, F, backend, seq, hd, causal):
    heads = HIDDEN // hd
    batch = TOKENS // seq
    shape = (batch, heads, seq, hd)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel([backend]):
        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def fwd_bwd():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            out.backward(grad)

        t_f = cuda_time_us(fwd, torch) / 1e6
        t_fb = cuda_time_us(fwd_bwd, torch) / 1e6
    flops_f = 4.0 * seq * seq * hd * heads * batch * (0.5 if causal else 1.0)
    t_b = max(t_fb - t_f, 1e-9)
    return flops_f / t_f / 1e12, 2.5 * flops_f / t_b / 1e12, 3.5 * flops_f / t_fb / 1e12


def cudnn_version(torch):
    try:
        return str(torch.backends.cudnn.version())
    except RuntimeError as e:  # a mismatched libcudnn on the library path: say which, keep going
        return "unavailable (%s)" % str(e).splitlines()[0][:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peak-tflops", type=float, required=True, help="dense bf16 peak of the device profile")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="seq 1024 and 4096 only (smoke test; never commit)")
    args = ap.parse_args()
    torch = cuda_torch("measure_attention")
    if torch is None:
        return 1
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend
    seqs = [1024, 4096] if args.quick else SEQ
    props = torch.cuda.get_device_properties(0)
    driver = driver_version()
    provenance = {
        "method": "measured" if not args.quick else "measured (quick smoke test: do not commit)",
        "source": "validate/measure_attention.py (PyTorch scaled_dot_product_attention; FlashAttention-2 paper's "
                  "benchmark setup: bf16, 16k tokens, hidden 2048)",
        "date": datetime.date.today().isoformat(),
        "gpu": props.name, "sm_count": props.multi_processor_count, "driver": driver,
        "cuda": torch.version.cuda, "torch": torch.__version__,
        "cudnn": cudnn_version(torch),
        "peak_tflops": args.peak_tflops,
    }
    backends = [("flash-attention-2", SDPBackend.FLASH_ATTENTION,
                 "PyTorch %s SDPA flash backend (FlashAttention-2 kernels built into PyTorch)" % torch.__version__),
                ("cudnn-attention", SDPBackend.CUDNN_ATTENTION,
                 "PyTorch %s SDPA cuDNN backend (cuDNN %s fused attention)" % (torch.__version__,
                                                                               cudnn_version(torch)))]
    kernels, table = [], []
    for name, backend, source in backends:
        curves = []
        try:
            for causal in (True, False):
                for hd in HEAD_DIMS:
                    pts = []
                    for s in seqs:
                        f, b, fb = measure(torch, F, backend, s, hd, causal)
                        table.append((name, "causal" if causal else "none", hd, s, f, b, fb))
                        print("%-18s %-6s hd%-3d seq %5d  fwd %6.1f  bwd %6.1f  fwd+bwd %6.1f TFLOP/s" % table[-1],
                              flush=True)
                        pts.append({"seq": s, "forward": round(f / args.peak_tflops, 3),
                                    "backward": round(b / args.peak_tflops, 3)})
                    curves.append({"mask": "causal" if causal else "none", "head_dim": hd, "points": pts,
                                   "source": "measured on %s, %s: forward and forward+backward timed, backward = "
                                             "difference; efficiency = TFLOP/s / %.1f" % (props.name, provenance["date"],
                                                                                           args.peak_tflops)})
        except RuntimeError as e:  # a backend this GPU/PyTorch cannot run: say so, keep the others
            print("measure_attention: %s skipped: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
            continue
        kernels.append({"name": name, "source": source, "curves": curves})
    out = {"default_kernel": "flash-attention-2", "kernels": kernels, "provenance": provenance,
           "rows": [{"kernel": k, "mask": m, "head_dim": h, "seq": s, "forward_tflops": round(f, 1),
                     "backward_tflops": round(b, 1), "fwd_bwd_tflops": round(fb, 1)}
                    for k, m, h, s, f, b, fb in table]}
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

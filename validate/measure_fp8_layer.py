#!/usr/bin/env python3
"""One Llama-3 8B decoder layer forward+backward with its seven linear layers in bf16 and in FP8,
each eager and under torch.compile: what FP8 training buys at the layer, separated from what
compilation buys (torchtitan's published FP8 row, VALIDATION.md 3.3, turns on both at once).

The FP8 linear follows torchao's float8 "tensorwise" recipe as torchtitan uses it (torchao
float8/float8_linear.py, float8_scaling_utils.py): every call casts the input and the weight to
e4m3 with a dynamic per-tensor scale (amax -> scale -> scaled cast), the forward product runs with
fast accumulation; in backward the output gradient is cast to e5m2, and the data-gradient and
weight-gradient products (full-precision accumulation) take transposed copies of the fp8 weight,
gradient and input, since Hopper's FP8 products want both operands K-major. Eager runs each cast
as separate kernels; torch.compile fuses them, as torchtitan's FP8 row did.
Run on a GPU machine with FP8 tensor cores: python3 validate/measure_fp8_layer.py --out FILE"""
import sys

import llama_layer
from torch_measurement import cuda_torch, failure, measured_provenance, write_json


def fp8_linear_class(torch):
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2

    def cast(t, dtype):
        """t in fp8 with a per-tensor scale from its amax; and the scale's inverse for _scaled_mm."""
        amax = t.abs().amax().float().clamp(min=1e-12)
        scale = torch.finfo(dtype).max / amax
        q = (t.float() * scale).clamp(torch.finfo(dtype).min, torch.finfo(dtype).max).to(dtype)
        return q, scale.reciprocal()

    def mm(a, b_col, sa, sb, fast):  # a row-major, b_col column-major
        return torch._scaled_mm(a, b_col, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast)

    class Fp8Matmul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):  # x [T, in] bf16, w [out, in] bf16
            x8, sx = cast(x, e4m3)
            w8, sw = cast(w, e4m3)
            ctx.save_for_backward(x8, sx, w8, sw)
            return mm(x8, w8.t(), sx, sw, True)  # w8.t(): [in, out], column-major

        @staticmethod
        def backward(ctx, gy):  # gy [T, out]
            x8, sx, w8, sw = ctx.saved_tensors
            g8, sg = cast(gy, e5m2)
            gx = mm(g8, w8.t().contiguous().t(), sg, sw, False)  # [T, out] x [out, in]
            gw = mm(g8.t().contiguous(), x8.t().contiguous().t(), sg, sx, False)  # [out, T] x [T, in]
            return gx, gw

    class Fp8Linear(torch.nn.Module):
        def __init__(self, fan_in, fan_out):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(fan_out, fan_in) / fan_in ** 0.5)

        def forward(self, x):
            return Fp8Matmul.apply(x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)

    return Fp8Linear


def time_layer(torch, F, linear, compiled, seq, batch):
    return llama_layer.time_module(torch, llama_layer.build(torch, F, linear), compiled, seq, batch)


def main():
    args = llama_layer.layer_arguments(__doc__.splitlines()[0])
    torch = cuda_torch("measure_fp8_layer")
    if torch is None:
        return 1
    if torch.cuda.get_device_capability(0) < (8, 9):
        print("measure_fp8_layer: %s has no FP8 tensor cores; nothing measured" % torch.cuda.get_device_name(0))
        return 0
    import torch.nn.functional as F
    linears = {"bf16": lambda i, o: torch.nn.Linear(i, o, bias=False), "fp8": fp8_linear_class(torch)}
    flops = llama_layer.model_flops(args.seq, args.batch)
    rows = []
    for compiled in (False, True):
        for precision, linear in linears.items():
            row = {"linears": precision, "compiled": compiled, "seq": args.seq, "batch": args.batch}
            try:
                tf, tfb = time_layer(torch, F, linear, compiled, args.seq, args.batch)
                row.update({"forward_us": round(tf, 1), "backward_us": round(tfb - tf, 1), "total_us": round(tfb, 1),
                            "model_tflops": round(flops / (tfb / 1e6) / 1e12, 1)})
            except Exception as e:  # a failed variant is recorded, the others still run
                row["error"] = failure(e)
            print(row, flush=True)
            rows.append(row)
            torch._dynamo.reset()
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/measure_fp8_layer.py"),
                          "layer": "Llama-3 8B (hidden 4096, 32 heads, 8 KV heads, FFN 14336)",
                          "model_flops": flops, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""FP8 GEMM rates on this GPU, for a device profile's fp8 calibration: what an FP8 training recipe
(Transformer Engine, torchao float8) gets from its linear layers' matrix products.

For every batch-1 bf16 shape of an existing kernel calibration (--shapes-from, written by
`trainsim-validate kernels`), times torch._scaled_mm with both operands in float8_e4m3fn, per-tensor
fp32 scales and a bf16 output (the "TN" layout Hopper's FP8 tensor cores require: A row-major m x k,
B column-major k x n), with full-precision accumulation and, beside it, fast accumulation
(use_fast_accum: what Transformer Engine and torchao use for the forward product), each replayed from
a CUDA graph so the host's issue time is not timed; and, in the same run, torch.matmul in bf16 on the same shapes and layout, so
the fp8/bf16 ratio is measured under the same clocks and library. Shapes with k or n not a multiple of
16 (FP8's alignment rule) are skipped and listed. Also:
 - the cast of a bf16 tensor to float8_e4m3fn (one eager kernel, 2 B read + 1 B written per element)
   at 64 Mi elements: the streaming rate of the casts FP8 recipes add;
 - the 8192^3 FP8 product held back to back for --sustained-s seconds, windows of about one second
   with the SM clock and power after each: FP8 draws more power than bf16, so its sustained share of
   the burst rate is its own (the profile's sustained_compute is the bf16 one).
Writes --out (trainsim.kernel_calibration/1, fp8 gemm entries and the cast sample, provenance
"measured"), --fast-accum-out where given (the same format, the fast-accumulation rates) and --side-out (the bf16 rates of the same run, the skipped shapes, the sustained windows).
Run on a GPU machine: python3 validate/measure_fp8_gemm.py --shapes-from CAL --out FILE --side-out FILE"""
import argparse
import json

from torch_measurement import cuda_time_us, cuda_torch, held_rate_windows, measured_provenance, nvidia_smi, write_json


def operands(torch, m, n, k, dtype):
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    bt = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    if dtype == "fp8":
        a, bt = a.to(torch.float8_e4m3fn), bt.to(torch.float8_e4m3fn)
    return a, bt.t()  # B is k x n, column-major


def product(torch, a, b, dtype, fast_accum=False):
    if dtype == "bf16":
        return lambda: torch.matmul(a, b)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast_accum)


def graph_time_us(fn, torch, target_ms=20.0):
    """Microseconds per call of fn() replayed from a CUDA graph: an eager loop of small products is
    bound by the host's issue time (tens of us per call from Python), which a graph removes, as
    cuBLASLt called from C++ back to back (trainsim-validate kernels) has it removed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    eager_us = cuda_time_us(fn, torch, min_ms=5.0, warmup=1)  # an upper bound on the GPU time
    reps = max(5, min(2000, int(target_ms * 1e3 / eager_us)))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()  # each output is dropped at once, so the graph's pool reuses its memory
    return cuda_time_us(graph.replay, torch, min_ms=50.0, warmup=2) / reps


def gemm_tflops(torch, m, n, k, dtype, fast_accum=False):
    a, b = operands(torch, m, n, k, dtype)
    us = graph_time_us(product(torch, a, b, dtype, fast_accum), torch)
    del a, b
    return 2.0 * m * n * k / (us * 1e-6) / 1e12


def cast_sample(torch, elements=64 << 20):
    x = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
    us = cuda_time_us(lambda: x.to(torch.float8_e4m3fn), torch, min_ms=50.0)
    return {"name": "cast_to_fp8", "bytes": 3.0 * elements, "time_us": round(us, 2)}


def sustained(torch, seconds, size=8192):
    a, b = operands(torch, size, size, size, "fp8")
    fn = product(torch, a, b, "fp8")
    flops = 2.0 * size ** 3
    burst = flops / (cuda_time_us(fn, torch, min_ms=50.0, warmup=5) * 1e-6) / 1e12
    windows = held_rate_windows(fn, torch, flops, seconds, "fp8 %d^3" % size)
    late = [w["tflops"] for w in windows if w["t_s"] > seconds / 2] or [w["tflops"] for w in windows]
    return {"m": size, "n": size, "k": size, "dtype": "fp8", "burst_tflops": round(burst, 1),
            "sustained_tflops": round(sum(late) / len(late), 1),
            "note": "sustained = mean of the windows in the second half of the run", "windows": windows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes-from", required=True, help="a kernel calibration whose bf16 batch-1 shapes to time")
    ap.add_argument("--out", required=True)
    ap.add_argument("--side-out", required=True)
    ap.add_argument("--fast-accum-out", help="also a calibration file of the fast-accumulation rates (the forward "
                                             "product of Transformer Engine and torchao)")
    ap.add_argument("--sustained-s", type=float, default=20.0)
    args = ap.parse_args()
    torch = cuda_torch("measure_fp8_gemm")
    if torch is None:
        return 1
    if torch.cuda.get_device_capability(0) < (8, 9):  # FP8 tensor cores: Ada and Hopper onwards
        print("measure_fp8_gemm: %s has no FP8 tensor cores; nothing measured" % torch.cuda.get_device_name(0))
        return 0
    with open(args.shapes_from) as fh:
        shapes = [(int(g["m"]), int(g["n"]), int(g["k"])) for g in json.load(fh)["gemm"]
                  if g["dtype"] == "bf16" and int(g.get("batch", 1)) == 1]
    gemm, fast_accum, bf16, skipped = [], [], [], []
    for m, n, k in shapes:
        if k % 16 or n % 16:
            skipped.append({"m": m, "n": n, "k": k})
            continue
        f8 = gemm_tflops(torch, m, n, k, "fp8")
        fast = gemm_tflops(torch, m, n, k, "fp8", fast_accum=True)
        b16 = gemm_tflops(torch, m, n, k, "bf16")
        gemm.append({"dtype": "fp8", "m": m, "n": n, "k": k, "batch": 1, "tflops": round(f8, 2)})
        fast_accum.append({"dtype": "fp8", "m": m, "n": n, "k": k, "batch": 1, "tflops": round(fast, 2)})
        bf16.append({"dtype": "bf16", "m": m, "n": n, "k": k, "batch": 1, "tflops": round(b16, 2)})
        print("%6d x %6d x %6d  fp8 %7.1f  fast-accum %7.1f  bf16 %6.1f  ratio %.2f" % (m, n, k, f8, fast, b16, f8 / b16),
              flush=True)
    cast = cast_sample(torch)
    print("cast bf16 -> fp8 at 64 Mi elements: %.1f us, %.0f GB/s" % (cast["time_us"], cast["bytes"] / cast["time_us"] / 1e3))
    held = sustained(torch, args.sustained_s) if args.sustained_s > 0 else None
    prov = measured_provenance(torch, "validate/measure_fp8_gemm.py (torch._scaled_mm, float8_e4m3fn x float8_e4m3fn -> bf16, per-tensor scales, TN layout)")
    name, clock = (nvidia_smi("name,clocks.max.sm") + ["", ""])[:2]
    prov["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
    if clock:
        prov["sm_clock_mhz"] = float(clock)
    torch_version = prov.pop("torch")  # the calibration schema has no field for it: in the note
    prov["note"] = ("PyTorch " + torch_version + "; burst rates, each product replayed from a CUDA graph (no host "
                    "issue time), CUDA events over >= 50 ms per shape; accumulation in full precision "
                    "(use_fast_accum off; the fast-accumulation rates are in the side file); shapes are the bf16 "
                    "batch-1 shapes of " + args.shapes_from)
    write_json(args.out, {"schema": "trainsim.kernel_calibration/1", "provenance": prov, "gemm": gemm,
                          "elementwise": [cast]})
    if args.fast_accum_out:
        fast_prov = dict(prov, note=prov["note"].replace("accumulation in full precision (use_fast_accum off; the "
                                                         "fast-accumulation rates are in the side file)",
                                                         "fast accumulation (use_fast_accum on, as Transformer Engine's "
                                                         "and torchao's forward product runs)"))
        # Each sample says its accumulation: the device profile needs the two fp8 curves apart.
        write_json(args.fast_accum_out, {"schema": "trainsim.kernel_calibration/1", "provenance": fast_prov,
                                         "gemm": [dict(g, accumulation="fast") for g in fast_accum]})
    write_json(args.side_out, {"provenance": prov, "bf16_same_run": bf16, "fp8_fast_accum_same_run": fast_accum, "skipped_alignment": skipped,
                               "sustained_fp8": held})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""One MPT block forward and backward as llm-foundry's H100 tables ran it, at every (d_model,
heads, seq, micro-batch) of scenarios/llmfoundry-fsdp-h100.json's BF16 rows; and the same block
beside a kernel that holds K SMs of the GPU, as a NCCL ring kernel does during FSDP's
all_gather / reduce_scatter.

Why: the simulator's isolated MPT layer (module_kernels "mpt", flash attention) had never been
set beside a measured one, and the communication-heavy rows (13B seq 2048 micro-batch 2 on 8-64
H100s, +16..+18%) are over-predicted by a constant ~0.13 s per step. The first part says whether
the layer itself is right on this GPU; the second how much a K-CTA side kernel slows the layer's
kernels, against the engine's model (an NCCL kernel holds `channels` SMs, engine/
program_executor.cpp hold_sms; its HBM traffic shares the HBM link, model/nccl_memory_traffic.hpp).

The block (llm-foundry b2a43a147 llmfoundry/models/mpt/modeling_mpt.py MPTBlock, with the
benchmark runs' biases, see the scenario's model source): x + out_proj(attn(Wqkv(LN1(x)))), then
+ down_proj(GELU(up_proj(LN2(.)))), expansion 4, no dropout, LN as llm-foundry's
low_precision_layernorm (bf16 with autocast off); parameters in bf16 (FSDP MixedPrecision
DEFAULT's param_dtype) under torch.autocast(bf16). Attention: PyTorch's
scaled_dot_product_attention, causal, each shape once with the cuDNN backend and once with the
flash (FlashAttention-2) backend; llm-foundry's rows ran its Triton flash attention (2022), which
does not build on today's Triton, so the attention kernel is the one part not checked here. No FSDP here: the simulator's
side is its isolated layer (validate/mpt_block_accuracy.py).

Side kernels (CuPy, one block of 512 threads per CTA, as NCCL's simple-protocol kernels):
  - spin: holds its SMs without touching memory (the SM share alone);
  - copy: a grid-stride device-to-device copy of a 256 MiB buffer (the SMs and HBM traffic).
Each runs until a clock deadline set a little past the timed compute loop.
Run on a GPU machine: python3 validate/measure_mpt_block.py --out FILE [--quick]"""
import argparse
import json
import os
import sys
import time

from torch_measurement import cuda_torch, events_ms, failure, measured_provenance, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "scenarios", "llmfoundry-fsdp-h100.json")
SPIN_CTAS = (1, 2, 4, 8, 12, 16, 24, 32)
COPY_CTAS = (8, 16, 24, 32)
ATTENTION = ("cudnn", "flash")  # SDPA backends: cuDNN (PyTorch 2.11's choice here), FlashAttention-2
INTERFERENCE_SHAPES = ((5120, 40, 2048, 2), (8192, 64, 2048, 2))  # 13B and 70B micro-batch 2
PROFILED_SHAPES = ((5120, 40, 2048, 2), (8192, 64, 2048, 2), (7168, 56, 8192, 1), (1536, 12, 512, 96))

SIDE_SOURCE = r"""
extern "C" __global__ void spin_until(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
extern "C" __global__ void copy_until(const float4* __restrict__ src, float4* __restrict__ dst,
                                      long long n, long long cycles, unsigned long long* bytes) {
  long long t0 = clock64();
  long long passes = 0;
  while (clock64() - t0 < cycles) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
      dst[i] = src[i];
    ++passes;
  }
  if (threadIdx.x == 0) atomicAdd(bytes, (unsigned long long)(passes * (n / gridDim.x) * 32));
}
"""


def bf16_shapes():
    """(d_model, heads, seq, micro_batch) of every BF16 row of the H100 scenario, sorted."""
    with open(SCENARIO) as fh:
        doc = json.load(fh)
    shapes = set()
    for p in doc["points"]:
        model = dict(doc["model"], **p.get("model", {}))
        training = dict(doc["training"], **p.get("training", {}))
        if training.get("linear_precision", "bf16") != "bf16":
            continue
        shapes.add((model["hidden"], model["heads"], model["seq_len"], training["micro_batch"]))
    return sorted(shapes)


def make_block(torch, d, heads, attention, split="chunk"):
    """split: how q, k, v come out of Wqkv's output. "select" (the first committed rows, before
    session 19's op-level check found it is not llm-foundry's code: its backward fills, copies and
    adds three qkv-sized gradients): a [b, s, 3, heads, d_head] view indexed per part; "chunk"
    (the default): llm-foundry's qkv.chunk(3, dim=2)
    (llmfoundry/models/layers/attention.py, v0.3.0), each part viewed [b, s, heads, d_head]."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[attention]

    class LPLayerNorm(torch.nn.LayerNorm):
        """llm-foundry's low_precision_layernorm (MPT's default norm_type): layer_norm in the
        autocast dtype with autocast off, where torch.nn.LayerNorm under autocast runs in fp32."""

        def forward(self, x):
            with torch.autocast("cuda", enabled=False):
                return F.layer_norm(x.to(torch.bfloat16), self.normalized_shape, self.weight.to(torch.bfloat16),
                                    self.bias.to(torch.bfloat16), self.eps)

    class MPTBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm_1 = LPLayerNorm(d)
            self.Wqkv = torch.nn.Linear(d, 3 * d)
            self.out_proj = torch.nn.Linear(d, d)
            self.norm_2 = LPLayerNorm(d)
            self.up_proj = torch.nn.Linear(d, 4 * d)
            self.down_proj = torch.nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, _ = x.shape
            if split == "chunk":
                q, k, v = (t.view(b, s, heads, d // heads).transpose(1, 2)
                           for t in self.Wqkv(self.norm_1(x)).chunk(3, dim=2))
            else:
                qkv = self.Wqkv(self.norm_1(x)).view(b, s, 3, heads, d // heads)
                q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
            with sdpa_kernel(backend):
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out_proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.down_proj(F.gelu(self.up_proj(self.norm_2(x))))

    return MPTBlock().to(device="cuda", dtype=torch.bfloat16)


class Case:
    """One shape's block, input and output gradient, and its forward / step callables."""

    def __init__(self, torch, d, heads, seq, mb, attention="cudnn", split="chunk"):
        self.torch = torch
        self.block = make_block(torch, d, heads, attention, split)
        self.split = split
        self.x = torch.randn(mb, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        self.g = torch.randn(mb, seq, d, device="cuda", dtype=torch.bfloat16)
        self.flops_fwd = 2 * mb * seq * 12 * d * d + 2 * mb * seq * seq * d  # GEMMs + causal QK^T, PV

    def forward(self):
        torch = self.torch
        with torch.autocast("cuda", dtype=torch.bfloat16), torch.no_grad():
            self.block(self.x)

    def step(self):
        torch = self.torch
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = self.block(self.x)
        y.backward(self.g)
        self.x.grad = None
        for p in self.block.parameters():
            p.grad = None


def timed_ms(torch, fn, iters, warmup=3):
    return events_ms(torch, fn, iters, warmup)


TARGET_MS = 100.0  # timed loop length per measurement (--target-ms)


def iterations_for(torch, fn, target_ms=None):
    target_ms = TARGET_MS if target_ms is None else target_ms
    return max(5, int(target_ms / max(timed_ms(torch, fn, 1, warmup=2), 1e-3)))


def measure_shape(torch, d, heads, seq, mb, attention):
    case = Case(torch, d, heads, seq, mb, attention)
    fwd_ms = timed_ms(torch, case.forward, iterations_for(torch, case.forward))
    # A forward with autograd recording saves what the backward reads; the step's forward is that
    # one, so backward = step - forward(with grad) is taken with its own forward timed alike.
    def forward_grad():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            case.block(case.x)
    fwd_grad_ms = timed_ms(torch, forward_grad, iterations_for(torch, forward_grad))
    step_ms = timed_ms(torch, case.step, iterations_for(torch, case.step))
    row = {"hidden": d, "heads": heads, "seq_len": seq, "micro_batch": mb, "attention": attention,
           "split": case.split,
           "forward_ms": round(fwd_ms, 4), "forward_with_grad_ms": round(fwd_grad_ms, 4),
           "step_ms": round(step_ms, 4), "backward_ms": round(step_ms - fwd_grad_ms, 4),
           "forward_tflops": round(case.flops_fwd / (fwd_ms / 1e3) / 1e12, 1),
           "step_tflops": round(3 * case.flops_fwd / (step_ms / 1e3) / 1e12, 1)}
    print("%s d %5d h %3d seq %6d mb %3d: fwd %8.3f ms (%5.1f TF/s), fwd+grad %8.3f, step %8.3f ms (%5.1f TF/s), bwd %8.3f ms" %
          (attention, d, heads, seq, mb, fwd_ms, row["forward_tflops"], fwd_grad_ms, step_ms, row["step_tflops"], row["backward_ms"]),
          flush=True)
    del case
    torch.cuda.empty_cache()
    return row


def profile_shape(torch, d, heads, seq, mb):
    """Per kernel class (profile_torch_layers.kernel_class) device us of one step, forward apart."""
    from profile_torch_layers import profiled_kernel_table
    case = Case(torch, d, heads, seq, mb)
    for _ in range(3):
        case.step()
    torch.cuda.synchronize()
    out = {"hidden": d, "heads": heads, "seq_len": seq, "micro_batch": mb}
    for label, fn in (("forward", case.forward), ("step", case.step)):
        klist, classes = profiled_kernel_table(torch, fn, 3, name_chars=120)
        out[label] = {"classes": classes, "kernels": klist}
        print("profile d %d seq %d mb %d %s: %s" % (d, seq, mb, label,
              ", ".join("%s %.0f us" % (c, v["us"]) for c, v in sorted(classes.items()))), flush=True)
    del case
    torch.cuda.empty_cache()
    return out


def external_stream(cupy, torch_stream):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(torch_stream.cuda_stream)


class SideKernel:
    """A spin or copy kernel of K CTAs x 512 threads (SIDE_SOURCE) on a stream of its own, run
    until a clock deadline, between two CUDA events on that stream."""

    def __init__(self, torch):
        import cupy
        self.torch, self.cupy = torch, cupy
        module = cupy.RawModule(code=SIDE_SOURCE)
        self.spin, self.copy = module.get_function("spin_until"), module.get_function("copy_until")
        self.clock_hz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
        self.n = (256 << 20) // 16  # float4 elements of the copy's 256 MiB buffers
        self.src = cupy.ones(self.n * 4, dtype=cupy.float32)
        self.dst = cupy.zeros(self.n * 4, dtype=cupy.float32)
        self.counter = cupy.zeros(1, dtype=cupy.uint64)
        self.stream = torch.cuda.Stream()
        self.ext = external_stream(cupy, self.stream)

    def launch(self, kind, ctas, seconds):
        torch, cupy = self.torch, self.cupy
        cycles = cupy.int64(int(seconds * self.clock_hz))
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            self.start.record()
            with self.ext:
                if kind == "spin":
                    self.spin((ctas,), (512,), (cycles,))
                else:
                    self.counter.fill(0)
                    self.copy((ctas,), (512,), (self.src, self.dst, cupy.int64(self.n), cycles, self.counter))
            self.end.record()

    def elapsed_ms(self):
        """The last launch's time (after a synchronize)."""
        return self.start.elapsed_time(self.end)

    def copied_gbps(self):
        """The last copy's bytes read and written per second over its run (after a synchronize)."""
        return float(self.counter.get()[0]) / (self.elapsed_ms() / 1e3) / 1e9


def interference(torch, d, heads, seq, mb):
    """The block's step alone, then beside a spin / copy kernel of K CTAs on another stream."""
    side = SideKernel(torch)
    case = Case(torch, d, heads, seq, mb)
    iters = iterations_for(torch, case.step, target_ms=300.0)
    alone = timed_ms(torch, case.step, iters)
    rows = [{"side": "none", "ctas": 0, "step_ms": round(alone, 4)}]
    for kind, ctas_list in (("spin", SPIN_CTAS), ("copy", COPY_CTAS)):
        for ctas in ctas_list:
            # copy alone: its rate with these CTAs
            alone_rate = None
            if kind == "copy":
                torch.cuda.synchronize()
                side.launch(kind, ctas, 0.05)
                torch.cuda.synchronize()
                alone_rate = side.copied_gbps()
            torch.cuda.synchronize()
            for _ in range(2):
                case.step()
            torch.cuda.synchronize()
            side.launch(kind, ctas, alone * iters / 1e3 * 1.3 + 0.01)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(iters):
                case.step()
            e.record()
            torch.cuda.synchronize()
            step = s.elapsed_time(e) / iters
            side_ms = side.elapsed_ms()
            row = {"side": kind, "ctas": ctas, "step_ms": round(step, 4),
                   "slowdown": round(step / alone, 4), "side_ms": round(side_ms, 1),
                   "compute_ms": round(step * iters, 1)}
            if kind == "copy":
                row["copy_alone_gbps"] = round(alone_rate, 1)
                row["copy_beside_gbps"] = round(side.copied_gbps(), 1)
            if side_ms < step * iters:
                row["warning"] = "side kernel ended before the compute loop"
            rows.append(row)
            print("d %d seq %d mb %d beside %s x %d CTAs: step %.3f ms (x%.3f)%s" % (
                d, seq, mb, kind, ctas, step, step / alone,
                "; copy %.0f GB/s alone, %.0f beside" % (row["copy_alone_gbps"], row["copy_beside_gbps"]) if kind == "copy" else ""),
                flush=True)
    del case
    torch.cuda.empty_cache()
    return {"hidden": d, "heads": heads, "seq_len": seq, "micro_batch": mb, "iterations": iters, "rows": rows}


def class_times(torch, fn, steps=3):
    """Device us per kernel class (profile_torch_layers.kernel_class) of one fn() call, the side
    kernels left out."""
    from profile_torch_layers import profiled_kernel_table
    _, classes = profiled_kernel_table(torch, fn, steps, skip=lambda name: name.endswith("_until"))
    return {c: v["us"] for c, v in sorted(classes.items())}


def interference_by_class(torch, d, heads, seq, mb, kinds=("spin",)):
    """Per kernel class, the block's step kernels' device time beside a spin or copy kernel of K
    CTAs (copy: its achieved GB/s beside them too)."""
    side = SideKernel(torch)
    case = Case(torch, d, heads, seq, mb)
    for _ in range(3):
        case.step()
    alone_ms = timed_ms(torch, case.step, 10)
    rows = []
    for kind in kinds:
        for ctas in (0,) + (SPIN_CTAS if kind == "spin" else COPY_CTAS):
            torch.cuda.synchronize()
            row = {"side": kind, "ctas": ctas}
            if ctas:
                side.launch(kind, ctas, alone_ms * 3 * 4 / 1e3 + 0.2)
            row["classes_us"] = class_times(torch, case.step)
            torch.cuda.synchronize()
            if ctas and kind == "copy":
                row["copy_gbps"] = round(side.copied_gbps(), 1)
            rows.append(row)
            print("d %d seq %d mb %d beside %s x %d CTAs, per class: %s%s" % (
                d, seq, mb, kind, ctas, ", ".join("%s %.0f us" % kv for kv in row["classes_us"].items()),
                "; copy %.0f GB/s over its run" % row["copy_gbps"] if "copy_gbps" in row else ""), flush=True)
    del case
    torch.cuda.empty_cache()
    return {"hidden": d, "heads": heads, "seq_len": seq, "micro_batch": mb, "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="two shapes, no profile, one interference shape")
    ap.add_argument("--target-ms", type=float, default=TARGET_MS, help="timed loop length per measurement")
    ap.add_argument("--parts", default="shapes,profiles,interference,by_class",
                    help="which parts to run (by_class_copy: only the copy side kernel by class)")
    args = ap.parse_args()
    torch = cuda_torch("measure_mpt_block")
    if torch is None:
        return 1
    sys.path.insert(0, HERE)
    shapes = bf16_shapes()
    if args.quick:
        shapes = [s for s in shapes if s in INTERFERENCE_SHAPES[:1]] + shapes[:1]
    doc = {"provenance": measured_provenance(torch, "validate/measure_mpt_block.py"),
           "note": "per block; forward under no_grad, backward = step - forward with autograd; "
                   "TF/s counts 24 d^2 + 2 seq d (causal attention) FLOPs per token forward, x3 per step",
           "shapes": [], "profiles": [], "interference": [], "interference_by_class": []}
    parts = args.parts.split(",")
    globals()["TARGET_MS"] = args.target_ms
    # Clocks and caches settle before the first timed shape (a fresh machine's first row ran slow).
    warm = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t_end = time.time() + 3.0
    while time.time() < t_end:
        for _ in range(20):
            warm @ warm
        torch.cuda.synchronize()
    del warm
    for s, attention in [(s, a) for a in ATTENTION for s in shapes] if "shapes" in parts else []:
        try:
            doc["shapes"].append(measure_shape(torch, *s, attention))
        except Exception as e:  # noqa: BLE001 - one shape's failure (OOM) is recorded, not fatal
            doc["shapes"].append({"hidden": s[0], "heads": s[1], "seq_len": s[2], "micro_batch": s[3],
                                  "attention": attention, "error": failure(e)})
            print("shape %s failed: %s" % (s, failure(e)), flush=True)
            torch.cuda.empty_cache()
        write_json(args.out, doc)
    for s in ([] if args.quick or "profiles" not in parts else PROFILED_SHAPES):
        try:
            doc["profiles"].append(profile_shape(torch, *s))
        except Exception as e:  # noqa: BLE001
            doc["profiles"].append({"shape": list(s), "error": failure(e)})
            print("profile %s failed: %s" % (s, failure(e)), flush=True)
        write_json(args.out, doc)
    for s in [] if "interference" not in parts else INTERFERENCE_SHAPES[:1] if args.quick else INTERFERENCE_SHAPES:
        try:
            doc["interference"].append(interference(torch, *s))
        except Exception as e:  # noqa: BLE001
            doc["interference"].append({"shape": list(s), "error": failure(e)})
            print("interference %s failed: %s" % (s, failure(e)), flush=True)
        write_json(args.out, doc)
    for s in [] if "by_class" not in parts else INTERFERENCE_SHAPES:
        try:
            doc["interference_by_class"].append(interference_by_class(torch, *s, kinds=("spin", "copy")))
        except Exception as e:  # noqa: BLE001
            doc["interference_by_class"].append({"shape": list(s), "error": failure(e)})
            print("interference by class %s failed: %s" % (s, failure(e)), flush=True)
        write_json(args.out, doc)
    for s in [] if "by_class_copy" not in parts else INTERFERENCE_SHAPES:
        try:
            doc["interference_by_class"].append(interference_by_class(torch, *s, kinds=("copy",)))
        except Exception as e:  # noqa: BLE001
            doc["interference_by_class"].append({"shape": list(s), "error": failure(e)})
            print("interference by class %s failed: %s" % (s, failure(e)), flush=True)
        write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

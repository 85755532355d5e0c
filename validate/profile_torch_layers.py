#!/usr/bin/env python3
"""Where does an eager PyTorch layer's time go, kernel by kernel? For the layers of
measure_torch_ops.py (post-layer-norm, bf16, dropout 0.1; unfused or SDPA-flash attention) the
torch profiler records a few forward+backward steps; the result lists, per step:
- every CUDA kernel (name, calls, device microseconds), each put in a class (gemm, attention,
  elementwise, reduction, copy, other) by its name;
- every aten op with its input shapes and the device time of the kernels it launched, so that a
  GEMM's time can be set beside what the simulator predicts for that M x N x K and layout;
- the kernels launched per step and the host time to issue one step (as probe_host_bound.py), so
  a host cost per kernel launch can be read off;
- the host time to issue a forward alone, with autograd recording and under torch.no_grad() (as
  measure_torch_ops.py times the forward), and the memsets among the kernels: whether a forward
  kernel (Python module code) costs the host more than a backward one (autograd's C++ engine),
  which trainsim's one eager_kernel_issue does not distinguish.
The layers are the same as those whose totals measure_torch_ops.py measured; the trainsim side is
trainsim-framework-layers. Run on a GPU machine:
  python3 validate/profile_torch_layers.py --out FILE [--models gpt-7.5b,...]"""
import argparse
import re
import sys
import time

from torch_measurement import cuda_torch, measured_provenance, write_json

STEPS = 3


def kernel_class(name):
    n = name.lower()
    if "flash" in n or "fmha" in n:
        return "attention"
    if re.search(r"gemm|cutlass|xmma|nvjet|cublas|sm90_|sm80_|ampere_|hopper", n):
        return "gemm"
    if "reduce" in n or "norm" in n or "softmax" in n:
        return "reduction"
    if "copy" in n or "memcpy" in n or "memset" in n or "cat" in n:
        return "copy"
    if "elementwise" in n or "vectorized" in n or "fused_dropout" in n or "philox" in n:
        return "elementwise"
    return "other"


def kernel_table(events, steps, name_chars=160, skip=lambda name: False):
    """The CUDA kernels among a torch profiler's events, per step: a list of {name, class, calls,
    us} (largest first; names cut to `name_chars`, us rounded to 0.1) and the sums per class
    ({class: {calls, us}}). `skip(name)` leaves kernels out (another stream's side kernels)."""
    kernels = {}
    for e in events:
        dev = getattr(e, "device_type", None)
        if dev is None or "CUDA" not in str(dev) or skip(e.name):
            continue
        k = kernels.setdefault(e.name, {"name": e.name[:name_chars], "class": kernel_class(e.name), "calls": 0, "us": 0.0})
        k["calls"] += 1
        k["us"] += float(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0))
    klist = sorted(kernels.values(), key=lambda k: -k["us"])
    classes = {}
    for k in klist:
        k["calls"] = k["calls"] / steps
        k["us"] = round(k["us"] / steps, 1)
        c = classes.setdefault(k["class"], {"calls": 0.0, "us": 0.0})
        c["calls"] += k["calls"]
        c["us"] = round(c["us"] + k["us"], 1)
    return klist, classes


def profiled_kernel_table(torch, fn, steps, name_chars=160, skip=lambda name: False):
    """kernel_table of `steps` calls of fn() under the torch profiler (CUDA activity only)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    return kernel_table(prof.events(), steps, name_chars, skip)


def device_us(evt):
    for attr in ("device_time_total", "cuda_time_total"):
        if hasattr(evt, attr):
            return float(getattr(evt, attr))
    return 0.0


def self_device_us(evt):
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(evt, attr):
            return float(getattr(evt, attr))
    return 0.0


def profile_layer(torch, layer, x, g):
    from torch.profiler import ProfilerActivity, profile

    def step():
        layer(x).backward(g)
        x.grad = None
        for p in layer.parameters():
            p.grad = None
    def issue_us(fn):
        """Median over 5 rounds of the host time to issue fn() (STEPS calls after a synchronize)."""
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(STEPS):
                fn()
            times.append((time.perf_counter() - t0) / STEPS * 1e6)
            torch.cuda.synchronize()
        return sorted(times)[len(times) // 2]
    for _ in range(3):
        step()
    issue = issue_us(step)

    def forward_with_grad():
        layer(x)

    def forward_no_grad():
        with torch.no_grad():
            layer(x)
    forward_host = issue_us(forward_with_grad)
    forward_host_no_grad = issue_us(forward_no_grad)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as fprof:
        for _ in range(STEPS):
            forward_with_grad()
        torch.cuda.synchronize()
    forward_kernels = sum(1 for e in fprof.events()
                          if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type)) / STEPS
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(STEPS):
            step()
        torch.cuda.synchronize()
    klist, classes = kernel_table(prof.events(), STEPS)
    ops = []
    for evt in prof.key_averages(group_by_input_shape=True):
        if not evt.key.startswith("aten::"):
            continue
        self_us = self_device_us(evt)
        if self_us <= 0.0:
            continue
        ops.append({"op": evt.key, "shapes": str(evt.input_shapes)[:200], "calls": evt.count / STEPS,
                    "self_device_us": round(self_us / STEPS, 1), "device_us": round(device_us(evt) / STEPS, 1)})
    ops.sort(key=lambda o: -o["self_device_us"])
    launches = sum(k["calls"] for k in klist)
    return {"kernels_per_step": launches, "device_us_per_step": round(sum(k["us"] for k in klist), 1),
            "host_issue_us_per_step": round(issue, 1),
            "host_us_per_kernel": round(issue / launches, 2) if launches else None,
            "memsets_per_step": sum(k["calls"] for k in klist if k["name"].startswith("Memset")),
            "forward_kernels": forward_kernels,
            "host_issue_forward_us": round(forward_host, 1),
            "host_issue_forward_no_grad_us": round(forward_host_no_grad, 1),
            "classes": classes, "kernels": klist, "aten_ops": ops}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="")
    args = ap.parse_args()
    torch = cuda_torch("profile_torch_layers")
    if torch is None:
        return 1
    import torch.nn.functional as F
    import measure_torch_ops as ops
    torch.manual_seed(0)
    Layer = ops.layer_class(torch, F)
    wanted = [m for m in args.models.split(",") if m] or list(ops.MODELS)
    rows = []
    for name in wanted:
        h, a, s, bsz = ops.MODELS[name]
        for flash in (False, True):
            layer = Layer(h, a, flash).cuda().to(torch.bfloat16)
            x = torch.randn((s, bsz, h), device="cuda", dtype=torch.bfloat16, requires_grad=True)
            g = torch.randn_like(x)
            row = {"model": name, "attention": "sdpa-flash" if flash else "unfused"}
            row.update(profile_layer(torch, layer, x, g))
            rows.append(row)
            print("%-10s %-10s %6.0f kernels/step, device %9.1f us, host issue %9.1f us (%.1f us per kernel)" %
                  (name, row["attention"], row["kernels_per_step"], row["device_us_per_step"],
                   row["host_issue_us_per_step"], row["host_us_per_kernel"] or 0), flush=True)
            for c, v in sorted(row["classes"].items(), key=lambda kv: -kv[1]["us"]):
                print("    %-12s %6.0f calls %10.1f us" % (c, v["calls"], v["us"]), flush=True)
            for o in row["aten_ops"][:14]:
                print("    %-28s %6.1f calls %10.1f us  %s" % (o["op"], o["calls"], o["self_device_us"], o["shapes"][:90]))
            del layer, x, g
            torch.cuda.empty_cache()
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/profile_torch_layers.py"),
                          "note": "per forward+backward step, mean over %d profiled steps" % STEPS,
                          "layers": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Is an eager PyTorch layer GPU-bound or host-bound? For the layers of measure_torch_ops.py:
the GPU time of one forward+backward (CUDA events over many, as measured before) against the host
time to issue one: after a synchronize, the host issues 3 steps (a few hundred kernels, well
inside the launch queue, so the host never waits for the GPU) and the wall time of that, divided
by 3, is what Python, autograd and dispatch cost per step. Host time near the GPU time means the
GPU waits for the host, which a kernel-level model does not see.
Run on a GPU machine: python3 validate/probe_host_bound.py --out FILE"""
import argparse
import sys
import time

from torch_measurement import cuda_torch, cuda_time_us, measured_provenance, write_json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("probe_host_bound")
    if torch is None:
        return 1
    import measure_torch_ops as ops
    Layer = ops.layer_class(torch, torch.nn.functional)
    rows = []
    for name, (h, a, s, bsz) in ops.MODELS.items():
        for flash in (False, True):
            layer = Layer(h, a, flash).cuda().to(torch.bfloat16)
            x = torch.randn((s, bsz, h), device="cuda", dtype=torch.bfloat16, requires_grad=True)
            g = torch.randn_like(x)

            def step():
                layer(x).backward(g)
                x.grad = None
                for p in layer.parameters():
                    p.grad = None
            gpu = cuda_time_us(step, torch)
            host = []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(3):
                    step()
                host.append((time.perf_counter() - t0) / 3 * 1e6)
            torch.cuda.synchronize()
            issue = sorted(host)[len(host) // 2]
            rows.append({"model": name, "attention": "sdpa-flash" if flash else "unfused",
                         "gpu_us": round(gpu, 1), "host_issue_us": round(issue, 1),
                         "host_over_gpu": round(issue / gpu, 3)})
            print("%-10s %-10s GPU %9.1f us per step, host issues one in %9.1f us (%.0f%%)" %
                  (name, rows[-1]["attention"], gpu, issue, 100 * issue / gpu), flush=True)
            del layer, x, g
            torch.cuda.empty_cache()
    write_json(args.out, {"provenance": measured_provenance(torch, "validate/probe_host_bound.py"),
                          "layers": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measures what PyTorch itself runs on the local GPU, beside trainsim-validate's own kernels:
memory-bound operations at the harness's size, and whole transformer layers forward and backward.

Why: trainsim-validate times the project's CUDA kernels (kernels/), which are plain one-pass
kernels; a training job runs PyTorch's (or apex's) kernels. The two sets of rates show how far the
simulator's single streaming-bandwidth model is from each.

1. Memory-bound ops on 64 Mi bf16 elements (rows of 4096; softmax rows of 1024), as
   trainsim-validate: layer_norm, gelu, softmax, dropout (p 0.1), residual add, embedding gather
   (50,304 x 4096 table), each forward and backward (backward = forward+backward - forward), and
   torch.optim.AdamW(fused=True) over 32 Mi fp32 parameters. Bytes = the op's own device-memory
   traffic (reads + writes) as written beside each.
2. Transformer layers (post-layer-norm, bf16, dropout 0.1, the named models of trainsim-validate
   `layer`: bert-large, gpt-1.7b, gpt-7.5b, gpt-18b), forward and forward+backward, with attention
   either unfused (batched GEMMs + softmax + dropout) or SDPA's flash backend.
Times: CUDA events over enough calls to last about 100 ms after 3 warm-up calls.
Run on a GPU machine: python3 validate/measure_torch_ops.py --out FILE"""
import argparse
import datetime
import sys

from torch_measurement import cuda_torch, cuda_time_us, driver_version, write_json

MODELS = {  # name: hidden, heads, seq, micro-batch (validate/named_models.cpp)
    "bert-large": (1024, 16, 512, 8),
    "gpt-1.7b": (2304, 24, 2048, 4),
    "gpt-7.5b": (4096, 32, 2048, 1),
    "gpt-18b": (6144, 48, 2048, 1),
}


def fwd_bwd(torch, make, inputs, grad):
    """(forward us, backward us) of out = make(*inputs); backward = fwd+bwd - fwd."""
    def f():
        with torch.no_grad():
            make(*inputs)

    def fb():
        out = make(*inputs)
        out.backward(grad)
        for t in inputs:
            t.grad = None
    tf = cuda_time_us(f, torch)
    tfb = cuda_time_us(fb, torch)
    return tf, max(tfb - tf, 0.0)


def memory_bound(torch, F):
    n, cols = 64 << 20, 4096
    rows = []
    x = torch.empty((n // cols, cols), device="cuda", dtype=torch.bfloat16).uniform_(-2, 2).requires_grad_()
    g = torch.randn_like(x)
    w = torch.ones(cols, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    b = torch.zeros(cols, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def add(name, fwd_bytes, bwd_bytes, make, inputs, grad):
        tf, tb = fwd_bwd(torch, make, inputs, grad)
        for nm, by, t in ((name, fwd_bytes, tf), (name + "_bwd", bwd_bytes, tb)):
            rows.append({"name": nm, "bytes": by, "time_us": round(t, 2)})
            print("%-16s %10.1f MB %10.2f us %8.1f GB/s" % (nm, by / 1e6, t, by / t / 1e3), flush=True)

    # forward: read x, write y (2 B each); backward: read dy and x (and the saved statistics), write dx
    add("layer_norm", 4 * n, 6 * n, lambda t: F.layer_norm(t, (cols,), w, b), [x], g)
    add("gelu", 4 * n, 6 * n, lambda t: F.gelu(t), [x], g)
    xs = x.detach().view(-1, 1024).requires_grad_()
    add("softmax", 4 * n, 6 * n, lambda t: torch.softmax(t, dim=-1), [xs], g.view(-1, 1024))
    # dropout: forward writes y and a 1-byte mask; backward reads dy and the mask, writes dx
    add("dropout", 5 * n, 5 * n, lambda t: F.dropout(t, 0.1, training=True), [x], g)
    y = torch.empty_like(x).uniform_(-2, 2).requires_grad_()
    add("residual_add", 6 * n, 6 * n, lambda a, c: a + c, [x, y], g)
    table = torch.randn((50304, cols), device="cuda", dtype=torch.bfloat16, requires_grad=True)
    ids = torch.randint(0, 50304, (n // cols,), device="cuda")
    # forward: read a row element, write one; backward: read dy, scatter-add into the table gradient
    add("embedding", 4 * n, 4 * n, lambda t: F.embedding(ids, t), [table], g)

    params = 32 << 20
    p = torch.nn.Parameter(torch.randn(params, device="cuda"))
    p.grad = torch.randn(params, device="cuda")
    opt = torch.optim.AdamW([p], lr=1e-4, fused=True)
    t = cuda_time_us(opt.step, torch)
    by = 28 * params  # read p, grad, m, v; write p, m, v (fp32)
    rows.append({"name": "adamw_fused_fp32", "bytes": by, "time_us": round(t, 2)})
    print("%-16s %10.1f MB %10.2f us %8.1f GB/s" % ("adamw_fused_fp32", by / 1e6, t, by / t / 1e3), flush=True)
    return rows


def layer_class(torch, F):
    """The post-layer-norm transformer layer (bf16 under .to(), dropout 0.1) timed by layers()."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    class Layer(torch.nn.Module):
        def __init__(self, h, a, flash):
            super().__init__()
            self.h, self.a, self.flash = h, a, flash
            self.qkv = torch.nn.Linear(h, 3 * h)
            self.out = torch.nn.Linear(h, h)
            self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
            self.ffn_in, self.ffn_out = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

        def forward(self, x):  # x: [s, b, h], post-layer-norm (BERT / Megatron 2021 GPT layout)
            s, bsz, h = x.shape
            q, k, v = self.qkv(x).view(s, bsz, self.a, 3 * h // self.a).permute(1, 2, 0, 3).chunk(3, dim=-1)
            if self.flash:
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
            else:
                scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / (h // self.a) ** 0.5)
                probs = F.dropout(torch.softmax(scores, dim=-1), 0.1, training=True)
                ctx = torch.matmul(probs, v)
            ctx = ctx.permute(2, 0, 1, 3).reshape(s, bsz, h)
            x = self.ln1(x + F.dropout(self.out(ctx), 0.1, training=True))
            y = self.ffn_out(F.gelu(self.ffn_in(x)))
            return self.ln2(x + F.dropout(y, 0.1, training=True))

    return Layer


def layers(torch, F):
    Layer = layer_class(torch, F)
    rows = []
    for name, (h, a, s, bsz) in MODELS.items():
        for flash in (False, True):
            layer = Layer(h, a, flash).cuda().to(torch.bfloat16)
            x = torch.randn((s, bsz, h), device="cuda", dtype=torch.bfloat16, requires_grad=True)
            g = torch.randn_like(x)
            tf, tb = fwd_bwd(torch, layer, [x], g)
            rows.append({"model": name, "attention": "sdpa-flash" if flash else "unfused",
                         "forward_us": round(tf, 1), "backward_us": round(tb, 1), "total_us": round(tf + tb, 1)})
            print("layer %-10s %-10s fwd %9.1f us  bwd %9.1f us  total %9.1f us" %
                  (name, rows[-1]["attention"], tf, tb, tf + tb), flush=True)
            del layer, x, g
            torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_torch_ops")
    if torch is None:
        return 1
    import torch.nn.functional as F
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    driver = driver_version()
    out = {"provenance": {"method": "measured", "source": "validate/measure_torch_ops.py",
                          "date": datetime.date.today().isoformat(), "gpu": props.name,
                          "sm_count": props.multi_processor_count, "driver": driver,
                          "cuda": torch.version.cuda, "torch": torch.__version__},
           "memory_bound": memory_bound(torch, F), "layers": layers(torch, F)}
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

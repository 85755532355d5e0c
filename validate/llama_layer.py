"""A Llama-3-style decoder layer in PyTorch, as torchtitan writes it (RMSNorm in fp32, RoPE, grouped
KV heads repeated before flash SDPA, SwiGLU), with the linear layers' class a parameter, so the same
layer is timed with nn.Linear in bf16 (measure_sustained.py) and with FP8 linears
(measure_fp8_layer.py)."""


def build(torch, F, linear, hidden=4096, heads=32, kv_heads=8, ffn=14336):
    """The layer module (on the GPU, bf16); linear(in, out) makes each projection."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    hd = hidden // heads

    class RMSNorm(torch.nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.eps, self.weight = eps, torch.nn.Parameter(torch.ones(dim))

        def forward(self, x):  # torchtitan's: in fp32, then back
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    def rope(x, cos, sin):  # x: [b, s, h, d]; rotate pairs (torchtitan uses complex; same traffic)
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = linear(hidden, heads * hd)
            self.wk = linear(hidden, kv_heads * hd)
            self.wv = linear(hidden, kv_heads * hd)
            self.wo = linear(heads * hd, hidden)
            self.w1 = linear(hidden, ffn)
            self.w3 = linear(hidden, ffn)
            self.w2 = linear(ffn, hidden)
            self.attn_norm, self.ffn_norm = RMSNorm(hidden), RMSNorm(hidden)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.attn_norm(x)
            q = rope(self.wq(h).view(b, s, heads, hd), cos, sin)
            k = rope(self.wk(h).view(b, s, kv_heads, hd), cos, sin)
            v = self.wv(h).view(b, s, kv_heads, hd)
            rep = heads // kv_heads  # torchtitan repeats KV heads before SDPA
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, s, hidden))
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    return Layer().cuda().to(torch.bfloat16)


def inputs(torch, seq, batch=1, hidden=4096, heads=32):
    """x (requiring grad), the RoPE tables cos and sin, and an output gradient g."""
    hd = hidden // heads
    x = torch.randn((batch, seq, hidden), device="cuda", dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(seq, device="cuda", dtype=torch.float32)
    inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device="cuda", dtype=torch.float32) / hd))
    ang = torch.outer(pos, inv)
    cos = ang.cos().to(torch.bfloat16)[None, :, None, :]
    sin = ang.sin().to(torch.bfloat16)[None, :, None, :]
    return x, cos, sin, torch.randn_like(x)


def model_flops(seq, batch=1, hidden=4096, heads=32, kv_heads=8, ffn=14336):
    """torchtitan's count for one layer forward+backward: 6 x params x tokens + 12 x hidden x seq per
    token for attention (causal attention counted in full, as torchtitan does)."""
    hd = hidden // heads
    params = hidden * (heads * hd) * 2 + hidden * (kv_heads * hd) * 2 + 3 * hidden * ffn
    tokens = batch * seq
    return 6.0 * params * tokens + 12.0 * hidden * seq * tokens


def time_passes(torch, run, layer, x, cos, sin, g, min_ms=100.0):
    """Microseconds of run(x, cos, sin) forward (no grad) and forward+backward (gradients dropped
    after each), from torch_measurement.cuda_time_us; run is the layer or its compiled form."""
    from torch_measurement import cuda_time_us

    def fwd():
        with torch.no_grad():
            run(x, cos, sin)

    def fwd_bwd():
        run(x, cos, sin).backward(g)
        x.grad = None
        for p in layer.parameters():
            p.grad = None

    return cuda_time_us(fwd, torch, min_ms=min_ms), cuda_time_us(fwd_bwd, torch, min_ms=min_ms)


def time_module(torch, module, compiled, seq, batch, fullgraph=False, min_ms=200.0):
    """time_passes of a layer-shaped module on fresh inputs, eager or under torch.compile."""
    x, cos, sin, g = inputs(torch, seq, batch)
    run = torch.compile(module, fullgraph=fullgraph) if compiled else module
    return time_passes(torch, run, module, x, cos, sin, g, min_ms=min_ms)


def layer_arguments(description):
    """The command line the Llama-layer scripts share: --out FILE, --seq, --batch."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=1)
    return ap.parse_args()

#!/usr/bin/env python3
"""Writes the llm-foundry scenarios from the MPT throughput tables of llm-foundry's
scripts/train/benchmarking/README.md (shared/VALIDATION.md 3.2):
  scenarios/llmfoundry-fsdp-a100.json  A100 40GB and 80GB (1600 Gbps RoCE), the tables of 2023-05;
  scenarios/llmfoundry-fsdp-h100.json  H100 80GB BF16 and the FP8 3B row (tables of commit
                                        b2a43a147, 2023-10-19; interconnect not stated).
Run from the repository root. The reference TFLOP/s per GPU is the measured tokens/s/GPU / seq x
the FLOPs per sequence that sim/report/report.cpp counts; the script checks it against HFU (or
MFU) x the peak the README used (312 A100, 989 H100 BF16, 1979 H100 FP8: its FP8 rows' Model
TFLOP column is MFU x 1979)."""
import json
SHAPES = {  # d_model, n_heads, n_layers (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml)
 "125M": (768, 12, 12), "350M": (1024, 16, 24), "760M": (1536, 12, 24), "1B": (2048, 16, 24),
 "3B": (2560, 20, 32), "7B": (4096, 32, 32), "13B": (5120, 40, 40), "30B": (7168, 56, 48),
 "70B": (8192, 64, 80)}
V = 50368
def params(h, l, s):  # GPT with biases, learned positions, tied head, final norm
    return l * (12*h*h + 13*h) + V*h + s*h + 2*h
def report_flops(h, l, s, ckpt):  # sim/report/report.cpp's convention
    per_layer = 12*h*h + 13*h
    dense = params(h, l, s) - s*h
    f = 6.0*dense*s + 12.0*l*h*s*s
    if ckpt: f += 2.0*l*per_layer*s + 4.0*l*h*s*s
    return f
README = "llm-foundry scripts/train/benchmarking/README.md"

# model, seq, gpus, mfu, hfu, mb, accum, gbs, tok/s/gpu, ckpt
A40 = [("70B",2048,64,35.87,47.82,2,1,128,276,True),("30B",2048,32,51.74,68.98,4,1,128,857,True),
 ("13B",2048,8,43.94,58.58,4,16,512,1668,True),("13B",2048,16,52.50,70.00,10,1,160,1993,True),
 ("13B",2048,32,52.62,70.16,14,1,448,1998,True),("13B",2048,64,52.04,69.39,16,1,1024,1976,True),
 ("13B",4096,8,44.85,59.80,2,16,256,1603,True),("13B",8192,8,43.95,58.60,1,16,128,1407,True),
 ("7B",2048,8,50.92,67.89,12,4,384,3679,True),("7B",2048,16,50.44,67.26,16,1,256,3645,True),
 ("7B",2048,32,51.55,68.73,18,1,576,3725,True),("7B",2048,64,50.73,67.64,18,1,1152,3665,True),
 ("7B",8192,8,49.04,65.38,3,4,96,2887,True),("7B",16384,8,47.65,63.53,1,4,32,2249,True),
 ("3B",2048,8,57.82,57.82,5,8,320,10065,False),("3B",2048,32,56.96,56.96,6,1,192,9914,False),
 ("1B",2048,8,56.23,56.23,8,8,512,19271,False),("1B",2048,32,45.39,45.39,10,1,320,15555,False),
 ("760M",2048,8,52.89,52.89,12,4,384,30173,False),("350M",2048,8,49.17,49.17,16,4,512,55995,False),
 ("125M",2048,8,42.75,42.75,26,3,624,136334,False)]
A80 = [("70B",2048,32,48.56,64.75,2,16,1024,373,True),("30B",2048,8,55.30,73.74,3,21,504,916,True),
 ("30B",8192,8,39.38,52.50,1,21,168,574,True),("13B",2048,8,59.57,59.57,2,3,48,2262,False),
 ("13B",8192,8,56.07,74.76,5,3,120,1795,True),("13B",32768,8,51.69,68.92,1,3,24,1016,True),
 ("7B",2048,8,64.23,64.23,6,2,96,4641,False),("7B",8192,8,54.47,72.62,8,2,128,3206,True),
 ("7B",65536,8,46.97,62.63,1,2,16,1013,True),("3B",2048,8,62.11,62.11,10,2,160,10811,False),
 ("1B",2048,8,59.86,59.86,14,4,448,20513,False),("125M",2048,8,44.79,44.79,40,2,640,142830,False)]
# H100 80GB BF16 (amp_bf16, MP mode DEFAULT on every row): VALIDATION.md 3.2's rows of the table;
# H100 80GB FP8 (amp_fp8): the 3B seq 2048 row. The last field is the precision.
H100 = [("70B",2048,32,36.15,48.20,2,16,1024,882,True,"amp_bf16"),
 ("30B",2048,8,38.11,50.82,3,21,504,2002,True,"amp_bf16"),("30B",2048,16,43.07,57.42,10,3,480,2263,True,"amp_bf16"),
 ("30B",2048,32,43.92,58.57,14,3,1344,2308,True,"amp_bf16"),
 ("13B",2048,8,39.79,39.79,2,1,16,4792,False,"amp_bf16"),("13B",2048,16,39.58,39.58,2,1,32,4767,False,"amp_bf16"),
 ("13B",2048,32,39.95,39.95,2,1,64,4811,False,"amp_bf16"),("13B",2048,64,39.86,39.86,2,1,128,4800,False,"amp_bf16"),
 ("7B",2048,8,46.44,46.44,6,1,48,10643,False,"amp_bf16"),("7B",8192,8,37.14,49.52,8,2,128,6935,True,"amp_bf16"),
 ("3B",2048,64,40.80,40.80,6,3,1152,22525,False,"amp_bf16"),("1B",2048,8,41.82,41.82,14,1,112,45455,False,"amp_bf16"),
 ("3B",2048,8,27.70,27.70,10,6,480,30586,False,"amp_fp8")]

A100_TRAINING = {
 "allocator_host_issue": True,
 "allocator_retry_stalls": True,
 "module_kernels": "mpt",
 "schedule": "fsdp",
 "fsdp_implementation": "torch-fsdp1",
 "precision": "fsdp_mixed",
 "optimizer": "adamw",
 "micro_batch": 1,
 "flash_attention": True,
 "attention_kernel": "flash-attn-triton",
 "fused_cross_entropy": True,
 "gradient_dtype": "bf16",
 "parameter_dtype": "bf16",
 "note": "FSDP FULL_SHARD over every GPU with MixedPrecision (fp32 sharded parameters and gradients, bf16 working copies), decoupled AdamW; per point: micro-batch, accumulation, checkpointing, gradient reduction dtype"
}
A100_ASSUMPTIONS = [
 "PyTorch's CUDA caching allocator as the run's host drives it (training.allocator_host_issue, engine/program_executor and memory/caching_allocator): buffers are requested when the host issues the op, FSDP1's limit_all_gathers lets the host run two units ahead (torch/distributed/fsdp/_runtime_utils.py _FreeEventQueue, capacity 2), and blocks another stream used come back only once the device has finished with them (record_stream); a request the stream's pool cannot serve with the device full frees the cached segments and retries (allocator_retry_stalls: a synchronize plus the frees, 4.09 ms + 8.27 ms per GB freed, fitted to our H100 measurement (validate/measure_allocator_retry.py, validate/README.md), extrapolated to the A100; no reference row fitted). Only rows within a few GB of the device's capacity retry: 80GB 30B seq 8192 (1,007 retries per step) and 80GB 30B seq 2048 (42)",
 "module kernels 'mpt' (model::ModuleKernels; llm-foundry llmfoundry/models/layers/attention.py, read at 00ef82a3: Wqkv = nn.Linear with bias, its output split along dim 2 into views, heads as einops views into the Triton kernel, whose separate dq, dk, dv are concatenated by autograd; nn.Linear's bias gradients reduced by autograd): rates from the device's measured memory-bound classes where it has them, else the stream-copy rate",
 "bf16 GEMMs run at the A100 cuBLASLt curve (topologies/devices/a100-*.json, calibration/a100-sxm-cublaslt-azure.json); nothing fitted to these rows",
 "the benchmark's models are GPT-style (biases, learned positions, tied head; proven by the README's NumParams column), not the current MPT yamls' no_bias + ALiBi",
 "attn_impl triton (the benchmark script's default): flash-attn's Triton kernel (attention_kernel flash-attn-triton: the FlashAttention-2 paper's A100 curves by seq length and head dim, slowed by its 1.4x forward / 2x backward speed-ups over this kernel), no s x s scores in memory",
 "llm-foundry's default fused cross-entropy loss (flash-attn's): bf16 logits, gradient in place",
 "precision 'bf16' with FSDP mixed_precision PURE (the 40GB table, the 80GB 70B rows): bf16 compute, bf16 all-gathers and reduce-scatters; 'amp_bf16' with DEFAULT (the other 80GB rows): bf16 compute and all-gathers, gradients reduce-scattered in fp32 (Composer's DEFAULT reduce_dtype)",
 "both precisions keep sharded fp32 parameters, gradients and AdamW moments (fsdp_mixed: 16 bytes per parameter before sharding)",
 "limit_all_gathers true (the benchmark script sets it): at most two units gathered ahead, as sharded_schedule does",
 "software of the A100 tables (first in llm-foundry commit 300cc5c58, 2023-05-03, copied from mosaicml/examples): submit_benchmarks.py runs image mosaicml/pytorch:1.13.1_cu117 with precision 'bf16' (Composer before v0.12: torch autocast to bf16; renamed amp_bf16 in Composer #1761), fsdp_config mixed_precision PURE, limit_all_gathers true, activation_checkpointing_reentrant false; setup.py pins flash-attn 1.0.3.post0 and triton 2.0.0.dev20221202 (attn_impl triton)",
 "backward_prefetch and forward_prefetch are left unset by the yamls and the script, so Composer's defaults apply: BACKWARD_POST and false (composer/trainer/dist_strategy.py, v0.12.0-v0.15.0); under the rate limiter that is the schedule's one-unit-ahead backward gather (sim/program/sharded_schedule.hpp), with the host thread assumed ahead of the GPU (the shortest layer forward here, 125M and 350M, is ~6 ms)",
 "micro-batches: submit_benchmarks.py asks Composer for device_train_microbatch_size 'auto' unless one is given, which halves the per-device batch after each OOM; every 40GB row with accumulation > 1 except 125M is such a halving (e.g. 13B x 8: 64 -> 4), so its run sat close enough to 40 GB that twice the micro-batch did not fit. trainsim memory, counting FSDP 1.13's post-backward gradient copies and the root unit kept gathered, agrees for 13B x 8 (twice the micro-batch is over 40 GiB by 0.7-0.8 GiB at seq 2k/4k/8k) but judges twice the micro-batch to fit for 7B at seq 16k (34.4 GiB): the memory model is at least that optimistic there. The caching allocator's cost near the limit (cache flush and cudaMalloc retry, Composer's alloc_retries) is not modelled: no source quantifies it",
 "each FSDP unit is one transformer block (llm-foundry's fsdp_wrap_fn wraps each MPTBlock); the embedding (wte, wpe) and the final norm with the tied head are the root unit, which PyTorch 1.13's FullyShardedDataParallel.forward does not reshard after forward (\"Do not free the root's parameters in the post-forward for FULL_SHARD\"): gathered once per micro-batch before the embedding, not again in backward, reduce-scattered once after the embedding's backward (fsdp_implementation torch-fsdp1)",
 "one process group carries FSDP's all-gathers and reduce-scatters, so they run on ProcessGroupNCCL's one NCCL stream per device in the order the host issues them (ProcessGroupNCCL.cpp of the 1.13 line keys its NCCL streams by device in getNCCLComm; FSDP's all_gather and post_backward streams only order what each collective waits for): in backward, the post-backward hook of unit k reshards k, prefetches k-1's gather, then issues k's reduce-scatter (fsdp_implementation torch-fsdp1)",
 "every micro-batch's backward reduce-scatters (Composer's ddp_sync_context returns at once for a model that is not DistributedDataParallel, so FSDP runs without no_sync), as the schedule does",
 "not modelled, judged too small at these sizes: the per-step gradient clipping (the yamls' gradient_clipping norm 1.0: FSDP.clip_grad_norm_ in 1.13 computes per-parameter norms, all-reduces one scalar and tests clip_coef < 1 on the host, a host sync once per step before the optimizer); Composer's DecoupledAdamW runs per flat parameter (~80 per rank), unfused, GPU-bound at these shard sizes; the time of the post-backward hook's copies (the cast to the reduce dtype, F.pad's copy of each unit's unsharded gradient, the cast of the reduced shard to fp32) on the post_backward stream, memory-bound copies beside the backward compute (their memory is counted: trainsim memory's gathered_gradients, with the root unit in gathered_parameters)",
 "the node is an HGX A100 with one 200 Gb/s RoCE port per GPU and NCCL over RoCE at InfiniBand HDR efficiency (topologies/mosaicml-a100-*-roce.json)",
 "the 80GB rows run on topologies/mosaicml-a100-80g-roce.json (each names it), the others on the scenario's 40GB topology; the two differ only in GPU memory",
 "the 1B row on 32 GPUs of the 40GB table is an outlier in the source (VALIDATION.md 3.2) and is kept, flagged in its note: the README's same 1B configuration per GPU (micro-batch 10, no accumulation) runs at 55.4% MFU on 64 GPUs and 54.4% on 128, so no mechanism that grows with scale explains 45.4% on 32"]
A100_TITLE = "MosaicML llm-foundry MPT benchmarks, A100 40GB and 80GB with 1600 Gbps RoCE: FSDP FULL_SHARD, 125M-70B, seq 2048-65536, 8-64 GPUs"
A100_DESCRIPTION = "The A100 40GB and 80GB rows of llm-foundry's MPT throughput tables (VALIDATION.md 3.2): PyTorch FSDP full sharding over every GPU, bf16, triton flash attention, activation checkpointing as listed, micro-batch and gradient accumulation as listed. The reference is the measured throughput (tokens/s/GPU) as sequences/s, and as TFLOP/s per GPU in the report's convention (model FLOPs plus the layers' forward again when checkpointing; llm-foundry's HFU x 312 TFLOP/s agrees within 1%)."
A100_MODEL_SOURCE = "shapes: llm-foundry scripts/train/yamls/pretrain/mpt-{125m,350m,760m,1b,3b,7b,13b,30b,70b}.yaml (d_model, n_heads, n_layers, expansion_ratio 4, vocab_size 50368). The benchmark runs' models have biases and a learned position table, not the current yamls' no_bias + ALiBi: the README's NumParams column equals 12 l h^2 + 13 l h + (V + seq) h + 2h exactly (e.g. 125M at seq 2048: 125,311,488; 70B: 64,862,437,376) and grows with seq by h per position, i.e. the GPT architecture's defaults here. Dropout 0 (MPT's attn/resid/emb_pdrop defaults)"
A100_REFERENCE = {
 "source": "llm-foundry scripts/train/benchmarking/README.md (MPT throughput tables, A100 40GB and 80GB with 1600 Gbps RoCE) via shared/VALIDATION.md 3.2",
 "table": "tokens/s/GPU x GPUs / seq as sequences/s; TFLOP/s per GPU = tokens/s/GPU / seq x the report's FLOPs per sequence",
 "note": "MFU/HFU-to-TFLOP/s: llm-foundry's HFU x 312 counts the whole forward again (embedding/head too) and 6 N with N including the position table; the report counts the layers' forward only and excludes table lookups. Both agree within 1% on every row"
}


def point(label, name, s, g, mfu, hfu, mb, acc, gbs, tok, ckpt, peak, gradient_dtype, note, topology=None, training=None):
    """One table row as a scenario point; returns it and |ref_tf / (HFU-or-MFU x peak) - 1|."""
    h, a, l = SHAPES[name]
    assert gbs == g * mb * acc, (name, s, g)
    ref_tf = tok / s * report_flops(h, l, s, ckpt) / 1e12
    util = (hfu if ckpt else mfu) * peak / 100
    p = {"label": label}
    if topology:
        p["topology"] = topology
    p.update({"nodes": g // 8,
              "model": {"name": f"MPT-{name}", "hidden": h, "heads": a, "layers": l, "seq_len": s},
              "training": {"micro_batch": mb, "gradient_accumulation": acc, "activation_checkpointing": ckpt,
                           "gradient_dtype": gradient_dtype, **(training or {})},
              "data_parallel_degree": g,
              "reference_samples_per_s": round(tok * g / s, 4),
              "reference_tflops_per_accelerator": round(ref_tf, 2),
              "note": f"global batch {gbs} = {g} GPUs x {mb} x {acc}; {tok} tokens/s/GPU, MFU {mfu}%, HFU {hfu}%; " + note})
    return p, abs(ref_tf / util - 1)


def a100_points(mem, rows):
    """The A100 table's rows; the 80GB rows name their own topology."""
    pts, worst = [], 0
    for (name, s, g, mfu, hfu, mb, acc, gbs, tok, ckpt) in rows:
        # 80GB table: the 70B rows ran bf16 with FSDP PURE, the others amp_bf16 with DEFAULT
        # (gradients reduced in fp32); the 40GB table is bf16 / PURE throughout.
        pure = mem == 40 or name == "70B"
        note = "bf16, FSDP mixed_precision PURE" if pure else "amp_bf16, FSDP mixed_precision DEFAULT (fp32 gradient reduction)"
        if mem == 40 and name == "1B" and g == 32:
            note += "; OUTLIER: VALIDATION.md 3.2 marks this row an outlier (45% MFU against 56% for the same model on 8 GPUs); kept as published, not expected to match"
        p, err = point(f"{mem}GB {name} seq {s} x {g}", name, s, g, mfu, hfu, mb, acc, gbs, tok, ckpt, 312,
                       "bf16" if pure else "fp32", note,
                       topology=None if mem == 40 else f"../topologies/mosaicml-a100-{mem}g-roce.json")
        pts.append(p)
        worst = max(worst, err)
    print(mem, "max |ref_tf/HFU-or-MFU tf - 1| =", round(worst*100, 2), "%")
    return pts


def model_block(first, source):
    h, a, l = SHAPES[first[0]]
    return {"architecture": "gpt", "name": f"MPT-{first[0]}", "layers": l, "hidden": h, "heads": a,
            "vocab": V, "seq_len": first[1], "dropout": False, "source": source}


def write(path, doc):
    open(path, "w").write(json.dumps(doc, indent=2) + "\n")


def a100_scenario():
    write("scenarios/llmfoundry-fsdp-a100.json", {
        "schema_version": 1, "name": "llmfoundry-fsdp-a100", "title": A100_TITLE, "description": A100_DESCRIPTION,
        "topology": "../topologies/mosaicml-a100-40g-roce.json",
        "model": model_block(A40[0], A100_MODEL_SOURCE),
        "training": A100_TRAINING, "assumptions": A100_ASSUMPTIONS, "reference": A100_REFERENCE,
        "points": a100_points(40, A40) + a100_points(80, A80)})


# The H100 tables ran a later stack than the A100 ones (README "llm-foundry", H100 section).
H100_SOFTWARE = ("software of the H100 tables (llm-foundry commit b2a43a147, 2023-10-19, 'Update_pretrain_benchmarks'): sweep.sh passes "
    "image mosaicml/pytorch:2.1.0_cu121-python3.10-ubuntu20.04 (PyTorch 2.1.0, CUDA 12.1); submit_benchmarks.py's run_config installs llm-foundry "
    "at git_branch v0.3.0 (2023-09-27; it ignores sweep.sh's --git_commit), whose setup.py pins Composer >=0.16.3,<0.17, flash-attn 1.0.9 and "
    "triton-pre-mlir's triton_pre_mlir_sm90 branch; attn_impl is the script's default 'triton', norm_type low_precision_layernorm, "
    "fsdp_config FULL_SHARD, limit_all_gathers true, activation_checkpointing_reentrant false (mpt-*.yaml), activation_checkpointing per row "
    "(sweep.sh's --fsdp_config_activation_checkpointing false on the 1B-13B rows at seq 2048). Against the A100 tables (mosaicml/pytorch:1.13.1_cu117, "
    "precision 'bf16' with mixed_precision PURE, flash-attn 1.0.3.post0's Triton kernel on triton 2.0.0.dev20221202): PyTorch 2.1 and CUDA 12.1, "
    "amp_bf16 with DEFAULT, and a Triton compiler fork patched for sm90")
H100_PRECISION = ("precision amp_bf16 with FSDP mixed_precision DEFAULT on every BF16 row (the table's MP Mode column; mod_parameters' default, "
    "the script's --fsdp_config_mixed_precision PURE is parsed but never passed): bf16 compute and all-gathers, gradients reduce-scattered in fp32 "
    "(Composer's DEFAULT reduce_dtype), as the A100 80GB amp_bf16 rows")
H100_ATTENTION = ("attn_impl triton: llm-foundry v0.3.0's flash_attn_triton.py on triton-pre-mlir (sm90 branch), attention_kernel flash-attn-triton of the "
    "H100 profile: the measured FlashAttention-2 curves (PyTorch SDPA, 2026) slowed by the FA2 paper's 1.4x forward / 2x backward over the Triton "
    "kernel, as the A100 curve is derived (validate/derive_attention_curves.py --measured --triton). ASSUMPTION: that the A100 ratio carries over to sm90 "
    "(both kernels issue Ampere-style mma.sync there; no H100 measurement of the Triton kernel was found)")
H100_GEMMS = ("bf16 GEMMs at the H100 profile's measured cuBLASLt curve (calibration/h100-sxm-measured.json: PyTorch 2.11, CUDA 13.0, 2026) with the measured "
    "sustained clock (sustained_compute 0.855); the runs' CUDA 12.1 cuBLAS was not measured. Nothing fitted to these rows")
H100_FSDP = ("PyTorch 2.1's FullyShardedDataParallel keeps the structure read at 1.13 for the A100 tables (FlatParameter units, one per MPTBlock, the root "
    "(wte, wpe, final norm, tied head) not resharded after forward, the _FreeEventQueue rate limiter of limit_all_gathers, all collectives on the one "
    "process group's NCCL stream, every micro-batch reduce-scattered; BACKWARD_POST and no forward prefetch by Composer's defaults): fsdp_implementation "
    "torch-fsdp1, not re-read line by line at v2.1.0 / Composer 0.16")
H100_ALLOCATOR = ("PyTorch's caching allocator driven from the host's issue order with retry stalls (allocator_host_issue, allocator_retry_stalls; the retry cost "
    "measured on our H100, validate/measure_allocator_retry.py), as for the A100 tables")
H100_TOPOLOGY = ("the node is topologies/mosaicml-h100-ib.json: the HGX H100 of dgx-h100-ib.json (its device profile and NVSwitch fit) with an ASSUMED 8 x 400 Gb/s "
    "inter-node fabric, since the README states none; the multi-node rows were also run on 1600 Gbps per node (topologies/mosaicml-h100-ib-1600g.json, "
    "validate/llmfoundry_h100_fabric.py; README llm-foundry H100 section)")
H100_FP8 = ("the FP8 row (precision amp_fp8): submit_benchmarks.py sets model fc_type 'te' on h100 + fp8, so MPT's four linears per block are Transformer Engine v0.10 "
    "te.Linear (run_config installs TE at v0.10), under Composer's te.fp8_autocast (delayed scaling); linear_precision fp8 with fp8_implementation "
    "transformer-engine runs them at the H100's measured FP8 GEMM curves. Where the model's TE path (Megatron-core's modules) differs from this run: "
    "MPT's low_precision_layernorm stays a bf16 kernel and te.Linear casts its input (the model has the norm write the FP8 input of QKV and the "
    "first MLP linear); Composer passes no is_first_microbatch, so TE re-casts the gathered bf16 weights every micro-batch (the model: once per step); "
    "TE's amax reduction is not modelled under FSDP. The first two are memory-bound passes, about 13 GB and 11 GB of traffic per micro-batch (~8 ms at "
    "the stream rate) against a ~0.6 s micro-batch: 1-2%, left out; the row's MFU column is against the FP8 peak (Model TFLOP 548 = 27.7% x 1979), its reference here as every row's: the "
    "measured tokens/s")
H100_SHARED = [A100_ASSUMPTIONS[i] for i in (1, 3, 5, 7)]  # module kernels, GPT shapes, fused loss, fp32 master state


def h100_scenario():
    pts, worst = [], 0
    for (name, s, g, mfu, hfu, mb, acc, gbs, tok, ckpt, precision) in H100:
        fp8 = precision == "amp_fp8"
        note = (precision + ", FSDP mixed_precision DEFAULT (fp32 gradient reduction)"
                + ("; Transformer Engine v0.10 te.Linear (fc_type te); MFU against the FP8 peak 1979 TFLOP/s" if fp8 else ""))
        p, err = point(f"H100 {'FP8 ' if fp8 else ''}{name} seq {s} x {g}", name, s, g, mfu, hfu, mb, acc, gbs, tok, ckpt,
                       1979 if fp8 else 989, "fp32", note,
                       training={"linear_precision": "fp8", "fp8_implementation": "transformer-engine"} if fp8 else None)
        pts.append(p)
        worst = max(worst, err)
    print("H100 max |ref_tf/HFU-or-MFU tf - 1| =", round(worst*100, 2), "%")
    training = dict(A100_TRAINING, gradient_dtype="fp32", note="FSDP FULL_SHARD over every GPU with MixedPrecision DEFAULT (fp32 sharded parameters "
                    "and gradients, bf16 working copies and all-gathers, fp32 reduce-scatters), decoupled AdamW; per point: micro-batch, accumulation, "
                    "checkpointing; the FP8 row its linear precision")
    write("scenarios/llmfoundry-fsdp-h100.json", {
        "schema_version": 1, "name": "llmfoundry-fsdp-h100",
        "title": "MosaicML llm-foundry MPT benchmarks, H100 80GB (BF16 and one FP8 row): FSDP FULL_SHARD, 1B-70B, seq 2048-8192, 8-64 GPUs",
        "description": "VALIDATION.md 3.2's rows of llm-foundry's H100 80GB BF16 table and its FP8 3B row at seq 2048: PyTorch 2.1 FSDP full sharding over "
                       "every GPU, amp_bf16 (FP8 linears on the FP8 row), llm-foundry's Triton flash attention, activation checkpointing, micro-batch and "
                       "accumulation as listed. The first FSDP rows on the H100 profile measured in this project. The reference is the measured "
                       "throughput (tokens/s/GPU) as sequences/s, and as TFLOP/s per GPU in the report's convention (llm-foundry's HFU x 989, or MFU "
                       "x 1979 on the FP8 row, agrees within 1%).",
        "topology": "../topologies/mosaicml-h100-ib.json",
        "model": model_block(H100[0], A100_MODEL_SOURCE + "; the H100 table's NumParams obeys the same count (13B at seq 2048: 12,853,954,560)"),
        "training": training,
        "assumptions": [H100_SOFTWARE, H100_PRECISION, H100_ATTENTION, H100_GEMMS, H100_FSDP, H100_ALLOCATOR, *H100_SHARED, H100_TOPOLOGY, H100_FP8],
        "reference": {"source": f"{README} at llm-foundry 5e85bd62d (tables 'H100 80GB BF16' and 'H100 80GB FP8', added in b2a43a147, 2023-10-19) via shared/VALIDATION.md 3.2",
                      "table": A100_REFERENCE["table"],
                      "note": "MFU/HFU-to-TFLOP/s: as for the A100 tables, with 989 TFLOP/s (BF16) and 1979 (the FP8 row's MFU: the README's Model TFLOP column is MFU x 1979 there)"},
        "points": pts})


a100_scenario()
h100_scenario()

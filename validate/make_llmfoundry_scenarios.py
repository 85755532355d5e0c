#!/usr/bin/env python3
"""Writes the llm-foundry scenarios from the MPT throughput tables of llm-foundry's
scripts/train/benchmarking/README.md, every row of four tables (transcribed in
llmfoundry_tables.py, read at llm-foundry 5e85bd62d):
  scenarios/llmfoundry-fsdp-a100.json  A100 40GB (78 rows, of 2023-05) and 80GB (61, re-measured for b2a43a147,
                                        2023-10, but its two 70B rows), 1600 Gbps RoCE;
  scenarios/llmfoundry-fsdp-h100.json  H100 80GB BF16 (52 rows) and FP8 (7) (tables of commit b2a43a147,
                                        2023-10-19; interconnect not stated), then the 12 FULL_SHARD rows
                                        of 5e85bd62d's BF16 Large Scale table (128-512 GPUs, 2024-01).
The rows shared/VALIDATION.md 3.2 lists come first in each scenario, as before the tables were
completed; the others follow in table order. Run from the repository root. The reference TFLOP/s
per GPU is the measured tokens/s/GPU / seq x the FLOPs per sequence that sim/report/report.cpp
counts. Every row is checked against the table's own arithmetic and llm-foundry's MFU/HFU formula
at the README's peaks (312 A100, 989 H100 BF16, 1979 H100 FP8: its FP8 rows' Model TFLOP column is
MFU x 1979); a transcription error stops the script with the row named."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmfoundry_tables as tables  # noqa: E402

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

# The rows shared/VALIDATION.md 3.2 lists, by (model, seq, GPUs, micro-batch), in the order the
# scenarios had them before the whole tables were added: they stay first, so their labels, numbers
# and golden lines do not move; the other rows follow in their table's order.
VALIDATION_32 = {
 "A40": [("70B",2048,64,2),("30B",2048,32,4),("13B",2048,8,4),("13B",2048,16,10),("13B",2048,32,14),
         ("13B",2048,64,16),("13B",4096,8,2),("13B",8192,8,1),("7B",2048,8,12),("7B",2048,16,16),
         ("7B",2048,32,18),("7B",2048,64,18),("7B",8192,8,3),("7B",16384,8,1),("3B",2048,8,5),
         ("3B",2048,32,6),("1B",2048,8,8),("1B",2048,32,10),("760M",2048,8,12),("350M",2048,8,16),
         ("125M",2048,8,26)],
 "A80": [("70B",2048,32,2),("30B",2048,8,3),("30B",8192,8,1),("13B",2048,8,2),("13B",8192,8,5),
         ("13B",32768,8,1),("7B",2048,8,6),("7B",8192,8,8),("7B",65536,8,1),("3B",2048,8,10),
         ("1B",2048,8,14),("125M",2048,8,40)],
 "H100_BF16": [("70B",2048,32,2),("30B",2048,8,3),("30B",2048,16,10),("30B",2048,32,14),("13B",2048,8,2),
               ("13B",2048,16,2),("13B",2048,32,2),("13B",2048,64,2),("7B",2048,8,6),("7B",8192,8,8),
               ("3B",2048,64,6),("1B",2048,8,14)],
 "H100_FP8": [("3B",2048,8,10)], "H100_BF16_LARGE": [], "H100_BF16_LARGE_SHARD_GRAD_OP": []}


def ordered(table, name):
    """The table's rows, VALIDATION.md 3.2's first (in VALIDATION_32's order), then the rest."""
    key = lambda r: (r.model, r.seq, r.gpus, r.micro_batch)
    by_key = {key(r): r for r in table}
    if len(by_key) != len(table):
        raise SystemExit(f"make_llmfoundry_scenarios.py: {name}: two rows share (model, seq, GPUs, micro-batch)")
    missing = [k for k in VALIDATION_32[name] if k not in by_key]
    if missing:
        raise SystemExit(f"make_llmfoundry_scenarios.py: {name}: VALIDATION_32 rows not in the table: {missing}")
    first = [by_key[k] for k in VALIDATION_32[name]]
    return first + [r for r in table if key(r) not in VALIDATION_32[name]]


def check_row(r, table, peak):
    """Fails loudly on a transcription error: every row must obey the table's own arithmetic and
    llm-foundry's MFU/HFU formula (benchmarking README "MFU and HFU": 6 N s + 12 l h s^2 FLOPs per
    sequence with N = NumParams, x 4/3 for HFU under checkpointing), which every row of the four
    tables meets within 0.07% from its tokens/s (T/s / GPUs; T/s/GPU is rounded)."""
    h, a, l = SHAPES[r.model]
    where = f"{table} row {r.model} seq {r.seq} x {r.gpus} micro-batch {r.micro_batch}"
    def fail(what):
        raise SystemExit(f"make_llmfoundry_scenarios.py: {where}: {what}")
    if r.global_batch != r.gpus * r.micro_batch * r.accumulation:
        fail(f"GlobalBatchSize {r.global_batch} != GPUs x MicroBatchSize x GradAccum")
    if params(h, l, r.seq) != r.num_params:
        fail(f"NumParams {r.num_params} != the GPT count {params(h, l, r.seq)} of MPT-{r.model} at seq {r.seq}")
    if abs(r.tokens_per_s / r.gpus - r.tokens_per_s_per_gpu) >= 1:
        fail(f"Throughput (T/s) {r.tokens_per_s} / GPUs != T/s/GPU {r.tokens_per_s_per_gpu}")
    if r.model_tflop is not None and abs(r.model_tflop - r.mfu * peak / 100) > 1:  # None: 2023-05 tables lack the column
        fail(f"Model TFLOP {r.model_tflop} != MFU x {peak}")
    mfu = r.tokens_per_s / r.gpus / r.seq * (6 * r.num_params * r.seq + 12 * l * h * r.seq**2) / (peak * 1e10)
    hfu = mfu * (4 / 3 if r.checkpointing else 1)
    if abs(mfu / r.mfu - 1) > 0.002 or abs(hfu / r.hfu - 1) > 0.002:
        fail(f"MFU/HFU {r.mfu}/{r.hfu} against {mfu:.2f}/{hfu:.2f} from Throughput (T/s)")
    if (r.precision, r.mp_mode) not in GRADIENT_DTYPE:
        fail(f"precision / MP mode {r.precision} / {r.mp_mode} not one of {sorted(GRADIENT_DTYPE)}")


# The 80GB table's 2023-05 measurements by configuration (notes of the rows re-measured in 2023-10).
A80_2023_05 = {(r.model, r.seq, r.gpus, r.micro_batch, r.accumulation): r for r in tables.A80_2023_05}

# FSDP's gradient reduction dtype per (Precision, MP Mode): PURE reduces in bf16, DEFAULT in fp32
# (Composer's DEFAULT MixedPrecision reduce_dtype).
GRADIENT_DTYPE = {("bf16", "PURE"): "bf16", ("amp_bf16", "DEFAULT"): "fp32", ("amp_fp8", "DEFAULT"): "fp32"}

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
 "fused_cross_entropy_inplace": False,
 "composer_train_metrics": ["LanguageCrossEntropy", "LanguagePerplexity"],
 "composer_metric_sync": True,
 "gradient_dtype": "bf16",
 "parameter_dtype": "bf16",
 "note": "FSDP FULL_SHARD over every GPU with MixedPrecision (fp32 sharded parameters and gradients, bf16 working copies), decoupled AdamW; per point: micro-batch, accumulation, checkpointing, gradient reduction dtype"
}
A100_ASSUMPTIONS = [
 "PyTorch's CUDA caching allocator as the run's host drives it (training.allocator_host_issue, engine/program_executor and memory/caching_allocator): buffers are requested when the host issues the op, FSDP1's limit_all_gathers lets the host run two units ahead (torch/distributed/fsdp/_runtime_utils.py _FreeEventQueue, capacity 2), and blocks another stream used come back only once the device has finished with them (record_stream); a request the stream's pool cannot serve with the device full frees the cached segments and retries (allocator_retry_stalls: a synchronize plus the frees, 4.09 ms + 8.27 ms per GB freed, fitted to our H100 measurement (validate/measure_allocator_retry.py, validate/README.md), extrapolated to the A100; no reference row fitted). Only rows within a few GB of the device's capacity retry, the 80GB 30B ones: seq 8192 (1,007 retries per step), seq 512-4096 (41-42)",
 "module kernels 'mpt' (model::ModuleKernels; llm-foundry llmfoundry/models/layers/attention.py, read at 00ef82a3: Wqkv = nn.Linear with bias, its output split along dim 2 into views, heads as einops views into the Triton kernel, whose separate dq, dk, dv are concatenated by autograd; nn.Linear's bias gradients reduced by autograd): rates from the device's measured memory-bound classes where it has them, else the stream-copy rate",
 "bf16 GEMMs run at the A100 cuBLASLt curve (topologies/devices/a100-*.json, calibration/a100-sxm-cublaslt-azure.json); nothing fitted to these rows",
 "the benchmark's models are GPT-style (biases, learned positions, tied head; proven by the README's NumParams column), not the current MPT yamls' no_bias + ALiBi",
 "attn_impl triton (the benchmark script's default): flash-attn's Triton kernel (attention_kernel flash-attn-triton: the FlashAttention-2 paper's A100 curves by seq length and head dim, slowed by its 1.4x forward / 2x backward speed-ups over this kernel), no s x s scores in memory",
 "llm-foundry's default fused cross-entropy loss, flash-attn's CrossEntropyLoss built without arguments (300cc5c58 llmfoundry/models/mosaic_gpt/mosaic_gpt.py:515; v0.3.0 llmfoundry/models/mpt/modeling_mpt.py:727): bf16 logits kept, and with inplace_backward False (its default, flash_attn/losses/cross_entropy.py:109 at v1.0.3.post0 and v1.0.9) the backward allocates a bf16 gradient of the logits' size (csrc/xentropy/xentropy_kernel.cu:697, at::empty_like(logits), at v0.2.8, the xentropy setup.py pins for the 2023-05 runs, and at v1.0.9): training.fused_cross_entropy_inplace false, 2 B x tokens x 50,368 in the activation workspace of the output head's backward",
 "Composer's train metrics after every micro-batch's backward (training.composer_train_metrics, model/composer_metrics.hpp): llm-foundry registers LanguageCrossEntropy and LanguagePerplexity as the model's train metrics (300cc5c58 llmfoundry/models/mosaic_gpt/mosaic_gpt.py:487-490; v0.3.0 llmfoundry/models/mpt/modeling_mpt.py:697) and nothing in the yamls or the script removes them; Composer's _train_microbatch updates them after the backward on each micro-batch's cached logits, under no_grad and autocast (composer/trainer/trainer.py v0.13.4 :2341-2343 -> :2071-2095, v0.16.4 :2473-2475 -> :2162-2175; models/huggingface.py eval_forward reuses the outputs); each update is a CrossEntropyLoss(reduction='sum') over the whole logits, perplexity recomputing it (metrics/nlp.py v0.13.4 :91, :112, :264-270; v0.16.4 :100, :121, :188-194): under autocast on CUDA (no cross_entropy_loss on PyTorch's CUDA fp32 list, read at 2.x: ASSUMPTION for 1.13) a bf16 log_softmax and nll_loss's fp32 cast of the log-probabilities, per metric 10 B x tokens x 50,368 of traffic at the device's stream rate (ASSUMPTION: the softmax's re-reads of a row hit L2) and 6 B x tokens x 50,368 held while it runs",
 "precision 'bf16' with FSDP mixed_precision PURE (the 40GB table, the 80GB 70B rows): bf16 compute, bf16 all-gathers and reduce-scatters; 'amp_bf16' with DEFAULT (the other 80GB rows): bf16 compute and all-gathers, gradients reduce-scattered in fp32 (Composer's DEFAULT reduce_dtype)",
 "both precisions keep sharded fp32 parameters, gradients and AdamW moments (fsdp_mixed: 16 bytes per parameter before sharding)",
 "both precisions run the forward under torch.autocast(bf16) ('bf16' is Composer 0.13.4's deprecated name of amp_bf16: composer/trainer/trainer.py v0.13.4 :357-372; core/precision.py :59-61) with bf16 FSDP parameters (Composer's get_mixed_precision: PURE bf16 / bf16 / bf16, DEFAULT param and buffer dtype bf16 with reduce_dtype fp32; trainer/mosaic_fsdp.py v0.13.4 :86-92, mosaic_fsdp_utils.py v0.16.4 :87-94) and llm-foundry's low-precision layer norm (submit_benchmarks.py sets model low_precision_layernorm at 300cc5c58 :270 and norm_type low_precision_layernorm at b2a43a147 :307: the norm casts to the autocast dtype and runs with autocast off), so autocast changes no op's dtype in MPT's layers: autocast's cast is a no-op on a tensor already in bf16 (aten/src/ATen/autocast_mode.cpp cached_cast), the linears' inputs and weights are bf16, and the embedding, GELU, residual adds, the Triton attention and flash-attn's fused loss are on none of its CUDA lists (read at a 2025 commit; ASSUMPTION that 1.13 and 2.1 list the same for these ops). Nothing is modelled for autocast but Composer's train metrics below. The 2023-05 measurement of 55 of the 80GB amp_bf16 rows' configurations with the bf16 / PURE stack (validate/llmfoundry_80gb_stacks.py; in each such row's note) agrees with the 2023-10 one within -1.9..+2.6% for 125M-3B but the 760M rows at seq 512 and 1024",
 "limit_all_gathers true (the benchmark script sets it): at most two units gathered ahead, as sharded_schedule does",
 "software of the 40GB table and the 80GB 70B rows (first in llm-foundry commit 300cc5c58, 2023-05-03, copied from mosaicml/examples): submit_benchmarks.py runs image mosaicml/pytorch:1.13.1_cu117 with precision 'bf16' (setup.py pins Composer 0.13.4, whose Trainer maps it to Precision.AMP_BF16, torch autocast to bf16: trainer.py :357-372, gone in v0.14.0; renamed amp_bf16 in Composer #1761), fsdp_config mixed_precision PURE, limit_all_gathers true, activation_checkpointing_reentrant false; setup.py pins flash-attn 1.0.3.post0 and triton 2.0.0.dev20221202 (attn_impl triton)",
 "software of the 80GB table's other 59 rows (amp_bf16, DEFAULT): llm-foundry b2a43a147 (2023-10-19) replaced that table's 86 bf16 / PURE rows of 2023-05 by 61, of which only the two 70B rows are unchanged; its sweep.sh runs the new ones (block 'A100 80GB') as the H100 tables: image mosaicml/pytorch:2.1.0_cu121-python3.10-ubuntu20.04 (PyTorch 2.1.0, CUDA 12.1), llm-foundry v0.3.0 with flash-attn 1.0.9's Triton kernel (llmfoundry-fsdp-h100.json). They are modelled as the other rows (torch-fsdp1, the A100 flash-attn-triton curve), as the H100 scenario models that stack: ASSUMPTION that PyTorch 2.1's FSDP and that Triton build behave as modelled for 1.13 and flash-attn 1.0.3 (not re-read line by line), but for fsdp_pad_copy 'uneven' on those rows: from PyTorch 2.0 (pytorch/pytorch#88769; _runtime_utils.py _post_backward_hook at 00ae0bc91) the post-backward hook copies a gradient with F.pad only when the unit's numel is not a multiple of the shard count, which no MPT block here is, so the reduce-scatter reads DEFAULT's fp32 cast itself (1.13 always copied it: the 40GB and 70B rows keep 'always')",
 "backward_prefetch and forward_prefetch are left unset by the yamls and the script, so Composer's defaults apply: BACKWARD_POST and false (composer/trainer/dist_strategy.py, v0.12.0-v0.15.0); under the rate limiter that is the schedule's one-unit-ahead backward gather (sim/program/sharded_schedule.hpp), with the host thread assumed ahead of the GPU (the shortest layer forward here, 125M and 350M, is ~6 ms)",
 "micro-batches: submit_benchmarks.py asks Composer for device_train_microbatch_size 'auto' unless one is given, which halves the per-device batch after each OOM, but the 2023-05 sweep.sh (300cc5c58 scripts/train/benchmarking/sweep.sh, block 'A100 40GB') sets every 40GB micro-batch explicitly (--microbatch_size; 26, 13, 5 for 125M, 18, 12, 3 elsewhere: hand-set values, not halvings) and matches the table's micro-batch and accumulation on 74 of its 78 rows (the 7B rows at seq 512-4096 ran 48, 24, 12, 6 where it asks 56, 28, 16, 8), so a 40GB row says only that its own micro-batch fit, and that twice it probably did not where the row's micro-batch looks like a largest choice (validate/llmfoundry_tables_accuracy.py --halving: 40 rows with a power-of-two accumulation above 1). The same sweep turns activation checkpointing on for 760M and 1B at seq 32768 and leaves it off at 16384, a hint that micro-batch 1 without checkpointing did not fit at 32768. The caching allocator's cost near the limit (cache flush and cudaMalloc retry, Composer's alloc_retries) is modelled as the engine replays it (training.allocator_retry_stalls)",
 "each FSDP unit is one transformer block (llm-foundry's fsdp_wrap_fn wraps each MPTBlock); the embedding (wte, wpe) and the final norm with the tied head are the root unit, which PyTorch 1.13's FullyShardedDataParallel.forward does not reshard after forward (\"Do not free the root's parameters in the post-forward for FULL_SHARD\"): gathered once per micro-batch before the embedding, not again in backward, reduce-scattered once after the embedding's backward (fsdp_implementation torch-fsdp1)",
 "one process group carries FSDP's all-gathers and reduce-scatters, so they run on ProcessGroupNCCL's one NCCL stream per device in the order the host issues them (ProcessGroupNCCL.cpp of the 1.13 line keys its NCCL streams by device in getNCCLComm; FSDP's all_gather and post_backward streams only order what each collective waits for): in backward, the post-backward hook of unit k reshards k, prefetches k-1's gather, then issues k's reduce-scatter (fsdp_implementation torch-fsdp1)",
 "every micro-batch's backward reduce-scatters (Composer's ddp_sync_context returns at once for a model that is not DistributedDataParallel, so FSDP runs without no_sync), as the schedule does",
 "not modelled, judged too small at these sizes: the per-step gradient clipping (the yamls' gradient_clipping norm 1.0: FSDP.clip_grad_norm_ in 1.13 computes per-parameter norms, all-reduces one scalar and tests clip_coef < 1 on the host, a host sync once per step before the optimizer); Composer's DecoupledAdamW runs per flat parameter (~80 per rank), unfused, GPU-bound at these shard sizes; the time of the post-backward hook's copies (the cast to the reduce dtype, F.pad's copy of each unit's unsharded gradient, the cast of the reduced shard to fp32) on the post_backward stream, memory-bound copies beside the backward compute (their memory is counted: trainsim memory's gathered_gradients, with the root unit in gathered_parameters)",
 "the node is an HGX A100 with one 200 Gb/s RoCE port per GPU and NCCL over RoCE at InfiniBand HDR efficiency (topologies/mosaicml-a100-*-roce.json)",
 "the 80GB rows run on topologies/mosaicml-a100-80g-roce.json (each names it), the others on the scenario's 40GB topology; the two differ only in GPU memory",
 "the 1B row on 32 GPUs of the 40GB table is an outlier in the source (VALIDATION.md 3.2) and is kept, flagged in its note: the README's same 1B configuration per GPU (micro-batch 10, no accumulation) runs at 55.4% MFU on 64 GPUs and 54.4% on 128, so no mechanism that grows with scale explains 45.4% on 32"]
A100_TITLE = "MosaicML llm-foundry MPT benchmarks, A100 40GB and 80GB with 1600 Gbps RoCE: FSDP FULL_SHARD, 125M-70B, seq 512-65536, 8-128 GPUs"
A100_DESCRIPTION = "Every row of llm-foundry's MPT throughput tables for the A100 40GB (78) and 80GB (61), VALIDATION.md 3.2's 33 first: PyTorch FSDP full sharding over every GPU, bf16, triton flash attention, activation checkpointing as listed, micro-batch and gradient accumulation as listed. The reference is the measured throughput (tokens/s/GPU) as sequences/s, and as TFLOP/s per GPU in the report's convention (model FLOPs plus the layers' forward again when checkpointing; llm-foundry's HFU x 312 TFLOP/s agrees within 1.5% at seq 2048 and within 3.7% on every row, the difference being the position table llm-foundry counts in its parameters)."
A100_MODEL_SOURCE = "shapes: llm-foundry scripts/train/yamls/pretrain/mpt-{125m,350m,760m,1b,3b,7b,13b,30b,70b}.yaml (d_model, n_heads, n_layers, expansion_ratio 4, vocab_size 50368). The benchmark runs' models have biases and a learned position table, not the current yamls' no_bias + ALiBi: the README's NumParams column equals 12 l h^2 + 13 l h + (V + seq) h + 2h exactly (e.g. 125M at seq 2048: 125,311,488; 70B: 64,862,437,376) and grows with seq by h per position, i.e. the GPT architecture's defaults here. Dropout 0 (MPT's attn/resid/emb_pdrop defaults)"
A100_REFERENCE = {
 "source": "llm-foundry scripts/train/benchmarking/README.md at 5e85bd62d (2024-01-06), tables 'A100 40GB with 1600 Gbps node-node interconnect (RoCE)' and 'A100 80GB ...', every row (validate/llmfoundry_tables.py): the 40GB rows as first published in 300cc5c58 (2023-05-03), the 80GB table as b2a43a147 (2023-10-19) rewrote it; both unchanged from b2a43a147 to 8c8dd48f7 (2025). The first 33 rows are shared/VALIDATION.md 3.2's",
 "table": "tokens/s/GPU x GPUs / seq as sequences/s; TFLOP/s per GPU = tokens/s/GPU / seq x the report's FLOPs per sequence",
 "note": "MFU/HFU-to-TFLOP/s: llm-foundry's HFU x 312 counts the whole forward again (embedding/head too) and 6 N with N including the position table; the report counts the layers' forward only and excludes table lookups. Both agree within 1.5% at seq 2048; the position table's 6 s h FLOPs per token take the gap to 3.6% for 125M at seq 65536"
}


# The report counts the model's FLOPs without the position table and, under checkpointing, adds
# the layers' forward only; llm-foundry's formula counts the position table in N (6 s h FLOPs per
# token) and multiplies everything by 4/3. The two differ by up to 3.7% (125M at seq 65536 on 80 GB,
# where the position table is 8% of N), under 1.5% at seq 2048; more means a wrong row or formula.
CONVENTION_GAP = 0.037


def point(label, r, peak, note, topology=None, training=None):
    """One table row as a scenario point; returns it and |ref_tf / (HFU-or-MFU x peak) - 1|."""
    name, s, g, tok = r.model, r.seq, r.gpus, r.tokens_per_s_per_gpu
    h, a, l = SHAPES[name]
    ref_tf = tok / s * report_flops(h, l, s, r.checkpointing) / 1e12
    util = (r.hfu if r.checkpointing else r.mfu) * peak / 100
    p = {"label": label}
    if topology:
        p["topology"] = topology
    p.update({"nodes": g // 8,
              "model": {"name": f"MPT-{name}", "hidden": h, "heads": a, "layers": l, "seq_len": s},
              "training": {"micro_batch": r.micro_batch, "gradient_accumulation": r.accumulation,
                           "activation_checkpointing": r.checkpointing,
                           "gradient_dtype": GRADIENT_DTYPE[(r.precision, r.mp_mode)], **(training or {})},
              "data_parallel_degree": g,
              "reference_samples_per_s": round(tok * g / s, 4),
              "reference_tflops_per_accelerator": round(ref_tf, 2),
              "note": f"global batch {r.global_batch} = {g} GPUs x {r.micro_batch} x {r.accumulation}; {tok} tokens/s/GPU, "
                      f"MFU {r.mfu}%, HFU {r.hfu}%; " + note})
    return p, abs(ref_tf / util - 1)


def labelled(prefix, rows):
    """Labels "<prefix> <model> seq <s> x <GPUs>"; a row sharing that with an earlier one (the 80GB
    table's two 125M seq 2048 x 8 runs) gets its micro-batch appended."""
    seen, out = set(), []
    for r in rows:
        label = f"{prefix}{r.model} seq {r.seq} x {r.gpus}"
        if label in seen:
            label += f" micro-batch {r.micro_batch}"
        if label in seen:
            raise SystemExit(f"make_llmfoundry_scenarios.py: label {label!r} twice")
        seen.add(label)
        out.append((label, r))
    return out


def checked_points(table, rows, peak, make):
    """Checks every row, makes its point with make(label, row) and fails if the reference TFLOP/s
    strays from llm-foundry's utilization x peak by more than the conventions explain."""
    pts, worst = [], 0
    for label, r in rows:
        check_row(r, table, peak)
        p, err = make(label, r)
        pts.append(p)
        worst = max(worst, err)
    print(table, len(pts), "rows; max |ref_tf/HFU-or-MFU tf - 1| =", round(worst*100, 2), "%")
    if worst > CONVENTION_GAP:
        raise SystemExit(f"make_llmfoundry_scenarios.py: {table}: reference TFLOP/s {worst:.1%} from utilization x peak")
    return pts


def a100_points(mem, table):
    """The A100 table's rows; the 80GB rows name their own topology."""
    name = "A40" if mem == 40 else "A80"
    def make(label, r):
        # The table's Precision / MP Mode column: bf16 with PURE (the 40GB table, the 80GB 70B
        # rows) or amp_bf16 with DEFAULT (gradients reduced in fp32).
        pure = r.mp_mode == "PURE"
        note = "bf16, FSDP mixed_precision PURE" if pure else "amp_bf16, FSDP mixed_precision DEFAULT (fp32 gradient reduction)"
        if mem == 40 and r.model == "1B" and r.gpus == 32:
            note += "; OUTLIER: VALIDATION.md 3.2 marks this row an outlier (45% MFU against 56% for the same model on 8 GPUs); kept as published, not expected to match"
        earlier = A80_2023_05.get((r.model, r.seq, r.gpus, r.micro_batch, r.accumulation)) if not pure else None
        if earlier:
            change = r.tokens_per_s_per_gpu / earlier.tokens_per_s_per_gpu - 1
            note += f"; the 2023-05 table (bf16 / PURE stack) measured this configuration at {earlier.tokens_per_s_per_gpu} tokens/s/GPU ({change:+.1%} since)"
            # Elsewhere the two stacks agree within -1.9..+2.6% (125M-3B) or the newer is faster
            # (7B-30B); a fall beyond 10% is the run's, not the stack's.
            if change < -0.10:
                note += "; SOURCE ANOMALY: over 10% below the 2023-05 measurement of the same configuration (elsewhere the two agree or the newer stack is faster)"
        # The amp_bf16 rows ran PyTorch 2.1, whose FSDP pads a gradient only when it must.
        return point(label, r, 312, note, topology=None if mem == 40 else f"../topologies/mosaicml-a100-{mem}g-roce.json",
                     training=None if pure else {"fsdp_pad_copy": "uneven"})
    return checked_points(name, labelled(f"{mem}GB ", ordered(table, name)), 312, make)


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
        "model": model_block(ordered(tables.A40, "A40")[0], A100_MODEL_SOURCE),
        "training": A100_TRAINING, "assumptions": A100_ASSUMPTIONS + [METRIC_SYNC], "reference": A100_REFERENCE,
        "points": a100_points(40, tables.A40) + a100_points(80, tables.A80)})


# The H100 tables ran a later stack than the A100 ones (validate/ACCURACY.md "llm-foundry on the H100").
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
    "torch-fsdp1, not re-read line by line at v2.1.0 / Composer 0.16. One difference is modelled: fsdp_pad_copy 'uneven', the post-backward hook "
    "pads (copies) a unit's gradient only when its numel is not a multiple of the shard count (pytorch/pytorch#88769, merged 2022-11-10, in 2.0; "
    "_runtime_utils.py _post_backward_hook at 00ae0bc91, the 2.0 line; ASSUMED unchanged at v2.1.0), where 1.13 always copied it with F.pad: "
    "under DEFAULT the reduce-scatter reads the fp32 cast. Every MPT block here divides by its shard count; Composer 0.16 sets use_orig_params "
    "(dist_strategy.py :148), whose alignment of each parameter to 16 bytes adds nothing for MPT's shapes (every parameter a multiple of 4 elements)")
H100_ALLOCATOR = ("PyTorch's caching allocator driven from the host's issue order with retry stalls (allocator_host_issue, allocator_retry_stalls; the retry cost "
    "measured on our H100, validate/measure_allocator_retry.py), as for the A100 tables")
H100_TOPOLOGY = ("the node is topologies/mosaicml-h100-ib.json: the HGX H100 of dgx-h100-ib.json (its device profile and NVSwitch fit) with an ASSUMED 8 x 400 Gb/s "
    "inter-node fabric, since the README states none; the multi-node rows were also run on 1600 Gbps per node (topologies/mosaicml-h100-ib-1600g.json, "
    "validate/llmfoundry_h100_fabric.py; validate/ACCURACY.md llm-foundry H100 section)")
H100_FP8 = ("the FP8 rows (precision amp_fp8): submit_benchmarks.py sets model fc_type 'te' on h100 + fp8, so MPT's four linears per block are Transformer Engine v0.10 "
    "te.Linear (run_config installs TE at v0.10), under Composer's te.fp8_autocast (delayed scaling); linear_precision fp8 with fp8_implementation "
    "transformer-engine runs them at the H100's measured FP8 GEMM curves. Where the model's TE path (Megatron-core's modules) differs from this run: "
    "MPT's low_precision_layernorm stays a bf16 kernel and te.Linear casts its input (the model has the norm write the FP8 input of QKV and the "
    "first MLP linear); Composer passes no is_first_microbatch, so TE re-casts the gathered bf16 weights every micro-batch (the model: once per step); "
    "TE's amax reduction is not modelled under FSDP. The first two are memory-bound passes, about 13 GB and 11 GB of traffic per micro-batch on the 3B seq 2048 row (~8 ms at "
    "the stream rate) against a ~0.6 s micro-batch: 1-2%, left out. Composer's amp_fp8 enters only te.fp8_autocast, no torch autocast "
    "(composer/core/precision.py v0.16.4 :69-80), and runs the train-metric updates in that context (trainer.py v0.16.4 :2162-2175): "
    "composer_train_metrics_autocast false, nll_loss on the bf16 log-probabilities without the fp32 cast; the rest of MPT's layers is bf16 "
    "either way (bf16 FSDP parameters: Composer maps amp_fp8's param dtype to bf16, mosaic_fsdp_utils.py v0.16.4 :58-63). The table's MFU column is against the FP8 peak (3B seq 2048: Model TFLOP 548 = 27.7% x 1979), the reference here as every row's: the "
    "measured tokens/s")
H100_LARGE = ("the Large Scale table's FULL_SHARD rows (128-512 GPUs, last in the points), from 5e85bd62d's scripts/train/benchmarking/sweep.py: "
    "--fsdp_config_backward_prefetch BACKWARD_PRE and --fsdp_config_forward_prefetch true, which submit_benchmarks.py passes into fsdp_config "
    "(mod_parameters), so training.fsdp_backward_prefetch 'pre' and fsdp_forward_prefetch true on these points; --git_branch main (2024-01) installed "
    "with the gpu-flash2 extra: setup.py pins torch>=2.1,<2.1.1, Composer 0.17, flash-attn 2.4.2 and triton-pre-mlir's sm90 branch. attn_impl per "
    "model: 'flash' for 7B and 70B, flash-attn 2.4.2's FlashAttention-2 kernel, modelled by the H100 profile's measured flash-attention-2 curve "
    "(PyTorch SDPA's flash backend, the same FA2 algorithm: ASSUMED to run as flash-attn 2.4.2's own build); 'triton' for 13B and 30B, as the "
    "other H100 rows. attn_impl 'flash' runs flash_attn_fn (5e85bd62d llmfoundry/models/layers/attention.py:216-367), which unpads q, k "
    "and v with flash-attn's bert_padding.unpad_input (a key_padding_mask of ones when none is given) before flash_attn_varlen_func and pads "
    "the output back with pad_input: training.module_kernels 'mpt-flash' (model::ModuleKernels::mpt_flash), per layer a gather of each of "
    "q, k, v (4 B per element read + written) and a zeros + index put of the output (6 B) forward, an index select (4 B) and a zeros + "
    "scatter_ per q, k, v (6 B) backward (flash-attn v2.4.2 flash_attn/bert_padding.py:8-64, 98-122, 197-209); the gather / scatter index, "
    "einops 0.7.0's repeat(indices, 'z -> z d'), is a stride-0 expand (einops/_backends.py:262-267), not a tokens x hidden int64 tensor. "
    "No gather / scatter / fill kernel is measured: they stream at the measured stream-copy rate (2.74 TB/s, topologies/calibration/h100-sxm-measured.json; ASSUMPTION). Not modelled: unpad_input's small "
    "kernels and its two host synchronisations per call (torch.nonzero, .item()), 3 calls per layer forward. The image is not named (--image <insert_image_name>): ASSUMED the H100 tables' PyTorch 2.1 stack (setup.py allows only 2.1.0). "
    "The sweep's --precisions bf16 reaches Composer as amp_bf16 and its --fsdp_config_mixed_precision PURE is not passed (the table says amp_bf16, "
    "DEFAULT). Inter-node fabric as the other multi-node rows (ASSUMED 8 x 400 Gb/s)")
H100_LARGE_GRAD_OP = ("the Large Scale table's 6 SHARD_GRAD_OP rows (1B and 3B on 128-512 GPUs, last in the points): sweep.py's "
    "--fsdp_config_shard_strategy SHARD_GRAD_OP, which submit_benchmarks.py passes as fsdp_config sharding_strategy (5e85bd62d :339-341), "
    "--attn_impl flash (the H100 profile's flash-attention-2 curve and flash_attn_fn's unpad / pad passes, module_kernels 'mpt-flash', as the 7B rows), no activation checkpointing, BACKWARD_PRE and forward prefetch "
    "as the FULL_SHARD rows: training.fsdp_sharding_strategy 'shard_grad_op'. PyTorch FSDP1 then frees no unit after its forward "
    "(_runtime_utils.py _post_forward_reshard frees only strategies in RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES, FULL_SHARD and HYBRID_SHARD) "
    "and frees it in the post-backward hook when gradients are synchronised (_should_free_in_backward), so each unit is gathered once per "
    "micro-batch and the backward gathers nothing; the rate limiter, which waits only on the free events of freed units, does not bound the "
    "forward's gathers. Read at pytorch/pytorch 00ae0bc91 (the 2.0 line, the one whole copy at hand), ASSUMED unchanged at v2.1.0 (the stored "
    "2.x copies read the same). Composer 0.17 runs FSDP without no_sync (trainer.py v0.17.0 :2307, :2386, dist_strategy.py :71), so the "
    "gradients are reduce-scattered every micro-batch (these rows have one per step)")
METRIC_SYNC = ("Composer's per-batch metric sync after the optimizer step (training.composer_metric_sync, model/composer_metric_sync.hpp): "
               "Composer computes the train metrics every batch, not at log intervals (composer/trainer/trainer.py _train_loop: v0.13.4 :2010-2014, v0.16.4 :2086-2091, v0.17.2 :2102-2106; "
               "reset in _train_batch, v0.17.2 :2231-2235), after the loss's all-reduce and .item() (v0.17.2 :2074-2076) and _accumulate_time_across_ranks (:1972-1992). "
               "torchmetrics' compute() gathers each state over the world (metric.py v1.0.3 :407-438; utilities/distributed.py v1.0.3 :96-121, v0.11.3 :96-126: a barrier, "
               "world_size torch.zeros_like, a list all_gather that ProcessGroupNCCL copies out with one copy_ per rank); LanguageCrossEntropy and LanguagePerplexity "
               "hold two 0-dim states each (metrics/nlp.py v0.17.2 :101-102): 2 metrics x 2 states x 2 x world_size host calls per step, after a drain, at the device's "
               "eager_copy_call (13 us, measured for Tensor.copy_ with PyTorch 2.11 on the project's H100 host; ASSUMPTION for a zeros_like and c10d's C++ copy_ "
               "with PyTorch 1.13 / 2.1 on the runs' hosts): 13.3 ms per step on 128 GPUs, 53 ms on 512, 0.8 ms on 8. The constant part (the reads, barriers' latency, stacks) is left out")

H100_SHARED = [A100_ASSUMPTIONS[i] for i in (1, 3, 5, 6, 8)]  # module kernels, GPT shapes, fused loss, train metrics, fp32 master state


def h100_scenario():
    def make(label, r):
        fp8 = r.precision == "amp_fp8"
        note = (r.precision + ", FSDP mixed_precision DEFAULT (fp32 gradient reduction)"
                + ("; Transformer Engine v0.10 te.Linear (fc_type te); MFU against the FP8 peak 1979 TFLOP/s" if fp8 else ""))
        return point(label, r, 1979 if fp8 else 989, note,
                     training={"linear_precision": "fp8", "fp8_implementation": "transformer-engine",
                               "composer_train_metrics_autocast": False} if fp8 else None)
    bf16 = ordered(tables.H100_BF16, "H100_BF16")
    bf16_pts = checked_points("H100_BF16", labelled("H100 ", bf16), 989, make)
    fp8_pts = checked_points("H100_FP8", labelled("H100 FP8 ", ordered(tables.H100_FP8, "H100_FP8")), 1979, make)
    n = len(VALIDATION_32["H100_BF16"])  # VALIDATION.md 3.2's FP8 row followed its BF16 rows: it stays there
    def make_large(label, r):
        p, err = make(label, r)
        p["training"].update({"fsdp_backward_prefetch": "pre", "fsdp_forward_prefetch": True})
        if r.model in ("7B", "70B"):  # sweep.py's --attn_impl flash
            p["training"].update({"attention_kernel": "flash-attention-2", "module_kernels": "mpt-flash"})
        p["note"] += "; sweep.py: BACKWARD_PRE, forward_prefetch, attn_impl " + ("flash" if r.model in ("7B", "70B") else "triton")
        return p, err
    large_pts = checked_points("H100_BF16_LARGE", labelled("H100 large-scale ", ordered(tables.H100_BF16_LARGE, "H100_BF16_LARGE")),
                               989, make_large)
    def make_grad_op(label, r):
        p, err = make(label, r)
        p["training"].update({"fsdp_backward_prefetch": "pre", "fsdp_forward_prefetch": True,
                              "fsdp_sharding_strategy": "shard_grad_op", "attention_kernel": "flash-attention-2",
                              "module_kernels": "mpt-flash"})
        p["note"] += "; sweep.py: SHARD_GRAD_OP, BACKWARD_PRE, forward_prefetch, attn_impl flash"
        return p, err
    grad_op_rows = ordered(tables.H100_BF16_LARGE_SHARD_GRAD_OP, "H100_BF16_LARGE_SHARD_GRAD_OP")
    grad_op_pts = checked_points("H100_BF16_LARGE_SHARD_GRAD_OP", labelled("H100 large-scale ", grad_op_rows), 989, make_grad_op)
    pts = bf16_pts[:n] + fp8_pts[:1] + bf16_pts[n:] + fp8_pts[1:] + large_pts + grad_op_pts
    training = dict(A100_TRAINING, gradient_dtype="fp32", fsdp_pad_copy="uneven", note="FSDP FULL_SHARD over every GPU with MixedPrecision DEFAULT (fp32 sharded parameters "
                    "and gradients, bf16 working copies and all-gathers, fp32 reduce-scatters), decoupled AdamW; per point: micro-batch, accumulation, "
                    "checkpointing; the FP8 rows their linear precision")
    write("scenarios/llmfoundry-fsdp-h100.json", {
        "schema_version": 1, "name": "llmfoundry-fsdp-h100",
        "title": "MosaicML llm-foundry MPT benchmarks, H100 80GB BF16 and FP8: FSDP FULL_SHARD and SHARD_GRAD_OP, 760M-70B, seq 512-65536, 8-512 GPUs",
        "description": "Every row of llm-foundry's H100 80GB BF16 (52) and FP8 (7) tables, VALIDATION.md 3.2's 13 first: PyTorch 2.1 FSDP full sharding over "
                       "every GPU, amp_bf16 (FP8 linears on the FP8 rows), llm-foundry's Triton flash attention, activation checkpointing, micro-batch and "
                       "accumulation as listed; then the 12 FULL_SHARD rows of the BF16 Large Scale table (7B-70B on 128-512 GPUs, BACKWARD_PRE and forward "
                       "prefetch, flash-attn 2 for 7B and 70B) and its 6 SHARD_GRAD_OP rows (1B, 3B: each unit gathered once per micro-batch and kept through its backward). The first FSDP rows on the H100 profile measured in this project. The reference is the measured "
                       "throughput (tokens/s/GPU) as sequences/s, and as TFLOP/s per GPU in the report's convention (llm-foundry's HFU x 989, or HFU-or-MFU "
                       "x 1979 on the FP8 rows, agrees within 1.5% at seq 2048 and 2% on every row).",
        "topology": "../topologies/mosaicml-h100-ib.json",
        "model": model_block(bf16[0], A100_MODEL_SOURCE + "; the H100 table's NumParams obeys the same count (13B at seq 2048: 12,853,954,560)"),
        "training": training,
        "assumptions": [H100_SOFTWARE, H100_PRECISION, H100_ATTENTION, H100_GEMMS, H100_FSDP, H100_ALLOCATOR, *H100_SHARED, H100_TOPOLOGY, H100_FP8,
                        H100_LARGE, H100_LARGE_GRAD_OP, METRIC_SYNC],
        "reference": {"source": f"{README} at llm-foundry 5e85bd62d (2024-01-06), tables 'H100 80GB BF16' and 'H100 80GB FP8', every row (validate/llmfoundry_tables.py; added in b2a43a147, 2023-10-19, unchanged up to 8c8dd48f7). The first 13 rows are shared/VALIDATION.md 3.2's",
                      "table": A100_REFERENCE["table"],
                      "note": "MFU/HFU-to-TFLOP/s: as for the A100 tables, with 989 TFLOP/s (BF16) and 1979 (the FP8 rows: the README's Model TFLOP column is MFU x 1979 there)"},
        "points": pts})


if __name__ == "__main__":
    a100_scenario()
    h100_scenario()

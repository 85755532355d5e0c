#!/usr/bin/env python3
"""Hugging Face BERT-base masked-LM training step pieces on this GPU and its host, as the Hugging
Face Trainer runs them (scenarios/hf-bert-base-gaudi-a100.json's A100 rows: transformers 4.21's
eager BertLayer under torch.cuda.amp fp16, DDP, main-process data collation):
  - the model's forward and backward (BertForMaskedLM, bert-base-uncased shape, 32,000-token
    vocabulary, seq 512, dropout 0.1, eager attention, autocast fp16, GradScaler-scaled loss) at
    batch 32 and 64: CUDA-event times and the kernels by class (torch profiler);
  - the same step under torch DDP on a one-rank NCCL group, with find_unused_parameters False and
    True (the Trainer's default for BERT in 4.21): what the unused-parameter search costs the step;
  - DataCollatorForLanguageModeling (mlm_probability 0.15) on 32 / 64 examples of 512 tokens, on
    the host, as the Trainer's DataLoader calls it with dataloader_num_workers 0.
The transformers here is today's (the machine's), whose eager BERT attention follows 4.21's ops
(matmul, scale, mask add, softmax, dropout, matmul); the simulator's side is its hf-bert layer on
the H100 profile (validate/hf_bert_accuracy.py). Run on a GPU machine:
  python3 validate/measure_hf_bert.py --out FILE"""
import argparse
import os
import statistics
import sys
import tempfile
import time

from torch_measurement import cuda_torch, events_ms, failure, measured_provenance, write_json

SEQ = 512
VOCAB = 32000
BATCHES = (32, 64)


def bert(torch):
    import transformers
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512)
    try:
        model = BertForMaskedLM._from_config(cfg, attn_implementation="eager")
    except (TypeError, ValueError):
        cfg._attn_implementation = "eager"
        model = BertForMaskedLM(cfg)
    impl = getattr(model.config, "_attn_implementation", "unknown")
    return model.cuda().train(), {"transformers": transformers.__version__, "attn_implementation": impl}


def batch_of(torch, batch):
    g = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(5, VOCAB, (batch, SEQ), generator=g)
    labels = torch.full_like(ids, -100)
    masked = torch.rand((batch, SEQ), generator=g) < 0.15
    labels[masked] = ids[masked]
    return {"input_ids": ids.cuda(), "attention_mask": torch.ones_like(ids).cuda(),
            "token_type_ids": torch.zeros_like(ids).cuda(), "labels": labels.cuda()}


def step_fns(torch, model, inputs, scaler):
    def forward():
        with torch.autocast("cuda", dtype=torch.float16):
            return model(**inputs).loss

    def step():
        loss = forward()
        scaler.scale(loss).backward()
        for p in model.parameters():
            p.grad = None
    return forward, step


def classes_of(torch, fn, steps=3):
    """Per kernel class, and the 40 longest kernels, of one fn() call (torch profiler)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from profile_torch_layers import profiled_kernel_table
    klist, classes = profiled_kernel_table(torch, fn, steps, name_chars=120)
    return dict(sorted(classes.items())), [{k: v for k, v in kern.items() if k != "class"} for kern in klist[:40]]


def measure_model(torch, batch):
    model, info = bert(torch)
    inputs = batch_of(torch, batch)
    scaler = torch.amp.GradScaler("cuda")
    forward, step = step_fns(torch, model, inputs, scaler)
    fwd = events_ms(torch, forward, 10)
    st = events_ms(torch, step, 10)
    classes, top = classes_of(torch, step)
    row = dict(info, batch=batch, seq=SEQ, forward_with_grad_ms=round(fwd, 3), step_ms=round(st, 3),
               backward_ms=round(st - fwd, 3), kernels_per_step=round(sum(c["calls"] for c in classes.values()), 1),
               classes=classes, top_kernels=top)
    print("batch %d (%s attention, transformers %s): forward %.2f ms, forward+backward %.2f ms, %d kernels; %s" % (
        batch, info["attn_implementation"], info["transformers"], fwd, st, row["kernels_per_step"],
        ", ".join("%s %.0f us" % (k, v["us"]) for k, v in classes.items())), flush=True)
    del model
    torch.cuda.empty_cache()
    return row


def measure_ddp(torch, batch):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("nccl", rank=0, world_size=1)
    rows = []
    for find_unused in (None, False, True):
        model, info = bert(torch)
        if find_unused is not None:
            # transformers 4.21 Trainer: bucket_cap_mb = ddp_bucket_cap_mb (None: DDP's 25 MB)
            model = DDP(model, device_ids=[0], find_unused_parameters=find_unused)
        inputs = batch_of(torch, batch)
        scaler = torch.amp.GradScaler("cuda")
        _, step = step_fns(torch, model, inputs, scaler)
        ms = events_ms(torch, step, 15)
        # host time of one step's issue (the GPU drained before and after)
        host = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        row = {"batch": batch, "ddp": find_unused is not None, "find_unused_parameters": find_unused,
               "step_ms": round(ms, 3), "host_issue_ms": round(statistics.median(host), 3)}
        rows.append(row)
        print("batch %d %s: step %.2f ms, host issue %.2f ms" % (
            batch, "no DDP" if find_unused is None else "DDP find_unused_parameters=%s" % find_unused,
            ms, row["host_issue_ms"]), flush=True)
        del model
        torch.cuda.empty_cache()
    return rows


def measure_collator(batch):
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling
    import random
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.txt")
        with open(vocab, "w") as fh:
            fh.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["tok%d" % i for i in range(VOCAB - 5)]))
        tok = BertTokenizerFast(vocab_file=vocab)
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
    rng = random.Random(0)
    examples = []
    for _ in range(batch):
        ids = [2] + [rng.randrange(5, VOCAB) for _ in range(SEQ - 2)] + [3]
        examples.append({"input_ids": ids, "token_type_ids": [0] * SEQ, "attention_mask": [1] * SEQ,
                         "special_tokens_mask": [1] + [0] * (SEQ - 2) + [1]})
    times = []
    for _ in range(25):
        t0 = time.perf_counter()
        collator(examples)
        times.append((time.perf_counter() - t0) * 1e3)
    row = {"batch": batch, "collator_ms_median": round(statistics.median(times[5:]), 3),
           "collator_ms_min": round(min(times[5:]), 3)}
    print("DataCollatorForLanguageModeling, batch %d x %d: %.2f ms (median), %.2f ms (min)" % (
        batch, SEQ, row["collator_ms_median"], row["collator_ms_min"]), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch = cuda_torch("measure_hf_bert")
    if torch is None:
        return 1
    doc = {"provenance": measured_provenance(torch, "validate/measure_hf_bert.py"),
           "cpu": (open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
                   if os.path.exists("/proc/cpuinfo") else "unknown"),
           "model": [], "ddp": [], "collator": []}
    for part, fn in (("model", measure_model), ("ddp", measure_ddp), ("collator", lambda t, b: measure_collator(b))):
        for b in BATCHES:
            try:
                out = fn(torch, b)
                doc[part].extend(out if isinstance(out, list) else [out])
            except Exception as e:  # noqa: BLE001 - recorded, the other parts still run
                doc[part].append({"batch": b, "error": failure(e)})
                print("%s batch %d failed: %s" % (part, b, failure(e)), flush=True)
            write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

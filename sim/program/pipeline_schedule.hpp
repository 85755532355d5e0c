#pragma once
// Megatron-LM's PTD-P: tensor parallelism inside a node (or over whole nodes), pipeline stages
// across nodes, data parallelism over the replicas (Narayanan et al. 2021).
//  - Each pipeline stage runs its micro-batches in the schedule's order: GPipe (all forwards,
//    then all backwards), 1F1B (pp - stage - 1 warm-up forwards, then one forward and one
//    backward alternately), or interleaved 1F1B (v model chunks per stage, Megatron's order and
//    warm-up). The bubble is not a formula: it is the time a stage waits for its neighbours.
//  - Activations and their gradients cross stage boundaries in Megatron's blocking exchanges
//    (pipeline_exchanges.hpp): the next slot waits for the whole batch; with TP (no SP) each TP
//    rank sends 1/tp of the tensor and the receiving stage all-gathers it (scatter/gather).
//  - Every layer pass ends with an all-reduce over the TP group, in the critical path; with
//    sequence parallelism (Korthikanti et al. 2022) it starts with an all-gather and ends with
//    a reduce-scatter instead, the same bytes on the wire, while norms, dropout and residuals
//    run on 1/tp of the sequence (model::LayerShape), and a backward pass also re-gathers the
//    column-parallel linears' inputs for their weight gradients beside its compute.
//  - The ends of the model have their own TP collectives: the vocabulary-parallel embedding
//    sums its slices (all-reduce; reduce-scatter under SP without a position table, and an
//    all-gather in its backward under SP), the loss all-reduces three fp32 values per token,
//    and the output projection's input gradient is all-reduced (reduce-scattered under SP,
//    whose forward all-gathers the head's input).
//  - With pipeline stages and tied embeddings, the last stage holds a copy of the word
//    embedding; its gradient is all-reduced between the first and last stage after the
//    data-parallel reduction, before the optimizer (Megatron's embedding group).
//  - Gradients: each stage reduces its gradients over its data-parallel group after the pipeline
//    flush (DeepSpeed's pipeline engine, the paper's runs) or, with overlap_grad_reduce, in
//    buckets as each chunk's last micro-batch's backward produces them (Megatron's
//    overlap_grad_reduce, SMP v1). DDP all-reduces them and steps the whole optimizer; ZeRO-1
//    (SMP v1's optimizer-state sharding, DeepSpeed ZeRO-1, Megatron's distributed optimizer)
//    reduce-scatters them, steps the optimizer on the rank's 1/dp shard and all-gathers the
//    updated parameters, neither overlapping compute (source 002), unless overlap_param_gather
//    moves the all-gather into the step's first forwards, bucket by bucket (Megatron's
//    distributed optimizer). A shard group smaller than
//    dp (hybrid_shard_degree) adds an all-reduce of the shard across the replicas.
//  - FSDP inside the stages, as torchtitan runs it (schedule fsdp with FSDP2): torchtitan's
//    apply_fsdp sets reshard_after_forward = not pp_enabled, so each stage gathers every unit (a
//    layer; the embedding with the first) once per step, at its chunk's first forward, one unit
//    ahead, and keeps it to the end of the step: the gather path above without Megatron's
//    aligned dispatch. PyTorch's pipelining stage (stage.py backward_maybe_with_nosync) runs
//    the other micro-batches' backwards without gradient sync and after the last one each unit's
//    post_backward in turn: one reduce-scatter per unit after the stage's flush, waited for
//    before the optimizer. Each unit's post-backward hook casts its bf16 gradient into the fp32
//    accumulated one (first micro-batch, 6 B per parameter) or adds it in (later ones, 10 B):
//    FSDPParam's to_accumulated_grad_if_needed / accumulate_unsharded_grad_if_needed.
//  - ZB-H1 (pipeline_schedule "zb-h1"; Qi et al., "Zero Bubble (Almost) Pipeline Parallelism",
//    ICLR 2024), as the paper's Megatron-LM runs it (sail-sg/zero-bubble-pipeline-parallelism
//    95212f70: schedules.py with weight_grad_store.py): 1F1B's order and exchanges, but on every
//    stage but the first the backwards of the first `stage` steady-state iterations, the last
//    one's and the cool-down's compute only the input gradients (B) and queue their weight
//    gradients (W); one queued W runs after the last steady iteration's send (from iteration
//    `stage` on) and after each cool-down backward's send (from the one where
//    remaining + i >= stage), the rest after the last backward. So the W fill the cool-down's
//    bubble, which shrinks to (pp - 1)(T_F + T_B - T_W) (the paper's ZB-H1), with 1F1B's
//    micro-batches in flight. A layer's W is its _wgrad GEMMs (and the bias gradients with
//    them), the last stage's also the output layer's.
//  - The optimizer is one fused pass, Megatron 2021's fp16 optimizer (five passes with the inf
//    flag and the gradient norm all-reduced over the model-parallel group between them), or
//    torch.optim's foreach AdamW after clip_grad_norm_ (the sharded schedule's ops).
#include <cstdint>

#include "program/program.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

/// One compute slot of a stage: a micro-batch's forward or backward through one model chunk.
struct PipelineSlot {
  /// What of a backward the slot runs: all of it, its input gradients only (B: what the previous
  /// stage waits for), or the weight gradients B left (W). Forwards are whole.
  enum class Part : std::uint8_t { whole, input, weight };
  long micro_batch = 0;
  long chunk = 0;  ///< model chunk on this stage (0 unless interleaved)
  bool forward = true;
  Part part = Part::whole;
};

/// The order in which stage `stage` runs its slots; plain data, testable alone.
[[nodiscard]] std::vector<PipelineSlot> pipeline_order(plan::PipelineSchedule schedule, long pp,
                                                       long stage, long micro_batches, long chunks);

[[nodiscard]] Program build_pipeline_parallel(const ScheduleInputs& in);

}  // namespace trainsim::program

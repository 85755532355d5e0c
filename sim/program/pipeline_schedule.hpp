#pragma once
// Megatron-LM's PTD-P: tensor parallelism inside a node, pipeline stages across nodes, data
// parallelism over the replicas (Narayanan et al. 2021).
//  - Each pipeline stage runs its micro-batches in the schedule's order: GPipe (all forwards,
//    then all backwards), 1F1B (pp - stage - 1 warm-up forwards, then one forward and one
//    backward alternately), or interleaved 1F1B (v model chunks per stage, Megatron's order and
//    warm-up). The bubble is not a formula: it is the time a stage waits for its neighbours.
//  - Activations and their gradients cross stage boundaries as point-to-point transfers (one
//    stream per boundary and direction, so no two transfers can wait on each other).
//  - Every layer pass ends with an all-reduce over the TP group, in the critical path; with
//    sequence parallelism (Korthikanti et al. 2022) it starts with an all-gather and ends with
//    a reduce-scatter instead, the same bytes on the wire, while norms, dropout and residuals
//    run on 1/tp of the sequence (model::LayerShape). Megatron's re-gather of the input for
//    the weight gradient, overlapped with the input-gradient GEMM, is not modelled.
//  - Gradients: each stage reduces its gradients over its data-parallel group after the pipeline
//    flush (DeepSpeed's pipeline engine, the paper's runs) or, with overlap_grad_reduce, in
//    buckets as each chunk's last micro-batch's backward produces them (Megatron's
//    overlap_grad_reduce, SMP v1). DDP all-reduces them and steps the whole optimizer; ZeRO-1
//    (SMP v1's optimizer-state sharding, DeepSpeed ZeRO-1, Megatron's distributed optimizer)
//    reduce-scatters them, steps the optimizer on the rank's 1/dp shard and all-gathers the
//    updated parameters, neither overlapping compute (source 002). A shard group smaller than
//    dp (hybrid_shard_degree) adds an all-reduce of the shard across the replicas.
#include "program/program.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

/// One compute slot of a stage: a micro-batch's forward or backward through one model chunk.
struct PipelineSlot {
  long micro_batch = 0;
  long chunk = 0;  ///< model chunk on this stage (0 unless interleaved)
  bool forward = true;
};

/// The order in which stage `stage` runs its slots; plain data, testable alone.
[[nodiscard]] std::vector<PipelineSlot> pipeline_order(plan::PipelineSchedule schedule, long pp,
                                                       long stage, long micro_batches, long chunks);

[[nodiscard]] Program build_pipeline_parallel(const ScheduleInputs& in);

}  // namespace trainsim::program

#pragma once
// What one rank holds in device memory at the worst moment of a training step, term by term,
// and whether it fits. Plain arithmetic on the model, the plan and the layout (no simulation);
// the engine tracks the same allocations along the simulated timeline (program tasks carry them)
// and its peak is checked against this one in the tests.
//
// Terms and their sources:
//  - weights, gradients, master_weights, master_gradients, optimizer_states: bytes per parameter
//    from the precision recipe and optimizer (source 002: AMP + Adam = 2 + 2 + 4 + 4 + 8 = 20),
//    over the parameters this rank owns (its pipeline stage, divided by TP), divided by the
//    shard group where the ZeRO stage / FSDP shards that copy (Rajbhandari et al. 2020, fig. 1).
//    Where the optimizer's code keeps a copy whole regardless of the ZeRO stage (Megatron-core's
//    gradient buffer, Apex's DistributedFusedAdam's, DeepSpeed's BF16_Optimizer's fp32
//    gradients: training.gradient_buffers, plan/gradient_state.hpp), that copy as the code keeps it, its lines cited.
//  - gathered_parameters / gathered_gradients: ZeRO-3 / FSDP hold the full working-precision
//    parameters of the unit in use and of the one prefetched, and the full gradients of the unit
//    being reduce-scattered (Zhao et al. 2023, section 3.2).
//  - communication_buffers: DDP's gradient buckets are a copy of the gradients unless they are
//    bucket views (PyTorch DDP docs, gradient_as_bucket_view); DeepSpeed's reduce and all-gather
//    buckets hold bucket_elements each.
//  - activations: the stored tensors of every layer of every micro-batch in flight
//    (transformer.hpp: Korthikanti et al. 2022); with checkpointing only layer inputs; with
//    offloading only the two layers' inputs being moved; micro-batches in flight from the
//    pipeline schedule (GPipe: all; 1F1B: pp - stage; interleaved: Megatron's warm-up count).
//    Under module_kernels hf-bert, what autograd keeps as its op list records it
//    (model/hf_bert_ops.hpp), and the autocast states: fp32 parameters and .grad, no master copy.
//  - deferred_head_wgrad: Megatron-core's defer_embedding_wgrad_compute, on the last stage, the
//    output layer's input and bf16 logits gradient of each deferred micro-batch until the flush.
//  - activation_workspace: transient at the peak: the layer being recomputed (checkpointing),
//    the gradients of the largest stored tensor in and out, or the logits gradient (fp32 and its
//    bf16 cast; bf16 from a fused loss that does not write it over the logits).
//  - gradient_reduce_copy: DeepSpeed's BF16_Optimizer under its pipeline engine all-reduces a
//    bf16 copy of the fp32 gradients after the flush (engine.py allreduce_bucket: communication
//    dtype bf16). Not beside the activations: the peak is the larger of the backward's moment
//    and this one (the caching allocator's reserve, which keeps the activations' segments, is
//    the engine's replay).
//  - pipe_buffers: what DeepSpeed's PipelineEngine keeps once (receive buffers, each pipe
//    buffer's loaded inputs, the model's causal mask); the stage output it keeps per micro-batch
//    is in activations, the output and gradient it restores for a backward in activation_workspace
//    (memory/deepspeed_pipe_buffers.hpp).
//  - runtime_reserve: CUDA/runtime context, library workspaces, NCCL buffers (device profile).
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::memory {

struct MemoryTerm {
  std::string name;     ///< e.g. "optimizer_states"
  Bytes bytes = 0;
  std::string formula;  ///< how it was computed, with the numbers, for the breakdown table
};

/// One kind of rank (all ranks alike, or a pipeline stage) and its memory at the peak.
struct RankMemory {
  std::string kind;    ///< "every rank", "stage 0 (first)", ...
  long stage = 0;
  std::vector<MemoryTerm> terms;
  /// The larger of the two moments: the backward's (every term but gradient_reduce_copy) and
  /// the gradient reduction's after the flush (every term but the activations, their workspace
  /// and the deferred head gradients); the sum of the terms where there is no reduce copy.
  /// Under megatron_step_gradients the backward's moment holds the fp16 gradients only where
  /// the stage runs a forward after its first backward, and neither the flattened copy nor the
  /// fp32 gradients; the step's holds the larger of fp16 gradients + copy and fp32 gradients.
  Bytes peak = 0;
  Bytes capacity = 0;  ///< device memory
  [[nodiscard]] bool fits() const { return peak <= capacity; }
  [[nodiscard]] const MemoryTerm& largest() const;
  [[nodiscard]] Bytes term(const std::string& name) const;  ///< 0 when absent
  [[nodiscard]] Bytes sum_of_terms() const;
};

struct MemoryInputs {
  model::TransformerSpec model;
  plan::TrainingPlan plan;
  plan::Layout layout;
  Bytes capacity = 0;         ///< per accelerator
  Bytes runtime_reserve = 0;  ///< per accelerator
};

/// Bytes of the copy DeepSpeed's allreduce_bucket makes of `gradient_elements` fp32 gradients
/// in its communication dtype (bf16 under the BF16_Optimizer), 0 where nothing is copied.
[[nodiscard]] Bytes gradient_reduce_copy_bytes(const plan::TrainingPlan& plan, double gradient_elements);
/// Micro-batches whose activations a pipeline stage holds at once (1 without pipelining).
[[nodiscard]] double micro_batches_in_flight(const plan::TrainingPlan& plan, long stage);
/// Micro-batches whose output-head activations the last stage holds at once: the head is in its
/// last model chunk, whose forwards under the interleaved schedule come in groups of pp and are
/// each followed by their backward once the warm-up is over.
[[nodiscard]] double head_micro_batches_in_flight(const plan::TrainingPlan& plan);
/// Micro-batches whose output-layer input and logits gradient the last stage keeps for the flush
/// under Megatron-core's defer_embedding_wgrad_compute (wgrad_deferral_limit, 0: all); 0 without.
[[nodiscard]] double deferred_head_micro_batches(const plan::TrainingPlan& plan);

/// ZB-H1: the micro-batches whose weight gradients stage `stage` holds queued while its
/// micro-batches in flight peak (the steady state: one per iteration before `stage`, none on
/// stage 0); 0 for other schedules.
[[nodiscard]] double queued_weight_gradients(const plan::TrainingPlan& plan, long stage);
/// ZB-V: what one chunk's split backward keeps for its W (its linears' inputs and output
/// gradients, the head's on the first stage), per micro-batch, a mean of the stage's two chunks:
/// inside micro_batches_in_flight's limit, so no term of its own; the simulated timeline holds it
/// from a B to its W. 0 for other schedules.
[[nodiscard]] Bytes zero_bubble_v_weight_gradient_inputs(const MemoryInputs& in, long stage);
/// Whether Megatron-LM 2021's gradient copies follow the step instead of staying resident: its
/// local DDP on fp16 gradients without the contiguous buffer (6985e58's default flags) with its
/// Float16Optimizer, under the PTD-P schedule, which allocates them along its timeline (the
/// data-parallel schedule, which no Megatron scenario runs, keeps every term resident).
[[nodiscard]] bool megatron_step_gradients(const plan::TrainingPlan& plan);
/// Whether a pipeline stage runs a forward after its first backward of the step (1F1B: more
/// micro-batches than pp - stage; never under GPipe): then the gradients that backward made
/// are live at the stage's activation peak.
[[nodiscard]] bool forward_after_first_backward(const plan::TrainingPlan& plan, long stage);
/// Transformer layers held by pipeline stage `stage` (the first stages take the remainder).
[[nodiscard]] long layers_of_stage(long layers, long pp, long stage);

/// Memory of one pipeline stage's ranks.
[[nodiscard]] RankMemory stage_memory(const MemoryInputs& in, long stage);
/// Every distinct rank kind: one entry without pipelining; first, middle and last stage with.
[[nodiscard]] std::vector<RankMemory> rank_memory(const MemoryInputs& in);

}  // namespace trainsim::memory

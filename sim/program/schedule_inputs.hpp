#pragma once
// What every schedule builder reads: the model, the plan and its layout on the job, the device
// (to cost operations) and, per pipeline stage, the memory the engine should follow.
#include <vector>

#include "core/units.hpp"
#include "model/device_profile.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::program {

/// Device memory of one pipeline stage's ranks, from the memory model.
struct StageMemory {
  Bytes resident = 0;                     ///< model states, buffers, runtime: the whole step
  Bytes activations_per_micro_batch = 0;  ///< allocated by a forward, freed by its backward
  Bytes workspace = 0;                    ///< held during a backward pass
  /// Part of `resident`: the memory model's gathered parameters and gradients, which a sharded
  /// schedule allocates and frees unit by unit instead (each from its stream's pool).
  Bytes gathered = 0;
  /// defer_embedding_wgrad_compute, last stage: one deferred micro-batch's output-layer input and
  /// logits gradient, allocated by its head backward and freed by its deferred weight-gradient GEMM.
  Bytes deferred_head_wgrad_per_micro_batch = 0;
  /// ZB-H1: what a split backward leaves for its queued weight gradients (the linears' inputs
  /// and output gradients), allocated by the backward and freed by its W.
  Bytes queued_weight_gradients_per_micro_batch = 0;
  /// DeepSpeed's BF16_Optimizer: the bf16 copy of the fp32 gradients its data-parallel
  /// all-reduce runs on (memory/rank_memory.hpp gradient_reduce_copy), held during that call.
  Bytes gradient_reduce_copy = 0;
  /// Megatron 2021's fp16 local DDP (memory::megatron_step_gradients), not in `resident`: the
  /// fp16 .grad, allocated from the slot after the stage's first backward; the flattened copy
  /// allreduce_gradients holds from its flatten to its copy back; the fp32 grads, allocated by
  /// the step's copy to fp32 (net of the fp16 ones it frees) and freed when the step ends.
  Bytes step_fp16_gradients = 0;
  Bytes step_gradient_copy = 0;
  Bytes step_fp32_gradients = 0;
};

struct ScheduleInputs {
  model::TransformerSpec model;
  plan::TrainingPlan plan;
  plan::Layout layout;
  model::DeviceProfile device;
  std::vector<StageMemory> stages;  ///< one per pipeline stage (pp entries)
  /// Ranks whose tasks come out equal to a lower rank's may share that rank's body
  /// (RankProgram::body) instead of holding a copy; schedules that cannot tell ignore it.
  bool share_task_bodies = false;
  /// What one stage-boundary activation takes between two nodes' accelerators, as a profiler
  /// finds it: ZB-V's runtime builds its order with it (zero_bubble_v.hpp). 0 where unknown.
  Seconds pipeline_transfer = 0;
};

/// The plan's framework module code as the layer op lists take it.
[[nodiscard]] inline model::ModuleKernels module_kernels_of(plan::ModuleKernels k) {
  switch (k) {
    case plan::ModuleKernels::megatron: return model::ModuleKernels::megatron;
    case plan::ModuleKernels::mpt: return model::ModuleKernels::mpt;
    case plan::ModuleKernels::mpt_flash: return model::ModuleKernels::mpt_flash;
    case plan::ModuleKernels::torch_layer: return model::ModuleKernels::torch_layer;
    case plan::ModuleKernels::hf_bert: return model::ModuleKernels::hf_bert;
    case plan::ModuleKernels::fused: break;
  }
  return model::ModuleKernels::fused;
}

/// The plan's FP8 linear layers as the layer op lists take them (model/fp8_linear.hpp).
[[nodiscard]] inline model::Fp8Linears fp8_linears_of(const plan::TrainingPlan& p) {
  model::Fp8Linears f;
  if (p.linear_precision != plan::LinearPrecision::fp8) return f;
  const bool te = p.fp8_implementation == plan::Fp8Implementation::transformer_engine;
  f.enabled = true;
  f.dynamic_scaling = !te;
  // torch.compile writes torchao's transposed layouts in the cast kernel; eager code copies.
  f.fused_transpose = te || !p.eager_kernels;
  f.weight_casts_per_micro_batch = te ? 1.0 / static_cast<double>(p.accumulation) : 1.0;
  f.weights_gathered_fp8 = p.fsdp_float8_all_gather;
  f.backward_recasts = !te;
  // Megatron-core's TE layer: LayerNormLinear before attention and the MLP, FP8 across the TP
  // group under sequence parallelism (model/fp8_linear.hpp).
  f.norm_writes_input = te;
  f.sequence_gathers_fp8 = te;
  return f;
}

/// Whether Transformer Engine's delayed-scaling FP8 runs, whose amaxes every chunk's forward and
/// backward reduce (model/fp8_amax_reduction.hpp); torchao's dynamic scaling has no such step.
[[nodiscard]] inline bool te_amax_reduction_of(const plan::TrainingPlan& p) {
  return p.linear_precision == plan::LinearPrecision::fp8 &&
         p.fp8_implementation == plan::Fp8Implementation::transformer_engine;
}

/// Global rank of (pipeline stage, data-parallel index, tensor-parallel index) in Megatron's
/// order: TP ranks consecutive (inside a node), then data parallelism, then pipeline stages.
[[nodiscard]] inline int rank_of(const ScheduleInputs& in, long stage, long dp, long tp) {
  return static_cast<int>((stage * in.layout.dp + dp) * in.plan.tp + tp);
}

}  // namespace trainsim::program

#pragma once
// Which optimizer implementation a plan implies where it decides how the gradients are held:
// the same recipe and ZeRO stage keep different copies under different frameworks. The memory
// model (memory/rank_memory.cpp) counts each one's copies with the source lines.
#include "plan/training_plan.hpp"

namespace trainsim::plan {

/// Megatron-core's distributed optimizer (DistributedOptimizer over DistributedDataParallel's
/// contiguous ParamAndGradBuffer): ZeRO-1 with Megatron's recipe (bf16 parameters, fp32 main
/// gradients and master weights) under Megatron's code, fp32 optimizer state (bf16 state is
/// Apex's DistributedFusedAdam) and the gradients reduce-scattered (DeepSpeed's BF16_Optimizer
/// all-reduces them). It keeps the whole gradient buffer, in the gradient dtype, on every rank
/// and shards only the fp32 master weights and the moments.
[[nodiscard]] inline bool megatron_core_distributed_optimizer(const TrainingPlan& p) {
  return p.sharding == Sharding::zero1 && p.precision.name == "bf16_fp32_grads" &&
         p.pipeline_engine == PipelineEngine::megatron && p.optimizer_state_element_bytes == 4 &&
         !p.zero1_gradient_all_reduce;
}

/// Apex's DistributedFusedAdam as NeMo runs it (distributed_fused_adam, contiguous_grad_buffer
/// on: NeMo v2.1.0 megatron_base_model.py:787): ZeRO-1 with Megatron's recipe and bf16 optimizer
/// state (optimizer_state_dtype, which only this optimizer has here). It keeps the whole
/// gradient buffer in grad_sync_dtype and the rank's reduced shard of it.
[[nodiscard]] inline bool apex_distributed_fused_adam(const TrainingPlan& p) {
  return p.sharding == Sharding::zero1 && p.precision.name == "bf16_fp32_grads" &&
         p.pipeline_engine == PipelineEngine::megatron && p.optimizer_state_element_bytes != 4;
}

/// Megatron-LM's local DDP with an fp32 main_grad buffer (--accumulate-allreduce-grads-in-fp32,
/// which --bf16 forces: megatron/arguments.py at 6985e58 and 2e90a342): DDP with Megatron's
/// recipe whose gradients are reduced in fp32. It keeps one contiguous fp32 buffer of every
/// gradient, all-reduced in place, which the fp32 master parameters' grads are views of.
[[nodiscard]] inline bool megatron_local_ddp_fp32_main_grad(const TrainingPlan& p) {
  return p.sharding == Sharding::none && p.precision.name == "bf16_fp32_grads" &&
         p.pipeline_engine == PipelineEngine::megatron && p.gradient_wire_bytes == 4;
}

/// DeepSpeed's BF16_Optimizer (v0.6.2+) under its pipeline engine, BLOOM's "ZeRO-1 equivalent":
/// Megatron's recipe under pipeline_engine deepspeed. It keeps the bf16 gradients and an fp32
/// copy of them whole on every rank and shards only the fp32 master weights and the moments.
[[nodiscard]] inline bool deepspeed_bf16_optimizer(const TrainingPlan& p) {
  return p.pipeline_engine == PipelineEngine::deepspeed && p.precision.name == "bf16_fp32_grads";
}

}  // namespace trainsim::plan

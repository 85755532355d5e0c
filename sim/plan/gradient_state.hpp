#pragma once
// Whose optimizer code holds a job's gradients (a scenario's training.gradient_buffers): the same
// recipe and ZeRO stage keep different copies under different frameworks. The memory model
// (memory/rank_memory.cpp) counts each one's copies with the source lines; the scenario reader
// (scenario/training_reader.cpp) rejects the combinations that do not exist.

namespace trainsim::plan {

/// The optimizer implementation whose gradient copies a rank holds.
enum class GradientBuffers {
  /// The precision recipe's working gradients and fp32 copy, each sharded as the schedule's ZeRO
  /// stage says: PyTorch DDP and FSDP, DeepSpeed's ZeRO-1/2/3 optimizers under AMP. The only one
  /// modelled outside Megatron's recipe (bf16_fp32_grads) on schedule ddp or zero1.
  generic,
  /// Megatron-LM's local DDP and Float16OptimizerWithFloat16Params (schedule ddp). With
  /// --accumulate-allreduce-grads-in-fp32, which --bf16 forces (megatron/arguments.py at 6985e58
  /// and 2e90a342), and so gradient_dtype fp32: one contiguous fp32 main_grad buffer of every
  /// gradient, all-reduced in place, whose tensors are the fp32 master parameters' grads.
  /// Without it (fp16, 6985e58's default flags): the fp16 main_grad, a flattened all-reduce copy
  /// and an fp32 grad of every master parameter, as generic counts them.
  megatron_local_ddp,
  /// Megatron-core's DistributedOptimizer over DistributedDataParallel's contiguous
  /// ParamAndGradBuffer (schedule zero1, fp32 optimizer state, gradients reduce-scattered): the
  /// whole gradient buffer, in gradient_dtype, on every rank; only the fp32 master weights and
  /// the moments sharded.
  megatron_core_distributed_optimizer,
  /// Apex's DistributedFusedAdam as NeMo runs it (distributed_fused_adam, contiguous_grad_buffer
  /// on: NeMo v2.1.0 megatron_base_model.py:787; schedule zero1; fp32 or bf16 state,
  /// optimizer_state_dtype): the whole gradient buffer in grad_sync_dtype (gradient_dtype) and the
  /// rank's reduced shard of it.
  apex_distributed_fused_adam,
  /// DeepSpeed's BF16_Optimizer (v0.6.2+) under its pipeline engine, BLOOM's "ZeRO-1 equivalent"
  /// (schedule zero1, gradients all-reduced): the bf16 gradients and an fp32 copy of them whole on
  /// every rank; only the fp32 master weights and the moments sharded.
  deepspeed_bf16_optimizer,
};

/// Whether the gradients live in Megatron-LM's fp32 main_grad buffer, all-reduced in place:
/// its local DDP reducing in fp32 (gradient element `gradient_wire_bytes` 4).
[[nodiscard]] inline bool megatron_fp32_main_grad_buffer(GradientBuffers g, double gradient_wire_bytes) {
  return g == GradientBuffers::megatron_local_ddp && gradient_wire_bytes == 4;
}

/// Whether DeepSpeed's allreduce_bucket casts the BF16_Optimizer's fp32 gradients to a narrower
/// wire dtype (communication_data_type): a copy held during the all-reduce, a cast before it and
/// a copy back after it (memory/rank_memory.hpp gradient_reduce_copy, program/pipeline_schedule).
[[nodiscard]] inline bool deepspeed_reduce_casts_to_wire(GradientBuffers g, double gradient_wire_bytes) {
  return g == GradientBuffers::deepspeed_bf16_optimizer && gradient_wire_bytes < 4;
}

}  // namespace trainsim::plan

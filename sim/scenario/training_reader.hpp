#pragma once
// A scenario's "training" object -> TrainingPlan. Fields (defaults in brackets):
//   schedule            ddp | zero1 | zero2 | zero3 | fsdp          (required)
//   hybrid_shard_degree fsdp/zero: ranks one copy of the state is sharded over [0 = all DP ranks]
//   tensor_parallel [1], sequence_parallel [false], pipeline_parallel [1],
//   tp_comm_overlap [false]: Transformer Engine's userbuffers TP overlap (needs TP > 1, SP, PTD-P)
//   tp_comm_overlap_fp8_buf [[]]: with tp_comm_overlap and TE FP8, the userbuffers among
//                       "proj_fprop", "fc2_fprop" whose config sets fp8_buf (FP8 reduce-scatter chunks)
//   tp_comm_overlap_model  coarse | per_step [coarse] (plan::TpOverlapModel:
//                       a ring's steps as one repeated call, or each step its own call)
//   pipeline_schedule   gpipe | 1f1b | interleaved [1f1b], virtual_stages [1]
//   precision           amp | fp32 | fsdp_mixed | bf16_fp32_grads    (required)
//   linear_precision    bf16 | fp8 [bf16]: the linear projections' GEMMs (model/fp8_linear.hpp);
//                       fp8 needs fp8 GEMM samples in the device profile's calibrations
//   fp8_implementation  with fp8: transformer-engine | torchao (required)
//   fsdp_float8_all_gather  [false]: torchao float8 under FSDP2 gathers the linear weights in FP8,
//                       cast on the shards (needs fp8, torchao, fsdp, torch-fsdp2; program/
//                       sharded_schedule.cpp); float8_precompute_scale [false]: their scales
//                       once per step after the optimizer (needs fsdp_float8_all_gather)
//   fsdp_backward_prefetch  post | pre | none [post], fsdp_forward_prefetch [false]:
//                       FullyShardedDataParallel's backward_prefetch / forward_prefetch (torch-fsdp1)
//   fsdp_sharding_strategy  full_shard | shard_grad_op [full_shard]: FullyShardedDataParallel's
//                       sharding_strategy (torch-fsdp1; HYBRID_SHARD / _HYBRID_SHARD_ZERO2 with
//                       hybrid_shard_degree); shard_grad_op keeps each unit gathered from its
//                       forward to its post-backward (plan::FsdpShardingStrategy)
//   fsdp_pad_copy       always | uneven [always]: which unsharded gradients FSDP1's post-backward
//                       hook copies with F.pad before the reduce-scatter: every one (PyTorch 1.13) or
//                       only a unit whose size is not a multiple of the shard count (PyTorch >= 2.0;
//                       torch-fsdp1; plan::FsdpPadCopy)
//   optimizer           adam | adamw | sgd_momentum | sgd [adamw]
//   micro_batch (required), gradient_accumulation [1]
//   activation_checkpointing [false], activation_offloading [false], flash_attention [false],
//   checkpoint_policy   with checkpointing: full | selective_op (torchtitan's op policy;
//                       fsdp/zero3 without TP/PP, flash attention) | selective_attention
//                       (Megatron's selective recomputation of the core attention; PTD-P:
//                       ddp/zero1 with TP or PP, unfused attention) [full]
//   attention_kernel    a fused attention kernel of the device profile [the profile's default]
//   fused_cross_entropy [false], eager_kernels [false]
//   fused_cross_entropy_inplace  with fused_cross_entropy: the loss's backward overwrites the
//                       logits [true], or allocates their bf16 gradient (false: flash-attn's
//                       CrossEntropyLoss default, llm-foundry)
//   module_kernels      fused | megatron | mpt | mpt-flash | torch-layer [fused]
//                       (model::ModuleKernels; mpt-flash needs flash_attention)
//   composer_train_metrics [[]]: Composer's train metrics among "LanguageCrossEntropy",
//                       "LanguagePerplexity", each a cross-entropy over the logits after every
//                       micro-batch's backward (model/composer_metrics.hpp; schedule fsdp, TP 1)
//   composer_train_metrics_autocast [true]: those updates under torch.autocast(bf16), nll_loss
//                       casting the log-probabilities to fp32 (Composer's amp_bf16), or not (amp_fp8)
//   composer_metric_sync [false]: after every optimizer step the metrics' compute() gathers
//                       their states over the world: 2 x world host calls per state at the
//                       device's eager_copy_call, after a drain (model/composer_metric_sync.hpp);
//                       needs composer_train_metrics
//   megatron_step_syncs [false]: Megatron-LM 2021-2022's timers' torch.cuda.synchronize()
//                       around every pass and step phase, get_batch's broadcast over TP (+ .cpu())
//                       and the loss all-reduce over DP per micro-batch (schedule ddp, TP or PP > 1)
//   pipeline_outputs_kept [false]: Megatron-LM before deallocate_output_tensor (2021-12) keeps
//                       each in-flight forward's stage output (b x s x h) until its backward
//                       (pipeline_engine megatron; memory/rank_memory.cpp)
//   deepspeed_step_work [false]: DeepSpeed v0.6.2's allreduce_bucket cast before and scale + copy
//                       back after the data-parallel all-reduce, and clear_hp_grads after the step
//                       (needs gradient_buffers deepspeed-bf16-optimizer)
//   bucket_elements [0: one bucket], gradient_dtype / parameter_dtype (wire) [bf16]
//   gradient_buffers    whose optimizer holds the gradients (plan::GradientBuffers): generic |
//                       megatron-local-ddp (ddp) | megatron-core-distributed-optimizer |
//                       apex-distributed-fused-adam | deepspeed-bf16-optimizer (zero1); the four
//                       named need precision bf16_fp32_grads; required with bf16_fp32_grads on ddp
//                       or zero1 [generic elsewhere]
//   zero3_implementation  schedule zero3: fsdp | deepspeed-0.3 [fsdp] (program/
//                       deepspeed_zero3_schedule.hpp: DeepSpeed v0.3.12-v0.4.2 stage 3)
//   deepspeed_zero3     with deepspeed-0.3: {"stage3_prefetch_bucket_size", "stage3_max_live_parameters",
//                       "stage3_max_reuse_distance", "stage3_param_persistence_threshold",
//                       "reduce_bucket_size"} in elements [v0.3.13's code defaults]
//   collectives         {"algorithm": ring | tree | nvls | nvls_tree, "protocol": LL | LL128 |
//                       Simple}: forces the NCCL tuner's choice for every collective of the
//                       run, like NCCL_ALGO / NCCL_PROTO [the tuner decides]; read by
//                       read_collectives. "sm_sharing": false [true] lets compute keep the
//                       SMs a concurrent collective's kernel holds (engine/program_executor.hpp),
//                       to compare with and without; read by read_sm_sharing. "hbm_sharing":
//                       false [true] gives compute the whole device-memory bandwidth beside a
//                       collective (model/nccl_memory_traffic.hpp); read by read_hbm_sharing
#include "collective/collective_plan.hpp"
#include "core/json_reader.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::scenario {

[[nodiscard]] plan::TrainingPlan read_training(JsonObject o);

/// The "collectives" object of a "training" object (empty override when absent). ConfigError
/// on an unknown algorithm or protocol, one that no fabric of `cal` offers, or any override on
/// a schema-1 calibration (HCCL: fixed algorithms, no tuner).
[[nodiscard]] collective::TunerOverride read_collectives(JsonObject training,
                                                         const collective::CollectiveCalibration& cal);

/// training.collectives.sm_sharing [true]: whether a collective's kernel takes SMs from the
/// compute it overlaps.
[[nodiscard]] bool read_sm_sharing(JsonObject training);

/// training.collectives.hbm_sharing [true]: whether a collective's device-memory traffic takes
/// bandwidth from the memory-bound compute it overlaps.
[[nodiscard]] bool read_hbm_sharing(JsonObject training);

}  // namespace trainsim::scenario

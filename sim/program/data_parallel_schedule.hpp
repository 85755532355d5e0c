#pragma once
// Data-parallel schedules with gradient accumulation:
//  - ddp: SMDDP / PyTorch DDP. Gradients of the last micro-batch are all-reduced in buckets as
//    the backward pass produces them (earlier micro-batches accumulate locally, no_sync); the
//    optimizer updates all parameters once every bucket is reduced.
//  - zero1: DeepSpeed ZeRO stage 1. At the accumulation boundary gradient buckets are
//    reduce-scattered as the last backward produces them; each rank's optimizer updates only its
//    1/dp shard; the updated parameters are all-gathered before the next step.
//  - activation offloading (with checkpointing): the passes run per unit (embedding, layers,
//    head) and each layer's input is copied to host memory after its forward and back one layer
//    ahead of its backward, on a host-copy stream over the node's PCIe links (as in
//    sharded_schedule.hpp).
//  - a framework's training loop (Hugging Face's Trainer): after the last bucket's reduction, its
//    phases in order on the compute stream, each with the kernels its host issues (a Python loop
//    over the parameters at the device's eager_copy_call per kernel) and the host's read-backs
//    before it (Task::host_sync).
//  - Transformer Engine's FP8 (Megatron-core): each forward ends, and each backward's layers
//    end, with TE's amax reduction (model/fp8_amax_reduction.hpp), on the compute stream's path.
#include <optional>

#include "model/device_profile.hpp"
#include "model/hf_trainer_step.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"
#include "program/program.hpp"

namespace trainsim::program {

/// ddp: gradients all-reduced once per step. zero1: optimizer states sharded, gradients
/// reduce-scattered once per step (at the last micro-batch). zero2: gradients sharded too, so
/// each rank keeps only its shard's accumulation and the reduce-scatter runs after every
/// micro-batch's backward (DeepSpeed stage 2: deepspeedai/DeepSpeed#2252).
enum class DataParallelKind { ddp, zero1, zero2 };

struct DataParallelConfig {
  DataParallelKind kind = DataParallelKind::ddp;
  int world = 1;                  ///< data-parallel ranks (all accelerators)
  int ranks_per_node = 1;
  long micro_batch = 1;           ///< sequences per rank per micro-batch
  long accumulation = 1;          ///< micro-batches per optimizer step
  double bucket_elements = 0;     ///< gradient elements per bucket
  double gradient_bytes = 2;      ///< bytes per gradient element on the wire
  double parameter_bytes = 2;     ///< bytes per parameter element all-gathered (zero1)
  /// zero1: ranks over which optimizer states are sharded (hybrid_shard_degree; 0 or world: all).
  /// With fewer, each shard group reduce-scatters and gathers inside itself and the shards are
  /// all-reduced across the groups (the replicas).
  int shard = 0;
  bool activation_checkpointing = false;  ///< backward recomputes each layer's forward first
  bool activation_offloading = false;     ///< checkpointed layer inputs copied to host and back
  bool flash_attention = false;           ///< fused attention kernel (device's attention kernel)
  bool fused_cross_entropy = false;       ///< bf16 logits, gradient in place
  bool eager_kernels = false;             ///< eager PyTorch module code (model::LayerShape::eager)
  model::ModuleKernels module_kernels = model::ModuleKernels::fused;  ///< model::LayerShape::module_kernels
  model::Fp8Linears fp8 = model::Fp8Linears{};  ///< model::LayerShape::fp8
  bool megatron_fp16_optimizer = false;   ///< Megatron 2021's five optimizer passes (compute_cost.hpp)
  /// Transformer Engine's FP8 amax reduction after every forward and backward
  /// (model/fp8_amax_reduction.hpp): over every rank, or with tp_only_amax_red over the TP group,
  /// one rank here, so the two kernels alone.
  bool fp8_amax_reduction = false;
  bool fp8_amax_tp_only = false;
  /// A framework's training loop after the last backward (model/hf_trainer_step.hpp): its phases,
  /// optimizer included, replace the schedule's optimizer step. ddp only.
  std::optional<model::TrainingLoop> trainer;
  // Device memory per rank, from the memory model (memory/rank_memory.hpp):
  Bytes resident_memory = 0;    ///< model states, buffers and runtime reserve
  Bytes activation_memory = 0;  ///< stored by one micro-batch's forward, freed by its backward
  Bytes workspace_memory = 0;   ///< transient during a backward pass
};

/// The data-parallel configuration of a plan on a layout (DDP when nothing is sharded, the
/// ZeRO-1 program otherwise); memory fields are left at zero.
[[nodiscard]] DataParallelConfig data_parallel_config(const plan::TrainingPlan& plan,
                                                      const plan::Layout& layout);

/// Builds every rank's program for one optimizer step.
[[nodiscard]] Program build_data_parallel(const model::TransformerSpec& spec,
                                          const model::DeviceProfile& device,
                                          const DataParallelConfig& cfg);

}  // namespace trainsim::program

#pragma once
// DeepSpeed ZeRO-3 as its code ran in spring 2021: v0.3.12 (8 March 2021, the first release with
// stage 3) to v0.4.2, the library Megatron-LM's Table 2 ZeRO-3 rows used (Narayanan et al.,
// arXiv 2104.04473, section 5.2: "using the DeepSpeed Python library"). Each rule below is what
// deepspeed/runtime/zero/ does at tag v0.3.13 (stage3.py, partition_parameters.py, constants.py);
// the knobs are plan::DeepSpeedZero3Config.
//
//  - Parameters are fetched per submodule, each parameter by its own torch.distributed.all_gather
//    (PartitionedParameterCoordinator.fetch_sub_module takes named_parameters(recurse=False);
//    Init._allgather_param gathers one). A transformer layer's submodules with gathered weights
//    are its four linear layers (QKV, attention output, MLP in, MLP out); biases and norms are
//    under stage3_param_persistence_threshold and stay gathered (persistent_parameters). The tied
//    word embedding is gathered again for the logits (an external parameter of the model).
//  - Host synchronization: _allgather_param calls torch.cuda.synchronize() before every gather,
//    and a fetch that finds its parameters in flight, or gathers them itself, ends in
//    _synchronize_communication (comm stream and device synchronize). Nothing the host issues
//    after a synchronize starts before every stream of the device is idle.
//  - Prefetch: right after a fetch, when no gather is in flight and fewer than
//    stage3_max_live_parameters elements are gathered, the next parameters of the recorded trace
//    that are not gathered, up to stage3_prefetch_bucket_size elements
//    (PrefetchCoordinator.get_params_to_prefetch). Each is gathered after a device synchronize,
//    so the submodule's compute that follows waits for all but the last. The trace is recorded
//    in the first step (finish_tracing in step()); the steady state is modelled.
//  - Release after each use, unless the submodule is used again within stage3_max_reuse_distance
//    elements of other parameters (_keep_for_later).
//  - Gradients: contiguous_gradients defaults to false for stage 3 until v0.4.3
//    (ZERO3_OPTIMIZATION_CONTIGUOUS_GRADIENTS_DEFAULT), so reduce_ipg_grads takes
//    buffered_reduce_fallback -> allreduce_bucket: a dist.all_reduce of the whole bucket over the
//    data-parallel group (rank forced to None), each rank keeping its shard afterwards. A bucket
//    is flushed by the gradient hook of the parameter that would overflow reduce_bucket_size,
//    after the host waits for the previous bucket (reduction_stream.synchronize()); the rest at
//    the end of every micro-batch's backward (overlapping_partition_gradients_reduce_epilogue,
//    from engine.allreduce_gradients), which the host waits for.
//  - Streams: torch.distributed's NCCL process group runs all collectives of a group on one NCCL
//    stream per device (ProcessGroupNCCL), so gathers and reductions queue on one stream.
//  - Checkpointed layer inputs offloaded to host (activation_offloading) go out after the layer's
//    forward and come back just before its recomputation (DeepSpeed's cpu_checkpointing copies
//    in CheckpointFunction, not prefetched).
//  - Host loops over the group's ranks, which make a gather cost more as the group grows at the
//    same bytes: Init._allgather_param zeroes the gathered buffer (torch.zeros, before the
//    synchronize), then narrows it into one view per rank in a Python loop while the device is
//    idle, and torch.distributed.all_gather into that list (PyTorch 1.8 ProcessGroupNCCL::
//    allgather) gathers into a flat buffer and copy_'s each of the n slices back, one host call
//    each, on the NCCL stream. Per-call host times are the device profile's eager_view_call and
//    eager_copy_call (measured, validate/measure_gather_host_costs.py); without them, not modelled.
//  - Persistent parameters (biases and norms, under stage3_param_persistence_threshold) are
//    partitioned with all others when the backward ends (engine backward ->
//    _partition_all_parameters -> release_and_reset_parameter, which ignores ds_persist) and
//    gathered again after every optimizer step (_post_step -> Init._allgather_params): one
//    all_gather of their concatenated shards, then a Python loop over every persistent parameter
//    and every rank whose slice holds part of it (two narrows, a view and a copy_ each), which
//    is parameters x ranks host calls per step (v0.3.12 - v0.4.2, unchanged). Host call times
//    as above.
// Not modelled: the Python hook overhead per submodule (no measurement of DeepSpeed 0.3's hooks);
// the optimizer's per-parameter host synchronizations (overflow check float(x.float().sum()),
// gradient norm .item(), torch.ones(1).half().to(device) per released parameter): a few
// thousand calls per step, ~0.1 s, no measurement.
#include "program/program.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

/// Requires tensor_parallel 1 and full sharding (every data-parallel rank in one group).
[[nodiscard]] Program build_deepspeed_zero3(const ScheduleInputs& in);

}  // namespace trainsim::program

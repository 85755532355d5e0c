#pragma once
// torchao float8 under FSDP2 (torchao/float8/fsdp_utils.py, early 2025; torchtitan's [float8]
// enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp): the kernels that
// cast the linear weights' shards before their all-gather. They run in FSDP2's pre-all-gather,
// outside the compiled blocks, so each torch op is its own kernel (float8_utils.py, eager):
//  - without precomputed scales, fsdp_pre_all_gather calls hp_tensor_to_float8_dynamic with
//    reduce_amax: torch.max(torch.abs(shard)) (abs reads and writes, max reads), a scalar MAX
//    all-reduce over the shard group per weight (the schedule's), then the scale-and-cast;
//  - with them, hp_tensor_and_scale_to_float8 alone: x * scale, the clamp, the cast to FP8.
//  The scale-and-cast: the multiply and the clamp read and write the shard's dtype, the cast
//  reads it and writes 1 byte (the .to(float32) of an fp32 shard launches nothing).
//  precompute_float8_dynamic_scale_for_fsdp, after the optimizer step: torch._foreach_norm
//  (ord=inf) over every float8 weight's shard (one read), the stacked amaxes all-reduced once
//  (the schedule's), and the scales computed in a few scalar kernels.
#include <vector>

#include "model/operation.hpp"

namespace trainsim::model {

/// The amax pass over a weight shard of `elements` at `shard_bytes` per element (abs, max).
[[nodiscard]] Operation fsdp_float8_shard_amax(double elements, double shard_bytes);
/// The scale-and-cast of a weight shard to FP8 (multiply, clamp, cast).
[[nodiscard]] Operation fsdp_float8_shard_cast(double elements, double shard_bytes);
/// precompute_float8_dynamic_scale_for_fsdp's kernels over the rank's `elements` of float8
/// weight shards (the all-reduce between its norm and its scales is the schedule's).
[[nodiscard]] std::vector<Operation> float8_precompute_scale_ops(double elements, double shard_bytes);

}  // namespace trainsim::model

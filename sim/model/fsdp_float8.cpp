#include "model/fsdp_float8.hpp"

namespace trainsim::model {

namespace {
constexpr double kFp8 = 1.0;
}  // namespace

Operation fsdp_float8_shard_amax(double elements, double shard_bytes) {
  Operation op = make_elementwise("fp8 weight shard amax", 3 * shard_bytes * elements, 2 * elements, "fp8_cast");
  op.kernels = 2;  // abs, max
  return op;
}

Operation fsdp_float8_shard_cast(double elements, double shard_bytes) {
  Operation op = make_elementwise("fp8 weight shard cast", (5 * shard_bytes + kFp8) * elements, 3 * elements, "fp8_cast");
  op.kernels = 3;  // multiply by the scale, clamp, cast
  return op;
}

std::vector<Operation> float8_precompute_scale_ops(double elements, double shard_bytes) {
  Operation norm = make_elementwise("float8 precompute amax (foreach_norm inf)", shard_bytes * elements, elements, "fp8_cast");
  norm.kernels = 2;  // the multi-tensor pass and its per-tensor reduction
  // torch.stack, clamp, the float64 upcast, the division into the scales, the float32 cast:
  // scalars, launch-bound.
  Operation scales = make_elementwise("float8 precompute scales", 0, 0, "fp8_cast");
  scales.kernels = 5;
  return {norm, scales};
}

}  // namespace trainsim::model

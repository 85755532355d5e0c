#pragma once
// A layer's device time operation by operation: the simulator's op list priced on a device
// profile beside a torch-profiler breakdown of the same layer (validate/profile_torch_layers.py,
// validate/results/<gpu>-torch-layer-profile.json), both folded into the same groups: each GEMM
// shape, fused attention, each class of memory-bound kernel, copies. Where the two differ is
// where the simulator misses or mis-rates a kernel.
#include <string>
#include <vector>

#include "framework_layers.hpp"
#include "model/operation.hpp"

namespace trainsim::validate {

/// One aten op of a profiled layer: its name, input shapes (the profiler's text), calls and
/// device time of its own kernels per forward+backward step.
struct ProfiledOp {
  std::string op;
  std::string shapes;
  double calls = 0;
  double device_us = 0;
};

struct ProfiledLayer {
  std::string model;      ///< named model (bert-large, gpt-7.5b, ...)
  std::string attention;  ///< "unfused" or "sdpa-flash"
  double device_us = 0;   ///< sum of the step's kernel times
  std::vector<ProfiledOp> ops;
};

/// The "layers" of a layer-profile file; ConfigError naming file and JSON path on bad input.
[[nodiscard]] std::vector<ProfiledLayer> read_layer_profile(const std::string& file);

/// The group a simulator op falls in: "gemm 2048x4096 k12288" (batch prefixed when > 1; the two
/// output edges sorted, a GEMM and its transpose cost the same), "flash attention fwd|bwd", else
/// the memory-bound kernel class or, without one, the op's name.
[[nodiscard]] std::string op_group(const model::Operation& op);
/// The group of a profiled aten op, in op_group's terms (aten::mm / addmm / bmm by shape,
/// softmax, dropout on scores or on the residual branch, bias-gradient sums, copies, ...).
[[nodiscard]] std::string profiled_op_group(const ProfiledOp& op, const FrameworkLayer& layer);

struct GroupTime {
  std::string group;
  double profiled_us = 0;
  double predicted_us = 0;
  int predicted_ops = 0;
};
/// Both sides of one layer by group, the simulator's forward and backward ops priced on `dev`;
/// groups in the simulator's first-use order, then those only the profile has.
[[nodiscard]] std::vector<GroupTime> layer_breakdown(const FrameworkLayer& layer, const ProfiledLayer& profile,
                                                     const model::DeviceProfile& dev);

}  // namespace trainsim::validate

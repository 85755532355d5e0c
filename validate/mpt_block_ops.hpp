#pragma once
// The simulator's MPT layer op by op beside the kernels the torch profiler recorded for the
// measured block (validate/measure_mpt_block.py's "profiles", validate/results/h100-mpt-block.json),
// both folded into the same groups: the linears' GEMMs, the attention kernels, each class of
// memory-bound kernel. Where the two differ is where the layer's op list or a rate is off.
#include <string>
#include <vector>

#include "model/device_profile.hpp"
#include "model/operation.hpp"
#include "model/transformer.hpp"

namespace trainsim::validate {

/// One kernel of a profiled block: its name (cut at 120 characters) and device us per call of
/// the forward (under no_grad) or of the step (forward with autograd + backward).
struct ProfiledKernel {
  std::string name;
  double calls = 0;
  double us = 0;
};

struct ProfiledBlock {
  long hidden = 0, heads = 0, seq_len = 0, micro_batch = 0;
  std::vector<ProfiledKernel> forward;
  std::vector<ProfiledKernel> step;
};

/// The "profiles" of a measure_mpt_block.py file; ConfigError naming file and JSON path on bad input.
[[nodiscard]] std::vector<ProfiledBlock> read_mpt_block_profiles(const std::string& file);

/// The rows of validate/probe_mpt_block_timeline.py's file that split Wqkv's output as
/// llm-foundry does ("chunk"), each with its step's kernels (forward left empty) and its SDPA
/// backend in `attention` ("cudnn" or "flash"); ConfigError naming file and JSON path on bad input.
struct TimelineBlock {
  ProfiledBlock block;
  std::string attention;
  double step_ms = 0;
};
[[nodiscard]] std::vector<TimelineBlock> read_mpt_block_timeline(const std::string& file);

/// The MPT layer the H100 scenario runs at this shape (scenarios/llmfoundry-fsdp-h100.json:
/// architecture gpt with biases, learned positions, GELU, expansion 4, no dropout; one layer).
[[nodiscard]] model::TransformerSpec mpt_layer_spec(const ProfiledBlock& b);
/// Its layer shape: one GPU (no TP), the profile's micro-batch, a fused attention kernel,
/// module_kernels mpt.
[[nodiscard]] model::LayerShape mpt_layer_shape(const ProfiledBlock& b);

/// The group of a profiled kernel, by the name PyTorch / cuBLAS / cuDNN give it: "gemm",
/// "attention fwd" / "attention bwd" (a backward's dot(dO, O) and dQ conversion included),
/// "layer_norm", "layer_norm_bwd" (input and weight gradients), "gelu", "gelu_bwd", "add"
/// (residual adds forward, gradient sums backward), "bias_grad" (reduce_kernel), "fill",
/// "copy" (direct_copy), "memset"; else "other".
[[nodiscard]] std::string kernel_group(const std::string& name);
/// The group of a simulator op in the same terms ("gemm", "attention fwd", a memory-bound op's
/// kernel class folded as kernel_group folds the profile's: residual_add(_bwd) -> "add", ...).
[[nodiscard]] std::string sim_op_group(const model::Operation& op);

struct BlockGroupTime {
  std::string group;
  double measured_forward_us = 0, simulated_forward_us = 0;
  double measured_backward_us = 0, simulated_backward_us = 0;  ///< measured: step minus forward
  int measured_backward_kernels = 0, simulated_backward_ops = 0;
};
/// Both sides by group, the simulator's ops priced by model::op_duration on `dev`; groups in the
/// simulator's first-use order, then those only the profile has.
[[nodiscard]] std::vector<BlockGroupTime> block_breakdown(const ProfiledBlock& b, const model::DeviceProfile& dev);

}  // namespace trainsim::validate

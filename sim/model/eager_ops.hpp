#pragma once
// The kernels eager PyTorch launches for the parts of a Llama block that its module code writes
// as several tensor ops (torchtitan models/llama/model.py and models/norms.py @ 85e5f47; Hugging
// Face's LlamaForCausalLM is written the same way), forward and the backward autograd runs for
// them. Each op is one kernel; its bytes are what that kernel reads and writes. A fused framework
// (Megatron's kernels, torch.compile) runs each part as one kernel: transformer.cpp's default.
// No per-kernel rate is measured for these casts, multiplies and row reductions: they stream at
// the device's copy rate (empty kernel class).
#include <string>
#include <vector>

#include "model/operation.hpp"

namespace trainsim::model {

/// A part of a layer: its forward kernels and the kernels of their backward, in execution order.
struct EagerPart {
  std::vector<Operation> forward;
  std::vector<Operation> backward;
};

/// torchtitan's RMSNorm over `rows` rows of `cols` bf16 elements: x.float(), pow(2), mean(-1),
/// + eps, rsqrt, multiply, type_as, * weight (8 kernels, 36 bytes per element); backward: the
/// autograd formula of each (14 kernels, 92 bytes per element). `name` prefixes the op names.
[[nodiscard]] EagerPart eager_rms_norm(const std::string& name, double rows, double cols);
/// apply_rotary_emb on one bf16 tensor of `elements` elements: float(), complex multiply by the
/// frequencies, type_as (3 kernels, 20 bytes per element); backward the same traffic.
[[nodiscard]] EagerPart eager_rotary(const std::string& name, double elements);
/// repeat_kv: the expand + reshape copies `kv_elements` to `kv_elements * n_rep` bf16 elements;
/// backward sums the repeated gradient back (a reduction reading the large, writing the small).
[[nodiscard]] EagerPart eager_repeat_kv(const std::string& name, double kv_elements, double n_rep);
/// F.silu(gate) * up on `elements` bf16 elements each: two kernels (silu 4, mul 6 bytes per
/// element); backward: the mul's two gradients and silu_backward (3 kernels, 18 bytes).
[[nodiscard]] EagerPart eager_swiglu(const std::string& name, double elements);
/// autograd adding a second gradient into a bf16 tensor used by two ops (read both, write one).
[[nodiscard]] Operation gradient_accumulation_add(const std::string& name, double elements);

}  // namespace trainsim::model

#include "mpt_block_ops.hpp"

#include <utility>

#include "core/json_reader.hpp"
#include "model/compute_cost.hpp"

namespace trainsim::validate {

namespace {

std::vector<ProfiledKernel> read_kernels(JsonObject part) {
  std::vector<ProfiledKernel> out;
  for (auto& k : part.object_array("kernels")) {
    ProfiledKernel p;
    p.name = k.string("name");
    p.calls = k.number("calls");
    p.us = k.number("us");
    if (p.calls < 0 || p.us < 0) k.fail("us", "non-negative calls and device us");
    out.push_back(std::move(p));
  }
  return out;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

std::vector<ProfiledBlock> read_mpt_block_profiles(const std::string& file) {
  const auto doc = read_json_file(file);
  auto root = root_object(doc, file);
  std::vector<ProfiledBlock> out;
  for (auto& row : root.object_array("profiles")) {
    ProfiledBlock b;
    b.hidden = row.positive_integer("hidden");
    b.heads = row.positive_integer("heads");
    b.seq_len = row.positive_integer("seq_len");
    b.micro_batch = row.positive_integer("micro_batch");
    if (b.hidden % b.heads != 0) row.fail("heads", "a divisor of hidden");
    b.forward = read_kernels(row.object("forward"));
    b.step = read_kernels(row.object("step"));
    out.push_back(std::move(b));
  }
  if (out.empty()) root.fail("profiles", "at least one profiled shape");
  return out;
}

std::vector<TimelineBlock> read_mpt_block_timeline(const std::string& file) {
  const auto doc = read_json_file(file);
  auto root = root_object(doc, file);
  std::vector<TimelineBlock> out;
  for (auto& row : root.object_array("rows")) {
    if (row.choice("split", {"select", "chunk"}) != "chunk") continue;
    TimelineBlock t;
    t.block.hidden = row.positive_integer("hidden");
    t.block.heads = row.positive_integer("heads");
    t.block.seq_len = row.positive_integer("seq_len");
    t.block.micro_batch = row.positive_integer("micro_batch");
    if (t.block.hidden % t.block.heads != 0) row.fail("heads", "a divisor of hidden");
    t.attention = row.choice("attention", {"cudnn", "flash"});
    t.step_ms = row.number("step_ms");
    for (auto& k : row.object_array("by_kernel")) {
      ProfiledKernel p;
      p.name = k.string("name");
      p.calls = k.number("calls");
      p.us = k.number("us");
      if (p.calls < 0 || p.us < 0) k.fail("us", "non-negative calls and device us");
      t.block.step.push_back(std::move(p));
    }
    out.push_back(std::move(t));
  }
  return out;
}

model::TransformerSpec mpt_layer_spec(const ProfiledBlock& b) {
  model::TransformerSpec s;
  s.name = "mpt block";
  s.layers = 1;
  s.hidden = b.hidden;
  s.heads = b.heads;
  s.ffn_hidden = 4 * b.hidden;
  s.seq_len = b.seq_len;
  s.vocab = 50368;  // MPT's (unused by a layer)
  s.embedding_norm = false;
  s.final_norm = true;
  s.dropout = false;
  return s;
}

model::LayerShape mpt_layer_shape(const ProfiledBlock& b) {
  model::LayerShape shape;
  shape.micro_batch = b.micro_batch;
  shape.flash_attention = true;
  shape.module_kernels = model::ModuleKernels::mpt;
  return shape;
}

std::string kernel_group(const std::string& n) {
  if (contains(n, "nvjet") || contains(n, "gemm") || contains(n, "splitKreduce") || contains(n, "cutlass"))
    return "gemm";
  if (contains(n, "sdpa") && contains(n, "fprop")) return "attention fwd";
  if ((contains(n, "sdpa") && contains(n, "bprop")) || contains(n, "compute_dot_do_o") || contains(n, "convert_dq"))
    return "attention bwd";
  if (contains(n, "flash_fwd")) return "attention fwd";
  if (contains(n, "flash_bwd")) return "attention bwd";
  if (contains(n, "layer_norm_grad") || contains(n, "GammaBetaBackward")) return "layer_norm_bwd";
  if (contains(n, "layer_norm")) return "layer_norm";
  if (contains(n, "GeluBackward")) return "gelu_bwd";
  if (contains(n, "Gelu")) return "gelu";
  if (contains(n, "CUDAFunctor_add")) return "add";
  if (contains(n, "reduce_kernel")) return "bias_grad";
  if (contains(n, "FillFunctor")) return "fill";
  if (contains(n, "direct_copy") || contains(n, "CatArray")) return "copy";
  if (contains(n, "Memset")) return "memset";
  return "other";
}

std::string sim_op_group(const model::Operation& op) {
  using model::OpKind;
  switch (op.kind) {
    case OpKind::gemm: return "gemm";
    case OpKind::fused_attention: return "attention fwd";
    case OpKind::fused_attention_backward: return "attention bwd";
    case OpKind::elementwise: break;
  }
  if (op.kernel == "residual_add" || op.kernel == "residual_add_bwd") return "add";
  if (op.kernel == "chunk_grad_cat" || op.kernel == "chunk_grad_cat_wide" || op.kernel == "permute_copy")
    return "copy";
  return op.kernel.empty() ? op.name : op.kernel;
}

std::vector<BlockGroupTime> block_breakdown(const ProfiledBlock& b, const model::DeviceProfile& dev) {
  std::vector<BlockGroupTime> out;
  auto slot = [&](const std::string& g) -> BlockGroupTime& {
    for (auto& t : out)
      if (t.group == g) return t;
    out.push_back({g});
    return out.back();
  };
  const auto spec = mpt_layer_spec(b);
  const auto shape = mpt_layer_shape(b);
  for (const auto& op : model::layer_forward_ops(spec, shape))
    slot(sim_op_group(op)).simulated_forward_us += model::op_duration(op, dev) * 1e6;
  for (const auto& op : model::layer_backward_ops(spec, shape)) {
    auto& t = slot(sim_op_group(op));
    t.simulated_backward_us += model::op_duration(op, dev) * 1e6;
    t.simulated_backward_ops += op.kernels;
  }
  for (const auto& k : b.forward) slot(kernel_group(k.name)).measured_forward_us += k.us;
  for (const auto& k : b.step) {
    auto& t = slot(kernel_group(k.name));
    t.measured_backward_us += k.us;
    t.measured_backward_kernels += static_cast<int>(k.calls + 0.5);
  }
  for (const auto& k : b.forward) {
    auto& t = slot(kernel_group(k.name));
    t.measured_backward_us -= k.us;
    t.measured_backward_kernels -= static_cast<int>(k.calls + 0.5);
  }
  return out;
}

}  // namespace trainsim::validate

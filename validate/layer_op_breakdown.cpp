#include "layer_op_breakdown.hpp"

#include <algorithm>
#include <cstdio>

#include "core/json_reader.hpp"
#include "model/compute_cost.hpp"

namespace trainsim::validate {

namespace {

std::string gemm_group(double batch, double m, double n, double k) {
  char buf[96];
  const double lo = std::min(m, n), hi = std::max(m, n);
  if (batch > 1)
    std::snprintf(buf, sizeof buf, "bmm %.0fx %.0fx%.0f k%.0f", batch, lo, hi, k);
  else
    std::snprintf(buf, sizeof buf, "gemm %.0fx%.0f k%.0f", lo, hi, k);
  return buf;
}

/// The profiler's "[[2048, 4096], [4096, 16384], [], []]" as lists of dimensions.
std::vector<std::vector<double>> parse_shapes(const std::string& text) {
  std::vector<std::vector<double>> out;
  std::vector<double>* cur = nullptr;
  int depth = 0;
  std::string num;
  auto flush = [&] {
    if (!num.empty() && cur) cur->push_back(std::stod(num));
    num.clear();
  };
  for (char c : text) {
    if (c == '[') {
      ++depth;
      if (depth == 2) {
        out.emplace_back();
        cur = &out.back();
      }
    } else if (c == ']') {
      flush();
      if (depth == 2) cur = nullptr;
      --depth;
    } else if (c == ',') {
      flush();
    } else if ((c >= '0' && c <= '9') || c == '.') {
      num += c;
    }
  }
  return out;
}

}  // namespace

std::vector<ProfiledLayer> read_layer_profile(const std::string& file) {
  const auto doc = read_json_file(file);
  auto root = root_object(doc, file);
  std::vector<ProfiledLayer> out;
  for (auto& row : root.object_array("layers")) {
    ProfiledLayer l;
    l.model = row.string("model");
    l.attention = row.choice("attention", {"unfused", "sdpa-flash"});
    l.device_us = row.number("device_us_per_step");
    for (auto& o : row.object_array("aten_ops")) {
      ProfiledOp p;
      p.op = o.string("op");
      p.shapes = o.string("shapes");
      p.calls = o.number("calls");
      p.device_us = o.number("self_device_us");
      l.ops.push_back(p);
    }
    out.push_back(l);
  }
  return out;
}

std::string op_group(const model::Operation& op) {
  using model::OpKind;
  switch (op.kind) {
    case OpKind::gemm: return gemm_group(op.batch, op.m, op.n, op.k);
    case OpKind::fused_attention: return "flash attention fwd";
    case OpKind::fused_attention_backward: return "flash attention bwd";
    case OpKind::elementwise: break;
  }
  return op.kernel.empty() ? op.name : op.kernel;
}

std::string profiled_op_group(const ProfiledOp& p, const FrameworkLayer& layer) {
  const auto shapes = parse_shapes(p.shapes);
  auto dims = [&](std::size_t i) { return i < shapes.size() ? shapes[i] : std::vector<double>{}; };
  const double seq = static_cast<double>(layer.spec.seq_len);
  // Attention scores and probabilities: [b, heads, s, s].
  auto is_scores = [&](const std::vector<double>& d) { return d.size() == 4 && d[2] == seq && d[3] == seq; };
  const std::string& n = p.op;
  if (n == "aten::mm") {
    const auto a = dims(0), b = dims(1);
    if (a.size() == 2 && b.size() == 2) return gemm_group(1, a[0], b[1], a[1]);
  } else if (n == "aten::addmm") {
    const auto a = dims(1), b = dims(2);
    if (a.size() == 2 && b.size() == 2) return gemm_group(1, a[0], b[1], a[1]);
  } else if (n == "aten::bmm") {
    const auto a = dims(0), b = dims(1);
    if (a.size() == 3 && b.size() == 3) return gemm_group(a[0], a[1], b[2], a[2]);
  }
  if (n == "aten::_flash_attention_forward") return "flash attention fwd";
  if (n == "aten::_flash_attention_backward") return "flash attention bwd";
  if (n == "aten::native_layer_norm") return "layer_norm";
  if (n == "aten::native_layer_norm_backward") return "layer_norm_bwd";
  if (n == "aten::gelu") return "gelu";
  if (n == "aten::gelu_backward") return "gelu_bwd";
  if (n == "aten::_softmax") return "softmax";
  // softmax's backward for rows over 1024 runs grad x output as its own kernel first.
  if (n == "aten::_softmax_backward_data") return "softmax_bwd";
  if (n == "aten::mul") return is_scores(dims(1)) ? "softmax_bwd" : "scalar_multiply";
  if (n == "aten::native_dropout") return is_scores(dims(0)) ? "dropout" : "residual_add";
  if (n == "aten::native_dropout_backward") return is_scores(dims(0)) ? "dropout_bwd" : "residual_add_bwd";
  if (n == "aten::add") return "residual_add";
  if (n == "aten::add_") return "residual_add_bwd";  // the residual's two gradients summed
  if (n == "aten::sum") return "bias_grad";
  if (n == "aten::cat") return "chunk_grad_cat";
  if (n == "aten::copy_") return "permute_copy";
  return n;
}

std::vector<GroupTime> layer_breakdown(const FrameworkLayer& layer, const ProfiledLayer& profile,
                                       const model::DeviceProfile& dev) {
  std::vector<GroupTime> out;
  auto slot = [&](const std::string& g) -> GroupTime& {
    for (auto& t : out)
      if (t.group == g) return t;
    out.push_back({g, 0, 0, 0});
    return out.back();
  };
  auto add_ops = [&](const std::vector<model::Operation>& ops) {
    for (const auto& op : ops) {
      auto& t = slot(op_group(op));
      t.predicted_us += model::op_duration(op, dev) * 1e6;
      ++t.predicted_ops;
    }
  };
  add_ops(model::layer_forward_ops(layer.spec, layer.shape));
  add_ops(model::layer_backward_ops(layer.spec, layer.shape));
  for (const auto& p : profile.ops) slot(profiled_op_group(p, layer)).profiled_us += p.device_us;
  return out;
}

}  // namespace trainsim::validate

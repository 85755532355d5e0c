#include "layer_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "model/compute_cost.hpp"

namespace trainsim::validate {

namespace {

bool is_sampled(const model::Operation& op, const model::DeviceProfile& dev) {
  if (op.kind != model::OpKind::gemm || !dev.kernels) return false;
  for (const auto& g : dev.kernels->gemm)
    if (g.dtype == op.dtype && g.m == op.m && g.n == op.n && g.k == op.k && g.batch == op.batch)
      return true;
  return false;
}

}  // namespace

LayerComparison compare_layer(const std::vector<std::pair<std::string, Seconds>>& measured,
                              Seconds measured_total,
                              const std::vector<model::Operation>& predicted_ops,
                              const model::DeviceProfile& dev) {
  LayerComparison c;
  c.measured_total = measured_total;
  c.predicted_total = model::ops_duration(predicted_ops, dev);
  for (const auto& op : predicted_ops) {
    const auto it = std::find_if(measured.begin(), measured.end(),
                                 [&](const auto& m) { return m.first == op.name; });
    if (it == measured.end()) {
      c.only_predicted.push_back(op.name);
      continue;
    }
    c.ops.push_back({op.name, it->second, model::op_duration(op, dev), is_sampled(op, dev)});
  }
  for (const auto& [name, t] : measured) {
    const bool paired = std::any_of(predicted_ops.begin(), predicted_ops.end(),
                                    [&](const model::Operation& op) { return op.name == name; });
    if (!paired) c.only_measured.push_back(name);
  }
  return c;
}

void print_layer_comparison(std::ostream& out, const LayerComparison& c) {
  char line[160];
  std::snprintf(line, sizeof line, "%-28s %12s %12s %9s\n", "kernel", "measured us", "predicted us",
                "error");
  out << line;
  for (const auto& op : c.ops) {
    std::snprintf(line, sizeof line, "%-28s %12.2f %12.2f %+8.1f%%%s\n", op.name.c_str(),
                  op.measured * 1e6, op.predicted * 1e6, 100 * op.error(),
                  op.sampled_shape ? "  (sampled shape)" : "");
    out << line;
  }
  std::snprintf(line, sizeof line, "%-28s %12.2f %12.2f %+8.1f%%\n", "total (whole pass)",
                c.measured_total * 1e6, c.predicted_total * 1e6, 100 * c.total_error());
  out << line;
  for (const auto& n : c.only_measured)
    out << "measured but not in the simulator's list: " << n << "\n";
  for (const auto& n : c.only_predicted)
    out << "in the simulator's list but not measured: " << n << "\n";
}

model::DeviceProfile validation_profile(const model::KernelCalibration& c, double gemm_tile) {
  model::DeviceProfile d;
  d.name = c.provenance.gpu.empty() ? "measured GPU" : c.provenance.gpu;
  d.file = c.file;
  d.gemm_tile = gemm_tile;
  d.peak_fp32 = 1e15;
  d.peak_bf16 = 1e15;
  double best_fp32 = 0, best_16 = 0;
  for (const auto& g : c.gemm) {
    if (g.dtype == model::Dtype::fp32) best_fp32 = std::max(best_fp32, g.achieved);
    if (g.dtype == model::Dtype::bf16 || g.dtype == model::Dtype::fp16)
      best_16 = std::max(best_16, g.achieved);
  }
  if (best_fp32 > 0) d.peak_fp32 = best_fp32;
  if (best_16 > 0) d.peak_bf16 = best_16;
  // Used only where the calibration lacks a measurement (then the prediction is not a check).
  d.memory_bandwidth = 1e12;
  d.launch_overhead = 0;
  model::attach_kernel_calibration(d, c);
  return d;
}

void print_layer_verdict(std::ostream& out, const LayerComparison& c) {
  const bool within = std::fabs(c.total_error()) <= kLayerCheckTarget;
  out << "total error " << (within ? "within" : "OUTSIDE") << " the 5% target\n";
}

std::vector<model::Operation> layer_pass_ops(const model::TransformerSpec& spec, long micro_batch) {
  auto ops = model::layer_forward_ops(spec, micro_batch);
  const auto backward = model::layer_backward_ops(spec, micro_batch);
  ops.insert(ops.end(), backward.begin(), backward.end());
  return ops;
}

}  // namespace trainsim::validate

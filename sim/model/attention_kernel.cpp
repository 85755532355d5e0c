#include "model/attention_kernel.hpp"

#include <cmath>

namespace trainsim::model {

namespace {

const AttentionEfficiencyCurve* nearest_curve(const AttentionKernel& kernel, bool causal, double head_dim) {
  const AttentionEfficiencyCurve* best = nullptr;
  double best_distance = 0;
  for (int pass = 0; pass < 2 && best == nullptr; ++pass)
    for (const auto& c : kernel.curves) {
      if (pass == 0 && c.causal != causal) continue;
      const double d = std::abs(std::log2(c.head_dim / head_dim));
      if (best == nullptr || d < best_distance) {
        best = &c;
        best_distance = d;
      }
    }
  return best;
}

}  // namespace

double attention_efficiency(const AttentionKernel& kernel, bool causal, double head_dim, double seq,
                            bool backward) {
  const auto* curve = nearest_curve(kernel, causal, head_dim);
  if (curve == nullptr || curve->points.empty()) return 0;
  const auto& p = curve->points;
  auto value = [&](const AttentionEfficiencyPoint& q) { return backward ? q.backward : q.forward; };
  if (seq <= p.front().seq) return value(p.front());
  if (seq >= p.back().seq) return value(p.back());
  for (std::size_t i = 1; i < p.size(); ++i)
    if (seq <= p[i].seq) {
      const double t = std::log2(seq / p[i - 1].seq) / std::log2(p[i].seq / p[i - 1].seq);
      return value(p[i - 1]) + t * (value(p[i]) - value(p[i - 1]));
    }
  return value(p.back());
}

}  // namespace trainsim::model

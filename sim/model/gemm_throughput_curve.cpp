#include "model/gemm_throughput_curve.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "model/compute_cost.hpp"

namespace trainsim::model {

namespace {

struct Block {
  double x_sum = 0, y_sum = 0;
  int count = 0;
  double y() const { return y_sum / count; }
};

}  // namespace

GemmThroughputCurve::GemmThroughputCurve(const std::vector<GemmSample>& samples, double tile,
                                         BytesPerSecond memory_bandwidth)
    : tile_(tile) {
  TRAINSIM_CHECK(!samples.empty(), "a GEMM throughput curve needs at least one sample");
  std::vector<Knot> points;
  for (const auto& s : samples) {
    TRAINSIM_CHECK(s.dtype == samples.front().dtype, "GEMM samples of one curve share a dtype");
    const double flops = 2.0 * s.m * s.n * s.k * s.batch;
    if (memory_bandwidth > 0) {
      // An FP8 GEMM writes a bf16 output (torch._scaled_mm, Transformer Engine).
      const double out_bytes = s.dtype == Dtype::fp8 ? dtype_bytes(Dtype::bf16) : dtype_bytes(s.dtype);
      const double traffic = s.batch * (dtype_bytes(s.dtype) * (s.m * s.k + s.k * s.n) + out_bytes * s.m * s.n);
      if (traffic / memory_bandwidth >= kMemoryBoundShare * flops / s.achieved) {
        memory_bound_.push_back(s);
        continue;
      }
    }
    points.push_back({std::log(flops), s.achieved / tile_utilisation(s.m, s.n, tile)});
  }
  // A calibration of memory-bound GEMMs only still needs a curve: keep them all then.
  if (points.empty()) {
    memory_bound_.clear();
    for (const auto& s : samples)
      points.push_back({std::log(2.0 * s.m * s.n * s.k * s.batch), s.achieved / tile_utilisation(s.m, s.n, tile)});
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Knot& a, const Knot& b) { return a.log_flops < b.log_flops; });

  // Pool adjacent violators: every sample starts as a block; a block whose mean throughput is
  // below its left neighbour's merges with it until the sequence of means is non-decreasing.
  // Samples of equal size always pool (one size, one throughput).
  std::vector<std::vector<Knot>> members;
  std::vector<Block> blocks;
  for (const auto& p : points) {
    blocks.push_back({p.log_flops, p.full_tile, 1});
    members.push_back({p});
    auto same_size = [&] {
      const auto& left = members[members.size() - 2].back();
      return left.log_flops == members.back().front().log_flops;
    };
    while (blocks.size() > 1 &&
           (blocks[blocks.size() - 2].y() > blocks.back().y() || same_size())) {
      Block& left = blocks[blocks.size() - 2];
      left.x_sum += blocks.back().x_sum;
      left.y_sum += blocks.back().y_sum;
      left.count += blocks.back().count;
      auto& lm = members[members.size() - 2];
      lm.insert(lm.end(), members.back().begin(), members.back().end());
      blocks.pop_back();
      members.pop_back();
    }
  }
  // Each sample keeps its own size with its block's throughput (a flat run where pooled).
  for (std::size_t b = 0; b < blocks.size(); ++b)
    for (const auto& m : members[b])
      if (knots_.empty() || knots_.back().log_flops != m.log_flops)
        knots_.push_back({m.log_flops, blocks[b].y()});
}

FlopsPerSecond GemmThroughputCurve::achieved(double m, double n, double k, double batch) const {
  const double flops = 2.0 * m * n * k * batch;
  const double util = tile_utilisation(m, n, tile_);
  if (flops <= 0) return knots_.front().full_tile * util;
  const double x = std::log(flops);
  const Knot& first = knots_.front();
  const Knot& last = knots_.back();
  double full;
  if (x <= first.log_flops) {
    // Same time as the smallest sample: throughput scales with the work.
    full = first.full_tile * std::exp(x - first.log_flops);
  } else if (x >= last.log_flops) {
    full = last.full_tile;
  } else {
    const auto hi = std::upper_bound(knots_.begin(), knots_.end(), x,
                                     [](double v, const Knot& knot) { return v < knot.log_flops; });
    const auto lo = hi - 1;
    const double w = (x - lo->log_flops) / (hi->log_flops - lo->log_flops);
    full = lo->full_tile + w * (hi->full_tile - lo->full_tile);
  }
  return full * util;
}

}  // namespace trainsim::model

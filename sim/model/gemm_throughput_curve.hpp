#pragma once
// Achieved GEMM throughput as a function of shape, for one dtype on one device, interpolated from
// calibration samples (kernel_calibration.hpp).
//
// The mechanism, and why:
//  - Size decides most of it: small GEMMs cannot fill the SMs and are dominated by fixed costs,
//    large ones approach the device's sustained rate. The curve's axis is log(FLOPs).
//  - Partial output tiles waste work: a sample's throughput is first divided by its own tile
//    utilisation (m*n over the padded m*n), and a query is multiplied by its own, so a curve
//    measured on aligned shapes also predicts ragged ones (n = 2145, a vocabulary of 30522).
//  - Throughput never falls as size grows: samples that break this (e.g. a skinny GEMM with a
//    short K loop beside a square one of similar size) are pooled with their neighbours
//    (pool-adjacent-violators), so the curve is monotone and the pooled samples are reproduced
//    with the pooled error, which `describe` reports.
//  - The curve is the tensor cores' rate; a GEMM's time is the larger of its arithmetic on the
//    curve and its operand traffic at the achieved memory bandwidth (compute_cost.cpp). So a
//    sample whose traffic alone takes nearly all its measured time (at least 85%: attention's
//    batched GEMMs with k = head dim 64 or 128 sit at 87-100% on an H100, at 170 and 330
//    TFLOP/s where its square GEMMs reach 876; plain GEMMs at most 56%) measures the memory, not
//    the tensor cores, and stays out of the curve; left in, the monotone pooling spreads its low
//    rate over every GEMM of similar FLOPs (it made an H100's large transformer GEMMs 10-19%
//    too slow). Below 85% the max() above says the arithmetic took the measured time.
//  - Below the smallest sample a GEMM takes the smallest sample's time (fixed costs dominate);
//    above the largest it runs at the largest sample's rate. Between knots: linear in log(FLOPs).
#include <vector>

#include "core/units.hpp"
#include "model/kernel_calibration.hpp"

namespace trainsim::model {

class GemmThroughputCurve {
 public:
  struct Knot {
    double log_flops = 0;       ///< ln(2*m*n*k*batch)
    FlopsPerSecond full_tile = 0;  ///< throughput with every output tile full
  };

  /// `samples` must be non-empty and of one dtype; `tile` is the output tile edge (0 = off);
  /// `memory_bandwidth` the device's achieved streaming rate (0 = keep every sample).
  GemmThroughputCurve(const std::vector<GemmSample>& samples, double tile,
                      BytesPerSecond memory_bandwidth = 0);

  /// Achieved FLOP/s of a GEMM (m x k) * (k x n), `batch` times.
  [[nodiscard]] FlopsPerSecond achieved(double m, double n, double k, double batch) const;

  [[nodiscard]] const std::vector<Knot>& knots() const { return knots_; }
  /// Samples left out of the curve as bound by memory bandwidth.
  [[nodiscard]] const std::vector<GemmSample>& memory_bound() const { return memory_bound_; }

  /// Share of a sample's measured time that its operand traffic at the achieved bandwidth may
  /// take before the sample counts as memory-bound.
  static constexpr double kMemoryBoundShare = 0.85;

 private:
  std::vector<Knot> knots_;
  std::vector<GemmSample> memory_bound_;
  double tile_ = 0;
};

}  // namespace trainsim::model

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

  /// `samples` must be non-empty and of one dtype; `tile` is the output tile edge (0 = off).
  GemmThroughputCurve(const std::vector<GemmSample>& samples, double tile);

  /// Achieved FLOP/s of a GEMM (m x k) * (k x n), `batch` times.
  [[nodiscard]] FlopsPerSecond achieved(double m, double n, double k, double batch) const;

  [[nodiscard]] const std::vector<Knot>& knots() const { return knots_; }

 private:
  std::vector<Knot> knots_;
  double tile_ = 0;
};

}  // namespace trainsim::model

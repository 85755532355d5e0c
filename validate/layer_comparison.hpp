#pragma once
// Measured against predicted, per kernel and in total, for `trainsim-validate layer`. The GPU run
// names its kernels the way model/transformer.cpp names the simulator's operations ("qkv",
// "softmax", "qkv_dgrad", "gelu_bwd", ...), so the two lists pair by name; a name found on only one
// side is reported, since it means the simulator and the real layer disagree on what runs.
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "model/device_profile.hpp"
#include "model/operation.hpp"
#include "model/transformer.hpp"

namespace trainsim::validate {

/// cuBLAS's usual CTA tile edge for large bf16 GEMMs on sm_80 and sm_90: the step of the layer
/// check's GEMM curves (gemm_throughput_curve.hpp).
constexpr double kLayerCheckGemmTile = 128;
/// The target for a composed layer's total.
constexpr double kLayerCheckTarget = 0.05;

struct OpComparison {
  std::string name;
  Seconds measured = 0;
  Seconds predicted = 0;
  bool sampled_shape =
      false;  ///< a GEMM whose exact shape is a calibration sample (no interpolation)
  /// (predicted - measured) / measured.
  [[nodiscard]] double error() const { return (predicted - measured) / measured; }
};

struct LayerComparison {
  std::vector<OpComparison> ops;            ///< in the simulator's order
  Seconds measured_total = 0;               ///< the whole pass, timed without per-kernel events
  Seconds predicted_total = 0;              ///< ops_duration of the simulator's list
  std::vector<std::string> only_measured;   ///< kernels the simulator has no operation for
  std::vector<std::string> only_predicted;  ///< operations the GPU run did not time
  [[nodiscard]] double total_error() const {
    return (predicted_total - measured_total) / measured_total;
  }
};

/// Pairs `measured` (kernel name, seconds per call) with `predicted_ops` costed on `dev`.
[[nodiscard]] LayerComparison compare_layer(
    const std::vector<std::pair<std::string, Seconds>>& measured, Seconds measured_total,
    const std::vector<model::Operation>& predicted_ops, const model::DeviceProfile& dev);

/// A table: name, measured us, predicted us, error %, and a mark on sampled GEMM shapes; then
/// the totals and any unpaired names.
void print_layer_comparison(std::ostream& out, const LayerComparison& c);

/// The check's verdict line: whether the total error is within kLayerCheckTarget.
void print_layer_verdict(std::ostream& out, const LayerComparison& c);

/// One layer's forward then backward operations: what the layer check times and predicts.
[[nodiscard]] std::vector<model::Operation> layer_pass_ops(const model::TransformerSpec& spec,
                                                           long micro_batch);

/// The device the layer check predicts with: everything from the calibration (GEMM curves with
/// `gemm_tile`, streaming bandwidth, launch overhead). peak_fp32 (the arithmetic bound of
/// memory-bound kernels) is the best fp32 GEMM rate sampled, else 1 PFLOP/s (no bound);
/// peak_bf16 the best bf16/fp16 sample (unused: the curves replace it).
[[nodiscard]] model::DeviceProfile validation_profile(const model::KernelCalibration& c,
                                                      double gemm_tile);

}  // namespace trainsim::validate

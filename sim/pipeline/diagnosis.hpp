#pragma once
// Debugger-style rules over an input pipeline's epochs (source 001 names CPUBottleneck,
// LoadBalancing and LowGPUUtilization; IOBottleneck is this simulator's read-side twin). The
// thresholds are assumptions, in the spirit of the Debugger rules' defaults; a scenario may set
// them in "data.diagnosis".
#include <vector>

#include "pipeline/pipeline_result.hpp"

namespace trainsim::pipeline {

/// When a rule fires. Every default is an assumption (no source publishes these for training).
struct DiagnosisThresholds {
  /// IOBottleneck: the job stalls on reads > this share of the epoch; CPUBottleneck: on
  /// pre-processing, and no less than on reads (a late read delays pre-processing too).
  double wait = 0.10;
  double accelerator_utilisation = 0.70;  ///< LowGPUUtilization: accelerators busy < this share
  double node_spread = 0.10;              ///< LoadBalancing: max - min node wait share > this
  double cpu_utilisation = 0.90;          ///< CPUBottleneck: vCPUs busy > this share
};

/// The findings for every epoch, in epoch order, each rule in the order above.
[[nodiscard]] std::vector<Diagnosis> diagnose(const std::vector<EpochResult>& epochs,
                                              const DiagnosisThresholds& t = {});

}  // namespace trainsim::pipeline

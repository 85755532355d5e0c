#pragma once
// The hand-made NCCL calibration with round numbers that the tuner tests write their expected
// times against, and that the cost-model tests extend.
#include "collective/collective_calibration.hpp"

namespace trainsim::testing_support {

/// Round numbers: protocols as NCCL's (LL 1/2, LL128 120/128) with base latencies 5 / 8 /
/// 10 us, 1 MB chunks; NVSwitch with ring 0.8 and NVLS 0.5 efficiency and a 40 us NVLS call;
/// network ring 0.9, tree 0.6.
inline collective::CollectiveCalibration round_nccl_calibration(bool nvls) {
  collective::CollectiveCalibration c;
  c.schema_version = 2;
  c.protocols[0] = {0.5, 5e-6, 64e3};
  c.protocols[1] = {0.9375, 8e-6, 0};
  c.protocols[2] = {1.0, 10e-6, 0};
  auto& intra = c.intra_fabric;
  intra.algorithms = {collective::Algorithm::ring};
  if (nvls) intra.algorithms.push_back(collective::Algorithm::nvls);
  intra.protocols = {collective::Protocol::ll, collective::Protocol::ll128, collective::Protocol::simple};
  intra.ring_efficiency = 0.8;
  intra.nvls_efficiency = 0.5;
  intra.step_latency = {1e-6, 1e-6, 1e-6};
  intra.nvls_latency = 40e-6;
  intra.simple_chunk = intra.tree_chunk = 1e6;
  auto& inter = c.inter_fabric;
  inter.algorithms = {collective::Algorithm::ring, collective::Algorithm::tree};
  inter.protocols = {collective::Protocol::simple};
  inter.ring_efficiency = 0.9;
  inter.tree_efficiency = 0.6;
  inter.step_latency = {0, 0, 10e-6};
  inter.simple_chunk = inter.tree_chunk = 1e6;
  return c;
}

}  // namespace trainsim::testing_support

#include <cstdio>

#include "pipeline/diagnosis.hpp"

namespace trainsim::pipeline {

namespace {

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}

}  // namespace

std::vector<Diagnosis> diagnose(const std::vector<EpochResult>& epochs, const DiagnosisThresholds& t) {
  std::vector<Diagnosis> out;
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const EpochResult& e = epochs[i];
    const int n = static_cast<int>(i) + 1;
    if (e.io_wait_fraction > t.wait)
      out.push_back({"IOBottleneck", n,
                     pct(e.io_wait_fraction) + " of the epoch waiting for reads (" +
                         pct(e.wait_fraction) + " waiting for batches in all)"});
    // A batch that arrives late from storage still has to be pre-processed, so an I/O-bound
    // job also waits on pre-processing: that wait names the CPU only when it is the larger.
    const bool cpu_wait = e.cpu_wait_fraction > t.wait && e.cpu_wait_fraction >= e.io_wait_fraction;
    if (cpu_wait || e.cpu_utilisation > t.cpu_utilisation)
      out.push_back({"CPUBottleneck", n,
                     pct(e.cpu_wait_fraction) + " of the epoch waiting for pre-processing; vCPUs " +
                         pct(e.cpu_utilisation) + " busy (pre-processing and collectives)"});
    if (e.accelerator_utilisation < t.accelerator_utilisation)
      out.push_back({"LowGPUUtilization", n,
                     "accelerators busy " + pct(e.accelerator_utilisation) + " of the epoch"});
    if (e.max_node_wait_fraction - e.min_node_wait_fraction > t.node_spread)
      out.push_back({"LoadBalancing", n,
                     "node " + std::to_string(e.slowest_node) + " waits " +
                         pct(e.max_node_wait_fraction) + " of the epoch, the least-waiting node " +
                         pct(e.min_node_wait_fraction)});
  }
  return out;
}

}  // namespace trainsim::pipeline

#include "model/host_dispatch.hpp"

#include <algorithm>

namespace trainsim::model {

DispatchTimes dispatch(Seconds host_start, Seconds device_free, int kernels, Seconds per_kernel,
                       Seconds device_time) {
  DispatchTimes t;
  if (kernels <= 0) {
    t.device_start = device_free;
    t.host_end = host_start;
    t.device_end = device_free + device_time;
    return t;
  }
  t.device_start = std::max(device_free, host_start + per_kernel);
  t.host_end = host_start + kernels * per_kernel;
  t.device_end = std::max(t.device_start + device_time, t.host_end + device_time / kernels);
  return t;
}

DispatchTimes dispatch_blocking(Seconds host_start, Seconds device_free, int kernels, Seconds per_kernel,
                                Seconds device_time) {
  if (kernels <= 0) return dispatch(host_start, device_free, kernels, per_kernel, device_time);
  DispatchTimes t;
  t.device_start = std::max(device_free, host_start + per_kernel);
  // The first kernel's issue is before device_start; each later one follows its predecessor's end.
  t.device_end = t.device_start + device_time + (kernels - 1) * per_kernel;
  t.host_end = t.device_end;
  return t;
}

std::vector<std::vector<Operation>> split_at_host_syncs(const std::vector<Operation>& ops) {
  std::vector<std::vector<Operation>> runs(1);
  for (const auto& op : ops) {
    runs.back().push_back(op);
    if (op.host_sync_after) runs.emplace_back();
  }
  if (runs.size() > 1 && runs.back().empty()) runs.pop_back();
  return runs;
}

}  // namespace trainsim::model

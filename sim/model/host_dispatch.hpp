#pragma once
// Eager frameworks (PyTorch without CUDA graphs) launch every kernel from one host thread, and
// Python, autograd and the dispatcher cost tens of microseconds per kernel. The host runs ahead
// of the device while the device's kernels are longer (up to the launch queue's ~1024 kernels,
// never reached in one step's run of issue here); when they are shorter the device waits for the
// host, and after a host synchronisation (torch.cuda.synchronize, .item(), a blocking wait on a
// collective) the device restarts only as fast as the host issues again. This is the arithmetic
// of that race for a run of kernels, shared by the engine (a task's kernels) and validate/ (a
// layer's ops).
#include <vector>

#include "core/units.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

struct DispatchTimes {
  Seconds device_start = 0;  ///< the first kernel starts: issued, and the device free
  Seconds host_end = 0;      ///< the host has issued the last kernel
  Seconds device_end = 0;    ///< the last kernel ends, for kernels taking `device_time` in all
};

/// `kernels` kernels taking `device_time` together on the device, issued one by one from
/// `host_start` at `per_kernel` host time each, on a device free from `device_free`. The first
/// starts once issued; the run ends at the later of the device's own end and the host's last
/// issue plus one mean kernel (the last kernel cannot start before it is issued). Kernels are
/// taken as equally long inside the run: a run mixing long and short kernels can end later.
[[nodiscard]] DispatchTimes dispatch(Seconds host_start, Seconds device_free, int kernels, Seconds per_kernel,
                                     Seconds device_time);

/// The same run under CUDA_LAUNCH_BLOCKING=1: each launch returns only once its kernel has
/// finished, so the host issues kernel k+1 after kernel k ends and nothing overlaps: the run takes
/// `kernels` issues plus its device time, and the host is free only when the last kernel ends
/// (host_end == device_end). `host_start` is when the host reaches the run, at the earliest once
/// what it waits for has ended (the launch of that work blocked too).
[[nodiscard]] DispatchTimes dispatch_blocking(Seconds host_start, Seconds device_free, int kernels, Seconds per_kernel,
                                              Seconds device_time);

/// A pass's ops cut after each op the host synchronises on (Operation::host_sync_after), in
/// order: the runs of kernels the host issues between two synchronisations. One run (the whole
/// list) without any; a synchronising last op ends the last run (no empty run follows it).
[[nodiscard]] std::vector<std::vector<Operation>> split_at_host_syncs(const std::vector<Operation>& ops);

}  // namespace trainsim::model

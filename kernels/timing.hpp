#pragma once
// Timing one kernel (or a fixed sequence of them) with CUDA events, after warm-up: the number of
// timed calls is chosen so the timed region lasts at least `min_time`, which keeps event
// resolution (~0.5 us) and launch jitter out of the result.
#include <cuda_runtime_api.h>

#include <functional>

namespace trainsim::kernels {

struct TimingPolicy {
  int warmup = 5;          ///< untimed calls first (clocks up, caches and cuBLAS heuristics warm)
  double min_time = 0.05;  ///< seconds the timed calls must last together
  int min_calls = 3, max_calls = 2000;
};

/// Seconds per call of `launch` (which enqueues work on `stream`), averaged over the timed calls.
[[nodiscard]] double time_per_call(const std::function<void()>& launch, cudaStream_t stream,
                                   const TimingPolicy& policy = {});

/// Seconds `launch` takes, timed once between two events (for phases measured as a whole).
[[nodiscard]] double time_once(const std::function<void()>& launch, cudaStream_t stream);

}  // namespace trainsim::kernels

#include "timing.hpp"

#include <algorithm>
#include <cmath>

#include "cuda_check.hpp"

namespace trainsim::kernels {

namespace {

class EventPair {
 public:
  EventPair() {
    TRAINSIM_CUDA(cudaEventCreate(&start_));
    TRAINSIM_CUDA(cudaEventCreate(&stop_));
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double seconds(const std::function<void()>& body, cudaStream_t stream, int calls) {
    TRAINSIM_CUDA(cudaEventRecord(start_, stream));
    for (int i = 0; i < calls; ++i) body();
    TRAINSIM_CUDA(cudaEventRecord(stop_, stream));
    TRAINSIM_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    TRAINSIM_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

}  // namespace

double time_per_call(const std::function<void()>& launch, cudaStream_t stream,
                     const TimingPolicy& policy) {
  EventPair events;
  for (int i = 0; i < policy.warmup; ++i) launch();
  TRAINSIM_CUDA(cudaStreamSynchronize(stream));
  // One call to size the timed loop.
  const double one = std::max(events.seconds(launch, stream, 1), 1e-7);
  const int calls = std::clamp(static_cast<int>(std::ceil(policy.min_time / one)), policy.min_calls,
                               policy.max_calls);
  return events.seconds(launch, stream, calls) / calls;
}

double time_once(const std::function<void()>& launch, cudaStream_t stream) {
  EventPair events;
  return events.seconds(launch, stream, 1);
}

}  // namespace trainsim::kernels

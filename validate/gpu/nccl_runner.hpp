#pragma once
// nccl-tests' method in one process: one communicator per visible GPU (ncclCommInitAll), each
// rank's call issued inside one ncclGroupStart/End, time measured on the host from the first
// launch to the end of the last iteration on every stream, divided by the iterations
// (nccl-tests src/common.cu). Each collective (nccl/*.cpp, one file each) says how it is called and
// what every rank must receive; it is checked at small sizes before any size is timed.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "bus_bandwidth.hpp"
#include "collective_measurements.hpp"
#include "device_buffer.hpp"

namespace trainsim::validate {

/// One collective as nccl-tests' src/<op>.cu defines it.
struct CollectiveTest {
  CollectiveOp op;
  /// Enqueues rank `rank`'s part of the collective on `stream` (float elements, sum).
  void (*launch)(const float* send, float* recv, const CollectiveCounts& counts, ncclComm_t comm,
                 cudaStream_t stream, int rank, int ranks);
  /// Element i of rank `rank`'s receive buffer when every rank r sent send_value(r, j).
  double (*expected)(int rank, int ranks, std::size_t i, const CollectiveCounts& counts);
};

/// What rank r puts at index j of its send buffer in the correctness check: small integers, so
/// sums over ranks are exact in fp32.
[[nodiscard]] inline double send_value(int rank, std::size_t j) {
  return static_cast<double>(rank + 1) + static_cast<double>(j % 7);
}

const CollectiveTest& all_reduce_test();
const CollectiveTest& all_gather_test();
const CollectiveTest& reduce_scatter_test();
const CollectiveTest& alltoall_test();

/// Communicators, streams and buffers of `max_bytes` per rank on every visible GPU.
class NcclRanks {
 public:
  NcclRanks(int ranks, std::size_t max_bytes);
  ~NcclRanks();
  NcclRanks(const NcclRanks&) = delete;
  NcclRanks& operator=(const NcclRanks&) = delete;

  [[nodiscard]] int ranks() const { return static_cast<int>(comms_.size()); }

  /// Runs `test` once at `size_bytes` with send_value inputs and compares every rank's receive
  /// buffer with test.expected; throws VerificationError-like std::runtime_error on a mismatch.
  void check(const CollectiveTest& test, std::size_t size_bytes);
  /// Seconds per call of `test` at `size_bytes` (warm-up calls first, then `iters` timed).
  [[nodiscard]] double time(const CollectiveTest& test, std::size_t size_bytes, int warmup,
                            int iters);

 private:
  void launch_all(const CollectiveTest& test, const CollectiveCounts& counts);
  void synchronize_all();
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<kernels::DeviceBuffer<float>> send_, recv_;
};

/// ncclGetVersion as "M.m.p".
[[nodiscard]] std::string nccl_version();

}  // namespace trainsim::validate

#define TRAINSIM_NCCL(call)                                                                      \
  do {                                                                                           \
    const ncclResult_t trainsim_nccl_ = (call);                                                  \
    if (trainsim_nccl_ != ncclSuccess)                                                           \
      ::trainsim::kernels::throw_cuda_error(#call, ncclGetErrorString(trainsim_nccl_), __FILE__, \
                                            __LINE__);                                           \
  } while (0)

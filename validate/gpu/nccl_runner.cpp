#include "nccl_runner.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "cuda_check.hpp"
#include "provenance.hpp"

namespace trainsim::validate {

NcclRanks::NcclRanks(int ranks, std::size_t max_bytes) {
  comms_.resize(static_cast<std::size_t>(ranks));
  TRAINSIM_NCCL(ncclCommInitAll(comms_.data(), ranks, nullptr));  // devices 0 .. ranks-1
  const std::size_t elements = max_bytes / sizeof(float);
  for (int r = 0; r < ranks; ++r) {
    TRAINSIM_CUDA(cudaSetDevice(r));
    cudaStream_t s{};
    TRAINSIM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.push_back(s);
    send_.emplace_back(elements);
    recv_.emplace_back(elements);
    TRAINSIM_CUDA(cudaMemset(send_.back().get(), 0, send_.back().bytes()));
  }
}

NcclRanks::~NcclRanks() {
  for (auto c : comms_) ncclCommDestroy(c);
  for (std::size_t r = 0; r < streams_.size(); ++r) {
    cudaSetDevice(static_cast<int>(r));
    cudaStreamDestroy(streams_[r]);
  }
}

void NcclRanks::launch_all(const CollectiveTest& test, const CollectiveCounts& counts) {
  TRAINSIM_NCCL(ncclGroupStart());
  for (int r = 0; r < ranks(); ++r)
    test.launch(send_[r].get(), recv_[r].get(), counts, comms_[r], streams_[r], r, ranks());
  TRAINSIM_NCCL(ncclGroupEnd());
}

void NcclRanks::synchronize_all() {
  for (int r = 0; r < ranks(); ++r) {
    TRAINSIM_CUDA(cudaSetDevice(r));
    TRAINSIM_CUDA(cudaStreamSynchronize(streams_[r]));
  }
}

void NcclRanks::check(const CollectiveTest& test, std::size_t size_bytes) {
  const auto counts = collective_counts(test.op, size_bytes, ranks(), sizeof(float));
  for (int r = 0; r < ranks(); ++r) {
    std::vector<float> host(counts.send_elements);
    for (std::size_t j = 0; j < host.size(); ++j) host[j] = static_cast<float>(send_value(r, j));
    TRAINSIM_CUDA(cudaSetDevice(r));
    TRAINSIM_CUDA(cudaMemcpy(send_[r].get(), host.data(), host.size() * sizeof(float),
                             cudaMemcpyHostToDevice));
    TRAINSIM_CUDA(cudaMemset(recv_[r].get(), 0xFF, counts.recv_elements * sizeof(float)));  // NaNs
  }
  launch_all(test, counts);
  synchronize_all();
  for (int r = 0; r < ranks(); ++r) {
    std::vector<float> got(counts.recv_elements);
    TRAINSIM_CUDA(cudaSetDevice(r));
    TRAINSIM_CUDA(
        cudaMemcpy(got.data(), recv_[r].get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double want = test.expected(r, ranks(), i, counts);
      if (!(std::fabs(got[i] - want) <= 1e-6 * std::fabs(want)))
        throw std::runtime_error(std::string(collective_name(test.op)) + " is wrong at " +
                                 std::to_string(size_bytes) + " bytes: rank " + std::to_string(r) +
                                 " element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                                 ", expected " + std::to_string(want) + "; nothing was timed");
    }
  }
}

double NcclRanks::time(const CollectiveTest& test, std::size_t size_bytes, int warmup, int iters) {
  const auto counts = collective_counts(test.op, size_bytes, ranks(), sizeof(float));
  for (int i = 0; i < warmup; ++i) launch_all(test, counts);
  synchronize_all();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) launch_all(test, counts);
  synchronize_all();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / iters;
}

std::string nccl_version() {
  int v = 0;
  TRAINSIM_NCCL(ncclGetVersion(&v));
  return dotted_version(v);
}

}  // namespace trainsim::validate

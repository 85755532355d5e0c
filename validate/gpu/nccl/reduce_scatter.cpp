// reduce_scatter (nccl-tests src/reduce_scatter.cu): rank r ends with block r of the sum of all
// ranks' buffers. S = recvcount * n * sizeof(float); busbw = algbw * (n-1)/n.
#include "nccl_runner.hpp"

namespace trainsim::validate {

namespace {

void launch(const float* send, float* recv, const CollectiveCounts& c, ncclComm_t comm,
            cudaStream_t stream, int, int) {
  TRAINSIM_NCCL(ncclReduceScatter(send, recv, c.call_count, ncclFloat, ncclSum, comm, stream));
}

double expected(int rank, int ranks, std::size_t i, const CollectiveCounts& c) {
  double sum = 0;
  for (int r = 0; r < ranks; ++r)
    sum += send_value(r, static_cast<std::size_t>(rank) * c.call_count + i);
  return sum;
}

}  // namespace

const CollectiveTest& reduce_scatter_test() {
  static const CollectiveTest t{CollectiveOp::reduce_scatter, launch, expected};
  return t;
}

}  // namespace trainsim::validate

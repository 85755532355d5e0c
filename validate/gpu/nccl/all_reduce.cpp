// all_reduce (nccl-tests src/all_reduce.cu): every rank ends with the sum of all ranks' buffers.
// S = count * sizeof(float); busbw = algbw * 2(n-1)/n.
#include "nccl_runner.hpp"

namespace trainsim::validate {

namespace {

void launch(const float* send, float* recv, const CollectiveCounts& c, ncclComm_t comm,
            cudaStream_t stream, int, int) {
  TRAINSIM_NCCL(ncclAllReduce(send, recv, c.call_count, ncclFloat, ncclSum, comm, stream));
}

double expected(int, int ranks, std::size_t i, const CollectiveCounts&) {
  double sum = 0;
  for (int r = 0; r < ranks; ++r) sum += send_value(r, i);
  return sum;
}

}  // namespace

const CollectiveTest& all_reduce_test() {
  static const CollectiveTest t{CollectiveOp::all_reduce, launch, expected};
  return t;
}

}  // namespace trainsim::validate

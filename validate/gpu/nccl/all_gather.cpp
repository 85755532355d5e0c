// all_gather (nccl-tests src/all_gather.cu): every rank ends with all ranks' blocks, rank r's at
// offset r * sendcount. S = sendcount * n * sizeof(float); busbw = algbw * (n-1)/n.
#include "nccl_runner.hpp"

namespace trainsim::validate {

namespace {

void launch(const float* send, float* recv, const CollectiveCounts& c, ncclComm_t comm,
            cudaStream_t stream, int, int) {
  TRAINSIM_NCCL(ncclAllGather(send, recv, c.call_count, ncclFloat, comm, stream));
}

double expected(int, int, std::size_t i, const CollectiveCounts& c) {
  const int from = static_cast<int>(i / c.call_count);
  return send_value(from, i % c.call_count);
}

}  // namespace

const CollectiveTest& all_gather_test() {
  static const CollectiveTest t{CollectiveOp::all_gather, launch, expected};
  return t;
}

}  // namespace trainsim::validate

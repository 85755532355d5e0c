// alltoall (nccl-tests src/alltoall.cu): rank r sends its block p to rank p and receives rank p's
// block r at offset p * count, as grouped ncclSend/ncclRecv pairs (as nccl-tests does, so it runs
// on NCCL versions without ncclAlltoAll). S = count * n * sizeof(float); busbw = algbw * (n-1)/n.
#include "nccl_runner.hpp"

namespace trainsim::validate {

namespace {

void launch(const float* send, float* recv, const CollectiveCounts& c, ncclComm_t comm,
            cudaStream_t stream, int, int ranks) {
  TRAINSIM_NCCL(ncclGroupStart());
  for (int peer = 0; peer < ranks; ++peer) {
    const std::size_t offset = static_cast<std::size_t>(peer) * c.call_count;
    TRAINSIM_NCCL(ncclSend(send + offset, c.call_count, ncclFloat, peer, comm, stream));
    TRAINSIM_NCCL(ncclRecv(recv + offset, c.call_count, ncclFloat, peer, comm, stream));
  }
  TRAINSIM_NCCL(ncclGroupEnd());
}

double expected(int rank, int, std::size_t i, const CollectiveCounts& c) {
  const int from = static_cast<int>(i / c.call_count);
  return send_value(from, static_cast<std::size_t>(rank) * c.call_count + i % c.call_count);
}

}  // namespace

const CollectiveTest& alltoall_test() {
  static const CollectiveTest t{CollectiveOp::alltoall, launch, expected};
  return t;
}

}  // namespace trainsim::validate

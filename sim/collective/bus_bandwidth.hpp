#pragma once
// nccl-tests' bandwidth definitions (NVIDIA/nccl-tests doc/PERFORMANCE.md; VALIDATION.md 0):
// algbw = S / t, busbw = algbw x factor, where the factor makes busbw comparable to the link
// bandwidth whatever the rank count: all_reduce 2(n-1)/n; reduce_scatter, all_gather and
// alltoall (n-1)/n; broadcast and send_recv 1; ring_exchange (each member sends S) 1.
#include "collective/collective_plan.hpp"

namespace trainsim::collective {

[[nodiscard]] inline double bus_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::all_reduce: return 2 * (n - 1) / n;
    case Op::reduce_scatter:
    case Op::all_gather:
    case Op::alltoall: return (n - 1) / n;
    case Op::broadcast:
    case Op::send_recv:
    case Op::ring_exchange: return 1;
  }
  return 1;
}

/// GB/s (10^9 B/s, as nccl-tests) moved by a collective of size S bytes in t seconds.
[[nodiscard]] inline double algbw_gbps(Bytes size, Seconds t) { return size / t / 1e9; }

}  // namespace trainsim::collective

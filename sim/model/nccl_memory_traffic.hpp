#pragma once
// Device-memory (HBM) traffic of a NCCL ring kernel, per byte it moves over a link, and the
// capacity of the per-accelerator HBM link that stands for it in the platform
// (engine/platform_builder.hpp, Platform::hbm_link).
//
// Derivation, from NVIDIA/nccl's source at v2.18.1-1 (PyTorch 2.1, llm-foundry's H100 tables)
// and v2.12.12-1 (the A100 rows; the lines read the same there unless given):
//  - Ring all_gather (src/collectives/device/all_gather.h:58, 66, 74): after the first step
//    every rank runs directRecvCopySend, then directRecv. With one process per GPU the "direct"
//    variants fall back to the FIFO: P2P_DIRECT (user-buffer pointers) is set up only between
//    ranks of one process (src/transport/p2p.cc:352-354, :414-418; v2.12: the pidHash tests at
//    :188, :233, and across processes only user buffers registered in CUDA graph mode,
//    enqueue.cc:735-736, prims_simple.h:322-327, which eager PyTorch does not use). So a received chunk lands in NCCL's FIFO and prims_simple.h's genericOp reads
//    it and writes it to the output buffer and to the next rank's FIFO in one pass (reduceCopy
//    with the recv FIFO as source, the output and the send FIFO as destinations, :224-251;
//    v2.12: ReduceOrCopyMulti, :183-199).
//  - Ring reduce_scatter (reduce_scatter.h:52, 58, 64): recvReduceSend reads the FIFO and the
//    local input and writes the next rank's FIFO; the last step writes the output instead.
//  - Ring all_reduce: a reduce_scatter then an all_gather in one kernel.
//  - Where the FIFO is: written by the sender into the receiver's memory, except on Ampere over
//    NVLink, where NCCL reads instead (src/graph/paths.cc:337, "Enable P2P Read for
//    Ampere/NVLink only": compute capability 80) and the Simple protocol's FIFO sits at the
//    sender (p2p.cc:347; v2.12: :183): the sender writes its own FIFO and the receiver reads
//    it remotely.
// Either way, each byte passing through a rank touches its HBM three times: the FIFO written,
// the FIFO read, and the output written (all_gather) or the input read (reduce_scatter): 3 B per
// byte received (write mode: all at the receiver; read mode: two at the sender, one at the
// receiver, and every rank of a ring sends what it receives). Network transports (GPUDirect
// RDMA) move the same FIFO traffic through the NIC.
// ASSUMPTIONS: the FIFO traffic reaches HBM rather than staying in L2 (NCCL_BUFFSIZE's 4 MiB
// per channel and connection, times 16-32 channels, is several times the A100's 40 MB and the
// H100's 50 MB of L2); Simple protocol (large calls; LL128 would add 128/120 on the two FIFO
// bytes); NVLS all_reduce (H100, reductions in the NVSwitch) is counted like a ring.
#include "model/device_profile.hpp"

namespace trainsim::model {

/// HBM bytes a ring collective moves per byte it receives over a link (see above).
inline constexpr double kNcclHbmBytesPerLinkByte = 3.0;

/// HBM bytes one unit of traffic on an HBM link stands for: every flow crosses the HBM links of
/// both its ends, and each rank of a ring receives what it sends, so a link byte counts twice
/// for the 3 B it costs.
inline constexpr double kHbmBytesPerLinkUnit = kNcclHbmBytesPerLinkByte / 2;

/// Capacity of an accelerator's HBM link, in link units per second: the achieved streaming rate
/// (achieved_memory_bandwidth: the calibration's stream copy, else peak x memory_efficiency)
/// over kHbmBytesPerLinkUnit. 0 for devices whose collectives run no kernel on the compute
/// units (no sm_count: Gaudi's HCCL runs on its RoCE engines), which get no HBM link.
[[nodiscard]] inline BytesPerSecond hbm_link_bandwidth(const DeviceProfile& dev) {
  if (dev.sm_count <= 0) return 0;
  return achieved_memory_bandwidth(dev) / kHbmBytesPerLinkUnit;
}

}  // namespace trainsim::model

// NCCL 2.8.3's estimate (NVIDIA/nccl v2.8.3-1 src/graph/tuning.cc, ncclTopoTuneModel), the
// release of PyTorch's 20.12 container that Megatron-LM's 2021 runs used. Against 2.27 it has
// no network latency term, a 1/4 (not 1/2) ring LL factor, per-collective LL128 ceilings, a
// tree Simple latency of 28 us per hop and smaller Ampere tree ceilings across 4+ nodes
// (perChMaxTreeBws 16 GB/s per channel).
#include <algorithm>
#include <array>

#include "collective/nccl_cost_model.hpp"

namespace trainsim::collective {

namespace {

// v2.8.3-1 tuning.cc; latencies in us, bandwidths in GB/s. Rows by protocol LL, LL128, Simple.
constexpr std::array<double, 3> kTreeBaseLat{4.4, 4.4, 0};
constexpr std::array<double, 3> kRingBaseLat{3.6, 10.0, 8.4};
constexpr std::array<double, 3> kNvlinkTreeLat{.52, 1.25, 28};
constexpr std::array<double, 3> kNvlinkRingLat{.47, 1.9, 3.4};
constexpr std::array<double, 3> kNetTreeLat{5.0, 8.5, 28};
constexpr std::array<double, 3> kNetRingLat{2.7, 4.0, 9.6};
// llMaxBws across nodes: row by CPU (Intel, AMD), column by node count (2, more).
constexpr double kLLMaxBw[2][2] = {{39.0, 20.4}, {22.5, 19.0}};
// perChMaxTreeBws: row Volta, Ampere; column by node count (2, more).
constexpr double kPerChMaxTree[2][2] = {{18.5, 10.0}, {22.5, 16.0}};
// ll128MaxBwPerCh by collective.
constexpr double kLL128PerChAllReduce = 16.9, kLL128PerChAllGather = 18.3,
                 kLL128PerChReduceScatter = 15.2;

int log2_floor(int x) {
  int l = -1;
  for (; x >= 1; x /= 2) ++l;
  return l;
}

}  // namespace

std::optional<NcclCost> nccl_cost_v2_8_3(const NcclCostModel& m, Op op, Algorithm a, Protocol p,
                                         int nodes, int ranks) {
  if (nodes < 2 || ranks < 2) return std::nullopt;
  const bool all_reduce = op == Op::all_reduce;
  if (!all_reduce && op != Op::all_gather && op != Op::reduce_scatter) return std::nullopt;
  // 2.8 has ring and tree (and CollNet, which needs SHARP); no NVLS.
  const bool ring = a == Algorithm::ring;
  if (!ring && !(all_reduce && a == Algorithm::tree)) return std::nullopt;
  const NcclGraph& gr = ring ? m.ring : m.tree;
  if (gr.channels <= 0) return std::nullopt;

  const bool ampere = m.arch == NcclArch::ampere;
  const std::size_t by_nodes = nodes <= 2 ? 0 : 1;
  const auto pi = static_cast<std::size_t>(p);
  const double ppn = static_cast<double>(ranks) / nodes;
  const int nsteps = all_reduce ? 2 * (ranks - 1) : ranks - 1;
  const int inter_steps = all_reduce ? 2 * (nodes - 1) : nodes - 1;
  const double ll_max = kLLMaxBw[m.amd_cpu ? 1 : 0][by_nodes];
  const double ll128_per_ch = all_reduce               ? kLL128PerChAllReduce
                              : op == Op::all_gather ? kLL128PerChAllGather
                                                     : kLL128PerChReduceScatter;
  const double nc = gr.channels;

  double bus = nc * (nodes <= 2 ? gr.bw_intra : gr.bw_inter);
  if (ampere) bus = std::min(bus, 235.0);
  if (ring && p == Protocol::ll) bus = std::min(ll_max, bus / 4);
  if (ring && p == Protocol::ll128) bus = std::min(bus * (ppn < 2 ? 0.7 : 0.92), ll128_per_ch * nc);
  if (!ring) {  // the tree
    bus = std::min(bus * .92, nc * kPerChMaxTree[ampere ? 1 : 0][by_nodes]);
    if (p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
    if (p == Protocol::ll128) bus = std::min(bus * 0.915, ll128_per_ch * nc);
  }
  NcclCost c;
  c.bandwidth_gbps = bus * (ring ? static_cast<double>(ranks) / nsteps : 0.5);

  double intra = ring ? kNvlinkRingLat[pi] : kNvlinkTreeLat[pi];
  const double inter = ring ? kNetRingLat[pi] : kNetTreeLat[pi];
  if (p == Protocol::ll) intra *= 1.8;  // across nodes
  double lat = ring ? kRingBaseLat[pi] : kTreeBaseLat[pi];
  if (ring)
    lat += (nsteps - inter_steps) * intra + inter_steps * inter;
  else  // NCCL divides the ranks by the nodes in integers here
    lat += 2 * ((ranks / nodes - 1) * intra + log2_floor(nodes) * inter);
  c.latency = lat * 1e-6;
  return c;
}

}  // namespace trainsim::collective

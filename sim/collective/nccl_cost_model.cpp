#include "collective/nccl_cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/json_reader.hpp"

namespace trainsim::collective {

namespace {

// NCCL 2.27.7 src/graph/tuning.cc tables; latencies in us, bandwidths in GB/s per channel.
// Rows by protocol LL, LL128, Simple.
constexpr std::array<double, 3> kTreeBaseLat{6.8, 14.0, 8.4};
constexpr std::array<double, 3> kRingBaseLat{6.6, 14.0, 8.4};
constexpr std::array<double, 3> kNvlinkTreeLat{0.6, 1.25, 4.0};
constexpr std::array<double, 3> kNvlinkRingLat{0.6, 1.9, 3.4};
constexpr std::array<double, 3> kNetTreeLat{5.0, 8.5, 14.0};
constexpr std::array<double, 3> kNetRingLat{2.7, 4.0, 14.0};
constexpr double kNvlinkNvlsTreeLat = 25, kNetNvlsTreeLat = 14;
// By architecture (Volta, Ampere, Hopper, Blackwell) and node count (1, 2, more).
constexpr double kPerChMaxRingLL128[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 73.4, 73.4}};
constexpr double kPerChMaxTreeLL128[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {73.4, 73.4, 58.0}};
constexpr double kPerChMaxTree[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {77.4, 82.8, 72.0}};
// llMaxBws across nodes: row by CPU (Intel, AMD), column by node count (2, more).
constexpr double kLLMaxBw[2][2] = {{39.0, 20.4}, {22.5, 19.0}};
// treeCorrectionFactor: powers of two from 64 B to 256 MiB, by protocol.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int log2_floor(double x) {
  int l = -1;
  while (x >= 1) {
    x /= 2;
    ++l;
  }
  return l;
}

const NcclGraph& graph_of(const NcclCostModel& m, Algorithm a) {
  return a == Algorithm::ring ? m.ring : a == Algorithm::tree ? m.tree : m.nvls;
}

}  // namespace

std::optional<NcclCost> nccl_cost(const NcclCostModel& m, Op op, Algorithm a, Protocol p,
                                  int nodes, int ranks) {
  if (m.version == NcclVersion::v2_8_3) return nccl_cost_v2_8_3(m, op, a, p, nodes, ranks);
  if (nodes < 2 || ranks < 2) return std::nullopt;
  const bool all_reduce = op == Op::all_reduce;
  const bool gather_scatter = op == Op::all_gather || op == Op::reduce_scatter;
  if (!all_reduce && !gather_scatter) return std::nullopt;
  if (a != Algorithm::ring && !(all_reduce && (a == Algorithm::tree || a == Algorithm::nvls_tree)))
    return std::nullopt;
  if (a == Algorithm::nvls_tree && p != Protocol::simple) return std::nullopt;
  const NcclGraph& gr = graph_of(m, a);
  if (gr.channels <= 0) return std::nullopt;

  const auto arch = static_cast<std::size_t>(m.arch);
  const std::size_t by_nodes = nodes <= 2 ? 1 : 2;
  const auto pi = static_cast<std::size_t>(p);
  const double ppn = static_cast<double>(ranks) / nodes;
  const int nsteps = all_reduce ? 2 * (ranks - 1) : ranks - 1;
  const double ll_max = kLLMaxBw[m.amd_cpu ? 1 : 0][by_nodes - 1];
  const double nc = gr.channels;

  // Bus bandwidth: two nodes use the intra-node speed of the graph, more the inter-node one.
  double bw = nodes <= 2 ? gr.bw_intra : gr.bw_inter;
  if (a == Algorithm::nvls_tree) bw = std::min(gr.bw_intra, nodes <= 2 ? gr.bw_inter : gr.bw_inter / 2);
  double bus = nc * bw;
  if (a == Algorithm::ring && p == Protocol::ll) bus = std::min(ll_max, bus * 0.5);
  if (a == Algorithm::ring && p == Protocol::ll128)
    bus = std::min(bus * 0.92, nc * kPerChMaxRingLL128[arch][by_nodes]);
  if (a == Algorithm::tree) {
    bus = std::min(bus * 0.92, nc * kPerChMaxTree[arch][by_nodes]);
    if (p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
    if (p == Protocol::ll128) bus = std::min(bus * 120.0 / 128.0, nc * kPerChMaxTreeLL128[arch][by_nodes]);
    if (m.simple_tree_pattern) bus *= 0.85;
  }
  // Bus to algorithm bandwidth (all_gather / reduce_scatter run the ring only here).
  const double ratio = a == Algorithm::ring ? static_cast<double>(ranks) / nsteps
                       : a == Algorithm::nvls_tree ? 5.0 / 6.0
                                                   : 0.5;
  NcclCost c;
  c.bandwidth_gbps = bus * ratio;

  // Latency, us.
  const double net_lat_us = m.net_latency * 1e6;
  double lat = a == Algorithm::ring ? kRingBaseLat[pi] : a == Algorithm::tree ? kTreeBaseLat[pi] : 0;
  double intra = a == Algorithm::ring ? kNvlinkRingLat[pi]
                 : a == Algorithm::tree ? kNvlinkTreeLat[pi]
                                        : kNvlinkNvlsTreeLat;
  // With one rank per node NCCL charges the tree's network latency to every algorithm.
  double inter = (ppn == 1 || a == Algorithm::tree) ? kNetTreeLat[pi]
                 : a == Algorithm::ring              ? kNetRingLat[pi]
                                                     : kNetNvlsTreeLat;
  inter += net_lat_us;
  if (p == Protocol::simple) inter += net_lat_us;  // the flush
  const int log_nodes = log2_floor(nodes);
  if (a == Algorithm::ring) {
    const double overhead = (m.amd_cpu ? 2.0 : 1.0) * (p == Protocol::simple ? 3 : 1);
    intra = std::max(intra, overhead);
    const int inter_steps = all_reduce ? 2 * (nodes - 1) : nodes - 1;
    lat += (nsteps - inter_steps) * intra + inter_steps * inter;
  } else if (a == Algorithm::tree) {
    lat += 2 * ((ppn - 1) * intra + log_nodes * inter);
  } else {
    lat += intra + 2 * log_nodes * inter;
  }
  c.latency = lat * 1e-6;
  return c;
}

double nccl_tree_correction(Op op, Algorithm a, Protocol p, Bytes size, NcclVersion v) {
  if (op != Op::all_reduce || a != Algorithm::tree) return 1;
  const int l = log2_floor(std::floor(size / 64));
  if (l < 0 || l >= 23) return 1;
  // v2.8.3-1 tuning.cc's LL128 row from 512 KiB (index 13) to 256 MiB.
  constexpr double kLL128From13V2_8[10] = {.5, .6, .6, .7, .7, .8, .9, .9, .92, .92};
  if (v == NcclVersion::v2_8_3 && p == Protocol::ll128 && l >= 13) return kLL128From13V2_8[l - 13];
  return kTreeCorrection[static_cast<std::size_t>(p)][l];
}

std::optional<Seconds> nccl_estimated_time(const NcclCostModel& m, Op op, Algorithm a,
                                           Protocol p, Bytes size, int nodes, int ranks) {
  const auto c = nccl_cost(m, op, a, p, nodes, ranks);
  if (!c) return std::nullopt;
  const double bw = c->bandwidth_gbps * nccl_tree_correction(op, a, p, size, m.version);
  double lat = c->latency;
  // NCCL's "plateau effect of ring" multiplies the latency: 2.27 by 1.9 (Ampere and later 1.4)
  // once every channel has work; 2.8.3 by 1.9 from ranks / 16 x 64 KiB (both across nodes only,
  // which nccl_cost already requires).
  if (a == Algorithm::ring && p == Protocol::simple && op == Op::all_reduce) {
    if (m.version == NcclVersion::v2_8_3) {
      if (size >= ranks / 16.0 * 65536) lat *= 1.9;
    } else if (size / (graph_of(m, a).channels * ranks) >= 64) {
      lat *= m.arch == NcclArch::volta ? 1.9 : 1.4;
    }
  }
  return lat + size / (bw * 1e9);
}

int nccl_runtime_channels(const NcclCostModel& m, int nodes) {
  int c = 2 * m.ring.channels;
  if (m.arch >= NcclArch::hopper && nodes > 1 && m.ring.bw_intra > 45.0 && c < 16) c *= 2;
  return c;
}

Bytes nccl_tree_ll128_chunk(Bytes step_data, Bytes size, int channels, int nodes, int ranks) {
  const double ppn = static_cast<double>(ranks) / nodes;
  const double steps = 1 + log2_floor(nodes) + 0.1 * ppn;
  Bytes chunk = step_data;
  // NCCL compares integer quotients; floor keeps that.
  const auto chunks = [&] { return std::floor(size / (channels * chunk)); };
  while (chunks() < steps * 64 / ppn && chunk > 131072) chunk = std::floor(chunk / 2);
  while (chunks() < steps * 16 / ppn && chunk > 32768) chunk = std::floor(chunk / 2);
  return chunk;
}

namespace {

NcclGraph read_graph(JsonObject o) {
  NcclGraph g;
  g.channels = static_cast<int>(o.positive_integer("channels"));
  g.bw_intra = o.number("bw_intra_gbps");
  g.bw_inter = o.number("bw_inter_gbps");
  if (g.bw_intra <= 0) o.fail("bw_intra_gbps", "expected a bandwidth > 0 (GB/s per channel)");
  if (g.bw_inter <= 0) o.fail("bw_inter_gbps", "expected a bandwidth > 0 (GB/s per channel)");
  o.require_source();
  o.finish();
  return g;
}

}  // namespace

std::vector<int> read_partial_node_ring_nics(JsonObject o) {
  std::vector<int> nics;
  for (long nic : o.index_array("nic_of_entry_accelerator")) {
    if (nic > 63) o.fail("nic_of_entry_accelerator", "expected NIC indices in [0, 63]");
    nics.push_back(static_cast<int>(nic));
  }
  o.require_source();
  o.allow("rule");
  o.finish();
  return nics;
}

const std::vector<int>& partial_node_ring_nic(const CollectiveCalibration& cal) {
  if (cal.nccl_cost_model && !cal.nccl_cost_model->partial_node_ring_nic.empty())
    return cal.nccl_cost_model->partial_node_ring_nic;
  return cal.partial_node_ring_nic;
}

std::vector<int> ring_nics(const CollectiveCalibration& cal) {
  std::vector<int> nics = partial_node_ring_nic(cal);
  std::sort(nics.begin(), nics.end());
  nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
  return nics;
}

NcclCostModel load_nccl_cost_model(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  root.require_kind("nccl_cost_model");
  NcclCostModel m;
  m.file = path;
  m.version = root.choice("nccl_version", {"2.8.3", "2.27.7"}) == "2.8.3" ? NcclVersion::v2_8_3
                                                                          : NcclVersion::v2_27_7;
  root.allow("description");
  const bool v2_8 = m.version == NcclVersion::v2_8_3;
  root.require_source();
  const auto arch = root.choice("arch", {"volta", "ampere", "hopper", "blackwell"});
  m.arch = arch == "volta"    ? NcclArch::volta
           : arch == "ampere" ? NcclArch::ampere
           : arch == "hopper" ? NcclArch::hopper
                              : NcclArch::blackwell;
  if (v2_8 && m.arch != NcclArch::volta && m.arch != NcclArch::ampere)
    root.fail("arch", "NCCL 2.8.3's tables cover volta and ampere only");
  m.amd_cpu = root.choice("cpu_vendor", {"intel", "amd"}) == "amd";
  {
    JsonObject o = root.object("net_latency");
    m.net_latency = o.non_negative_quantity("value", Dimension::seconds);
    o.require_source();
    o.finish();
  }
  m.simple_tree_pattern = root.boolean_or("simple_tree_pattern", false);
  JsonObject graphs = root.object("graphs");
  m.ring = read_graph(graphs.object("ring"));
  if (graphs.has("tree")) m.tree = read_graph(graphs.object("tree"));
  if (graphs.has("nvls")) m.nvls = read_graph(graphs.object("nvls"));
  graphs.finish();
  if (root.has("partial_node_ring_nics"))
    m.partial_node_ring_nic = read_partial_node_ring_nics(root.object("partial_node_ring_nics"));
  root.finish();
  return m;
}

}  // namespace trainsim::collective

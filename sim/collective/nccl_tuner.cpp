#include "collective/nccl_tuner.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "collective/kernel_channels.hpp"
#include "collective/nccl_cost_model.hpp"
#include "collective/tuner_regions.hpp"
#include "core/error.hpp"

namespace trainsim::collective {

std::vector<Algorithm> candidate_algorithms(Op op, const GroupShape& g,
                                            const CollectiveCalibration& cal) {
  const bool one_node = g.node_count() == 1;
  switch (op) {
    case Op::all_reduce: {
      std::vector<Algorithm> out{Algorithm::ring};
      if (!one_node && cal.inter_fabric.allows(Algorithm::tree)) {
        out.push_back(Algorithm::tree);
        // NVLS trees pair every node's NVLS group with the same tree lanes: alike nodes only.
        if (cal.intra_fabric.allows(Algorithm::nvls) && g.even()) out.push_back(Algorithm::nvls_tree);
      }
      if (one_node && cal.intra_fabric.allows(Algorithm::nvls)) out.push_back(Algorithm::nvls);
      return out;
    }
    case Op::reduce_scatter:
    case Op::all_gather:
    case Op::broadcast: return {Algorithm::ring};
    case Op::alltoall:
    case Op::send_recv:
    case Op::ring_exchange: return {Algorithm::pairwise};
  }
  return {};
}

std::vector<Protocol> candidate_protocols(Algorithm a, const GroupShape& g,
                                          const CollectiveCalibration& cal) {
  // NVLS kernels run Simple only; NCCL's point-to-point (alltoall, send/recv) never runs LL128
  // and LL only for messages far below 1 MiB (enqueue.cc), so Simple is kept for it.
  if (a == Algorithm::nvls || a == Algorithm::nvls_tree || a == Algorithm::pairwise)
    return {Protocol::simple};
  std::vector<Protocol> out;
  for (Protocol p : kProtocols)
    if (cal.intra_fabric.allows(p) && (g.node_count() == 1 || cal.inter_fabric.allows(p)))
      out.push_back(p);
  return out;
}

Schedule schedule_for(Algorithm a, Op op, Bytes size, const GroupShape& g, const RankLayout& layout,
                      const std::vector<int>& ring_entry_nic) {
  Schedule s;
  switch (a) {
    case Algorithm::tree: s = tree_schedule(size, g); break;
    case Algorithm::nvls: s = nvls_schedule(size, g); break;
    case Algorithm::nvls_tree: s = nvls_tree_schedule(size, g); break;
    case Algorithm::pairwise: s = pairwise_schedule(op, size, g); break;
    default: s = ring_schedule(op, size, g, layout, ring_entry_nic); break;
  }
  s.size = size;
  return s;
}

namespace {

double intra_efficiency(Algorithm a, const CollectiveCalibration& cal) {
  // A tree's chain inside the node runs over the same NVLink path as a ring.
  if (a == Algorithm::tree) return cal.intra_fabric.efficiency(Algorithm::ring);
  if (a == Algorithm::nvls_tree) return cal.intra_fabric.efficiency(Algorithm::nvls);
  return cal.intra_fabric.efficiency(a);
}

double inter_efficiency(Algorithm a, const CollectiveCalibration& cal) {
  return cal.inter_fabric.efficiency(a == Algorithm::nvls_tree ? Algorithm::tree : a);
}

/// The classic tree's efficiency across nodes where the platform gives NCCL's estimate: the
/// NVLS tree's (the fitted tree efficiency) times NCCL's own ratio of the two algorithms'
/// bandwidths at this shape and size. NCCL's figure already holds the protocol's cost (LL128's
/// 120/128 and per-channel ceilings, LL's 1/3.8, the tree correction factor), so nothing of
/// the protocol is applied on top.
std::optional<double> tree_efficiency_from_nccl(Protocol p, const GroupShape& g, Bytes size,
                                                const CollectiveCalibration& cal) {
  if (!cal.nccl_cost_model) return std::nullopt;
  const auto& m = *cal.nccl_cost_model;
  const auto tree = nccl_cost(m, Op::all_reduce, Algorithm::tree, p, g.node_count(), g.ranks());
  const auto nvls_tree = nccl_cost(m, Op::all_reduce, Algorithm::nvls_tree, Protocol::simple,
                                   g.node_count(), g.ranks());
  if (!tree || !nvls_tree) return std::nullopt;
  return inter_efficiency(Algorithm::nvls_tree, cal) * tree->bandwidth_gbps *
         nccl_tree_correction(Op::all_reduce, Algorithm::tree, p, size, m.version) /
         nvls_tree->bandwidth_gbps;
}

/// Wire bytes of a payload flow.
Bytes wire_bytes(const PayloadFlow& f, const Schedule& s, Protocol p, const GroupShape& g,
                 const CollectiveCalibration& cal) {
  const Algorithm a = s.algorithm;
  if (f.inter_node && a == Algorithm::tree)
    if (const auto eff = tree_efficiency_from_nccl(p, g, s.size, cal)) return f.bytes / *eff;
  const FabricLevel& level = f.inter_node ? cal.inter_fabric : cal.intra_fabric;
  double eff = f.inter_node ? inter_efficiency(a, cal) : intra_efficiency(a, cal);
  if (p == Protocol::ll128) eff *= level.ll128_efficiency;
  return f.bytes / (eff * cal.protocol(p).bandwidth_fraction);
}

/// The most payload per second an inter-node flow may move where the inter-node fabric caps each
/// NCCL channel (FabricLevel::channel_rate_limit); 0 = no cap. The schedule's flows are not
/// NCCL's channels, so the cap is shared out by bytes: a ring's C channels (the communicator's,
/// kernel_channels) carry a node's inter-node ring traffic, which the schedule splits evenly
/// over its k flows leaving each node, so each flow gets C/k channels' rate (at C = k, as for
/// BLOOM's 2-rank data-parallel groups, one flow is one channel). A point-to-point flow between
/// two nodes runs on net_peer channels (NCCL_NCHANNELS_PER_NET_PEER).
BytesPerSecond channel_payload_limit(const PayloadFlow& f, const Schedule& s, const GroupShape& g,
                                     const RankLayout& layout, const CollectiveCalibration& cal) {
  const BytesPerSecond per_channel = cal.inter_fabric.channel_rate_limit;
  if (!f.inter_node || per_channel <= 0) return 0;
  if (s.algorithm == Algorithm::pairwise) return per_channel * cal.channels.net_peer;
  TRAINSIM_CHECK(s.algorithm == Algorithm::ring,
                 "a per-channel rate limit is modelled for ring and point-to-point only");
  std::vector<int> members;
  for (const auto& node : g.nodes) members.insert(members.end(), node.begin(), node.end());
  // Every ring op runs the communicator's ring channels; all_reduce stands for them.
  const int channels = kernel_channels(Op::all_reduce, members, layout, cal, Algorithm::ring);
  TRAINSIM_CHECK(channels > 0, "a per-channel rate limit needs the calibration's channels");
  if (g.even()) return per_channel * channels / g.per_node();
  // Nodes holding different numbers of the group's ranks: the flow's share of the bytes its node
  // sends across.
  Bytes node_out = 0;
  for (const auto& o : s.flows)
    if (o.inter_node && layout.node_of(o.src) == layout.node_of(f.src)) node_out += o.bytes;
  return node_out > 0 ? per_channel * channels * f.bytes / node_out : 0;
}

/// A flow on the wire: its bytes and, where the fabric caps channels, its rate limit in wire
/// bytes. The cap was measured with Simple (busbw, payload); assumption: a channel moves the
/// protocol's bytes (LL's flags included) at that rate, so LL's payload gets half of it and
/// LL128's 120/128, as NCCL's own per-protocol bandwidths rank them.
Flow wire_flow(const PayloadFlow& f, const Schedule& s, Protocol p, const GroupShape& g,
               const RankLayout& layout, const CollectiveCalibration& cal) {
  Flow w{f.src, f.dst, wire_bytes(f, s, p, g, cal), f.src_nic, f.dst_nic};
  const BytesPerSecond payload_limit =
      channel_payload_limit(f, s, g, layout, cal) * cal.protocol(p).bandwidth_fraction;
  if (payload_limit > 0 && f.bytes > 0) w.rate_limit = payload_limit * w.bytes / f.bytes;
  return w;
}

}  // namespace

Prediction predict(const Schedule& s, Protocol p, const GroupShape& g, const RankLayout& layout,
                   const CollectiveCalibration& cal, const FabricRates& rates) {
  Prediction r;
  r.algorithm = s.algorithm;
  r.protocol = p;
  // Port loads: each accelerator's link into its node fabric, each node's uplink.
  std::unordered_map<int, Bytes> rank_out, rank_in, node_out, node_in;
  Seconds capped_time = 0;  // the slowest flow held to its channels' rate limit
  for (const auto& f : s.flows) {
    const Flow w = wire_flow(f, s, p, g, layout, cal);
    const Bytes b = w.bytes;
    if (w.rate_limit > 0) capped_time = std::max(capped_time, b / w.rate_limit);
    if (f.inter_node) {
      node_out[layout.node_of(f.src)] += b;
      node_in[layout.node_of(f.dst)] += b;
    } else {
      rank_out[f.src] += b;
      rank_in[f.dst] += b;
    }
  }
  Bytes intra_max = 0, inter_max = 0;
  for (const auto* m : {&rank_out, &rank_in})
    for (const auto& [k, b] : *m) intra_max = std::max(intra_max, b);
  for (const auto* m : {&node_out, &node_in})
    for (const auto& [k, b] : *m) inter_max = std::max(inter_max, b);
  const Seconds intra_time = intra_max > 0 ? intra_max / rates.intra_link : 0;
  const Seconds inter_time =
      std::max(inter_max > 0 ? inter_max / rates.node_uplink : 0, capped_time);
  r.bandwidth_time = std::max(intra_time, inter_time);

  const auto pi = static_cast<std::size_t>(p);
  r.latency = cal.protocol(p).base_latency +
              s.intra_steps * (cal.intra_fabric.step_latency[pi] + rates.intra_hop) +
              s.inter_steps * (cal.inter_fabric.step_latency[pi] + rates.inter_hop);
  if (s.algorithm == Algorithm::nvls || s.algorithm == Algorithm::nvls_tree)
    r.latency += cal.intra_fabric.nvls_latency + rates.intra_hop;
  if (s.peer_rounds > 0) {
    const bool multi_node = g.node_count() > 1;
    const FabricLevel& level = multi_node ? cal.inter_fabric : cal.intra_fabric;
    r.latency += s.peer_rounds * level.step_latency[pi] +
                 (multi_node ? rates.inter_hop : rates.intra_hop);
  }

  if (s.pipeline_depth > 1 && s.pipeline_unit > 0) {
    const bool multi_node = g.node_count() > 1;
    Bytes chunk = cal.protocol(p).chunk;
    const bool tree = s.algorithm == Algorithm::tree || s.algorithm == Algorithm::nvls_tree;
    const FabricLevel& level = multi_node ? cal.inter_fabric : cal.intra_fabric;
    if (chunk <= 0)
      chunk = p == Protocol::ll128 && level.ll128_chunk > 0 ? level.ll128_chunk
              : tree                                          ? level.tree_chunk
                                                              : level.simple_chunk;
    // NCCL shrinks the tree's LL128 chunk for mid-size calls so every channel gets enough
    // of them; one tree streams on half the channels.
    if (s.algorithm == Algorithm::tree && p == Protocol::ll128 && multi_node &&
        cal.nccl_cost_model) {
      const int channels = nccl_runtime_channels(*cal.nccl_cost_model, g.node_count());
      chunk = nccl_tree_ll128_chunk(level.ll128_chunk, s.size, channels, g.node_count(),
                                    g.ranks()) *
              channels / 2;
    }
    // The first chunk crosses each hop at that hop's level's rate (a stage's bytes over its
    // busiest port); the slowest stage is the streaming itself, not fill.
    const double per_unit = std::min(s.pipeline_unit, chunk) / s.pipeline_unit / s.units_per_lane;
    const int intra_depth = s.pipeline_depth - s.inter_depth;
    r.fill = per_unit * (intra_depth * intra_time + s.inter_depth * inter_time -
                         std::max(intra_depth > 0 ? intra_time : 0,
                                  s.inter_depth > 0 ? inter_time : 0));
  }
  return r;
}

CollectivePlan plan_nccl(Op op, Bytes size, const std::vector<int>& group,
                         const RankLayout& layout, const CollectiveCalibration& cal,
                         const FabricRates& rates, const TunerOverride& force) {
  CollectivePlan plan;
  if (group.size() < 2) return plan;
  const GroupShape g = shape_of(group, layout);
  auto algorithms = candidate_algorithms(op, g, cal);
  if (force.algorithm &&
      std::find(algorithms.begin(), algorithms.end(), *force.algorithm) != algorithms.end())
    algorithms = {*force.algorithm};

  const auto protocols_for = [&](Algorithm a) {
    auto protocols = candidate_protocols(a, g, cal);
    if (force.protocol &&
        std::find(protocols.begin(), protocols.end(), *force.protocol) != protocols.end())
      protocols = {*force.protocol};
    return protocols;
  };
  // A tuner plugin's region decides first (NCCL asks it before using its own estimate); it
  // only picks among what NCCL could run, overrides included.
  std::optional<Protocol> chosen_protocol;
  if (cal.tuner_regions) {
    const auto usable = [&](Algorithm a, Protocol p) {
      if (std::find(algorithms.begin(), algorithms.end(), a) == algorithms.end()) return false;
      const auto ps = protocols_for(a);
      return std::find(ps.begin(), ps.end(), p) != ps.end();
    };
    if (const auto pick = region_choice(*cal.tuner_regions, op, size, g.node_count(), g.ranks(),
                                        usable)) {
      algorithms = {pick->first};
      chosen_protocol = pick->second;
    }
  }
  // Then NCCL's own estimate, where the platform gives its inputs (across nodes only: inside
  // one node the fitted model chooses); the simulated time stays the model's.
  if (!chosen_protocol && cal.nccl_cost_model && g.node_count() > 1) {
    std::optional<std::pair<Algorithm, Protocol>> pick;
    Seconds best_time = 0;
    bool every_pair_estimated = true;
    for (Algorithm a : algorithms)
      for (Protocol p : protocols_for(a)) {
        const auto t = nccl_estimated_time(*cal.nccl_cost_model, op, a, p, size, g.node_count(),
                                           g.ranks());
        if (!t) every_pair_estimated = false;
        else if (!pick || *t < best_time) {
          pick = std::make_pair(a, p);
          best_time = *t;
        }
      }
    if (pick && every_pair_estimated) {
      algorithms = {pick->first};
      chosen_protocol = pick->second;
    }
  }

  bool found = false;
  Prediction best;
  Schedule best_schedule;
  const std::vector<int>& ring_entry_nic = partial_node_ring_nic(cal);
  for (Algorithm a : algorithms) {
    Schedule s = schedule_for(a, op, size, g, layout, ring_entry_nic);
    auto protocols = protocols_for(a);
    if (chosen_protocol) protocols = {*chosen_protocol};
    for (Protocol p : protocols) {
      const Prediction pr = predict(s, p, g, layout, cal, rates);
      if (!found || pr.total() < best.total()) {
        found = true;
        best = pr;
        best_schedule = s;
      }
    }
  }
  TRAINSIM_CHECK(found, std::string("no algorithm can run ") + op_name(op));

  Phase ph;
  ph.name = std::string(op_name(op)) + " " + algorithm_name(best.algorithm) + "/" +
            protocol_name(best.protocol);
  for (const auto& f : best_schedule.flows) {
    ph.flows.push_back(wire_flow(f, best_schedule, best.protocol, g, layout, cal));
    ph.inter_node = ph.inter_node || f.inter_node;
  }
  ph.fixed_latency = best.latency + best.fill;
  plan.phases.push_back(std::move(ph));
  plan.algorithm = algorithm_name(best.algorithm);
  plan.protocol = protocol_name(best.protocol);
  plan.predicted = best.total();
  return plan;
}

}  // namespace trainsim::collective

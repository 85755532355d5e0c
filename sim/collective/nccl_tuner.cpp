#include "collective/nccl_tuner.hpp"

#include <algorithm>
#include <unordered_map>

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
        if (cal.intra_fabric.allows(Algorithm::nvls)) out.push_back(Algorithm::nvls_tree);
      }
      if (one_node && cal.intra_fabric.allows(Algorithm::nvls)) out.push_back(Algorithm::nvls);
      return out;
    }
    case Op::reduce_scatter:
    case Op::all_gather:
    case Op::broadcast: return {Algorithm::ring};
    case Op::alltoall:
    case Op::send_recv: return {Algorithm::pairwise};
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

Schedule schedule_for(Algorithm a, Op op, Bytes size, const GroupShape& g) {
  switch (a) {
    case Algorithm::tree: return tree_schedule(size, g);
    case Algorithm::nvls: return nvls_schedule(size, g);
    case Algorithm::nvls_tree: return nvls_tree_schedule(size, g);
    case Algorithm::pairwise: return pairwise_schedule(op, size, g);
    default: return ring_schedule(op, size, g);
  }
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

/// Wire bytes of a payload flow.
Bytes wire_bytes(const PayloadFlow& f, Algorithm a, Protocol p, const CollectiveCalibration& cal) {
  const FabricLevel& level = f.inter_node ? cal.inter_fabric : cal.intra_fabric;
  double eff = f.inter_node ? inter_efficiency(a, cal) : intra_efficiency(a, cal);
  if (p == Protocol::ll128) eff *= level.ll128_efficiency;
  return f.bytes / (eff * cal.protocol(p).bandwidth_fraction);
}

}  // namespace

Prediction predict(const Schedule& s, Protocol p, const GroupShape& g, const RankLayout& layout,
                   const CollectiveCalibration& cal, const FabricRates& rates) {
  Prediction r;
  r.algorithm = s.algorithm;
  r.protocol = p;
  // Port loads: each accelerator's link into its node fabric, each node's uplink.
  std::unordered_map<int, Bytes> rank_out, rank_in, node_out, node_in;
  for (const auto& f : s.flows) {
    const Bytes b = wire_bytes(f, s.algorithm, p, cal);
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
  const Seconds inter_time = inter_max > 0 ? inter_max / rates.node_uplink : 0;
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
  std::optional<Protocol> region_protocol;
  if (cal.tuner_regions) {
    const auto usable = [&](Algorithm a, Protocol p) {
      if (std::find(algorithms.begin(), algorithms.end(), a) == algorithms.end()) return false;
      const auto ps = protocols_for(a);
      return std::find(ps.begin(), ps.end(), p) != ps.end();
    };
    if (const auto pick = region_choice(*cal.tuner_regions, op, size, g.node_count(), g.ranks(),
                                        usable)) {
      algorithms = {pick->first};
      region_protocol = pick->second;
    }
  }

  bool found = false;
  Prediction best;
  Schedule best_schedule;
  for (Algorithm a : algorithms) {
    Schedule s = schedule_for(a, op, size, g);
    auto protocols = protocols_for(a);
    if (region_protocol) protocols = {*region_protocol};
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
    ph.flows.push_back({f.src, f.dst, wire_bytes(f, best.algorithm, best.protocol, cal)});
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

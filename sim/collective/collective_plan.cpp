#include "collective/collective_plan.hpp"

#include <map>

#include "collective/kernel_channels.hpp"
#include "collective/nccl_tuner.hpp"
#include "core/error.hpp"

namespace trainsim::collective {

const char* op_name(Op op) {
  switch (op) {
    case Op::all_reduce: return "all_reduce";
    case Op::reduce_scatter: return "reduce_scatter";
    case Op::all_gather: return "all_gather";
    case Op::broadcast: return "broadcast";
    case Op::alltoall: return "alltoall";
    case Op::send_recv: return "send_recv";
    case Op::ring_exchange: return "ring_exchange";
  }
  return "?";
}

std::optional<Op> parse_op(const std::string& name) {
  for (Op op : {Op::all_reduce, Op::reduce_scatter, Op::all_gather, Op::broadcast, Op::alltoall,
                Op::send_recv, Op::ring_exchange})
    if (name == op_name(op)) return op;
  return std::nullopt;
}

Phase ring_phase(Op op, Bytes size, const std::vector<int>& members, const LevelCalibration& cal) {
  Phase p;
  const auto n = static_cast<double>(members.size());
  p.name = std::string(op_name(op)) + " ring x" + std::to_string(members.size());
  p.step_latency = cal.step_latency;
  if (members.size() < 2) return p;
  // Ring all-reduce = reduce-scatter + all-gather: 2(n-1) steps of S/n each per rank;
  // reduce-scatter or all-gather alone: (n-1) steps of S/n.
  const bool ar = op == Op::all_reduce;
  p.steps = static_cast<int>(ar ? 2 * (members.size() - 1) : members.size() - 1);
  const Bytes per_rank = static_cast<double>(p.steps) * size / n / cal.bandwidth_efficiency;
  for (std::size_t i = 0; i < members.size(); ++i)
    p.flows.push_back({members[i], members[(i + 1) % members.size()], per_rank});
  return p;
}

Phase direct_phase(Op op, Bytes size, const std::vector<int>& members,
                   const LevelCalibration& cal) {
  // Every rank exchanges its 1/n share with every peer at once, over all the links of a full
  // mesh or switch: one step for reduce-scatter or all-gather, two for all-reduce.
  Phase p;
  const auto n = static_cast<double>(members.size());
  p.name = std::string(op_name(op)) + " direct x" + std::to_string(members.size());
  p.step_latency = cal.step_latency;
  if (members.size() < 2) return p;
  p.steps = op == Op::all_reduce ? 2 : 1;
  const Bytes per_pair = static_cast<double>(p.steps) * size / n / cal.bandwidth_efficiency;
  for (int src : members)
    for (int dst : members)
      if (src != dst) p.flows.push_back({src, dst, per_pair});
  return p;
}

namespace {

Phase level_phase(Op op, Bytes size, const std::vector<int>& members,
                  const LevelCalibration& cal) {
  return cal.algorithm == Algorithm::ring ? ring_phase(op, size, members, cal)
                                          : direct_phase(op, size, members, cal);
}

/// Concatenates phases of independent sub-groups that run at the same time.
Phase merge(std::vector<Phase> parts, const std::string& name, bool inter) {
  Phase m;
  m.name = name;
  m.inter_node = inter;
  for (auto& p : parts) {
    m.steps = std::max(m.steps, p.steps);
    m.step_latency = std::max(m.step_latency, p.step_latency);
    m.flows.insert(m.flows.end(), p.flows.begin(), p.flows.end());
  }
  return m;
}

/// Schema 1: the calibration's fixed algorithm per level, composed hierarchically across nodes.
CollectivePlan plan_hierarchical(Op op, Bytes size, const std::vector<int>& group,
                                 const RankLayout& layout, const CollectiveCalibration& cal) {
  CollectivePlan plan;
  plan.algorithm = std::string("hierarchical(") + algorithm_name(cal.intra_node.algorithm) + "+" +
                   algorithm_name(cal.inter_node.algorithm) + ")";
  if (group.size() < 2) return plan;
  // Members by node, in group order.
  std::map<int, std::vector<int>> by_node;
  for (int r : group) by_node[layout.node_of(r)].push_back(r);
  const std::size_t per_node = by_node.begin()->second.size();
  for (const auto& [node, members] : by_node)
    if (members.size() != per_node)
      throw ConfigError(cal.file, "/schema_version",
                        "schema-1 calibrations plan groups with the same number of ranks on every node; this "
                        "layout puts " + std::to_string(per_node) + " of a group's ranks on one node and " +
                        std::to_string(members.size()) + " on another (choose degrees whose groups fill nodes alike)");

  if (by_node.size() == 1) {
    Phase p = level_phase(op, size, group, cal.intra_node);
    plan.phases.push_back(std::move(p));
    return plan;
  }
  if (per_node == 1) {
    Phase p = level_phase(op, size, group, cal.inter_node);
    p.inter_node = true;
    plan.phases.push_back(std::move(p));
    return plan;
  }

  const double k = static_cast<double>(per_node);
  // Sub-groups: the ranks of each node, and the ranks with the same position on every node.
  std::vector<std::vector<int>> intra, inter(per_node);
  for (const auto& [node, members] : by_node) {
    intra.push_back(members);
    for (std::size_t j = 0; j < members.size(); ++j) inter[j].push_back(members[j]);
  }
  auto intra_phase = [&](Op o, Bytes s) {
    std::vector<Phase> parts;
    for (const auto& m : intra) parts.push_back(level_phase(o, s, m, cal.intra_node));
    return merge(std::move(parts), std::string("intra ") + op_name(o), false);
  };
  auto inter_phase = [&](Op o, Bytes s) {
    std::vector<Phase> parts;
    for (const auto& m : inter) parts.push_back(level_phase(o, s, m, cal.inter_node));
    return merge(std::move(parts), std::string("inter ") + op_name(o), true);
  };

  switch (op) {
    case Op::all_reduce:
      plan.phases.push_back(intra_phase(Op::reduce_scatter, size));
      plan.phases.push_back(inter_phase(Op::all_reduce, size / k));
      plan.phases.push_back(intra_phase(Op::all_gather, size));
      break;
    case Op::reduce_scatter:
      plan.phases.push_back(intra_phase(Op::reduce_scatter, size));
      plan.phases.push_back(inter_phase(Op::reduce_scatter, size / k));
      break;
    case Op::all_gather:
      plan.phases.push_back(inter_phase(Op::all_gather, size / k));
      plan.phases.push_back(intra_phase(Op::all_gather, size));
      break;
    default: break;  // rejected by plan_collective
  }
  return plan;
}

}  // namespace

CollectivePlan plan_collective(Op op, Bytes size, const std::vector<int>& group,
                               const RankLayout& layout, const CollectiveCalibration& cal,
                               const FabricRates& rates, const TunerOverride& force) {
  if (cal.schema_version >= 2) {
    CollectivePlan plan = plan_nccl(op, size, group, layout, cal, rates, force);
    plan.channels = kernel_channels(op, group, layout, cal,
                                    parse_algorithm(plan.algorithm).value_or(Algorithm::ring));
    return plan;
  }
  if (op != Op::all_reduce && op != Op::reduce_scatter && op != Op::all_gather)
    throw ConfigError(cal.file, "/schema_version",
                      std::string("schema-1 calibrations plan all_reduce, reduce_scatter and "
                                  "all_gather only, not ") + op_name(op));
  return plan_hierarchical(op, size, group, layout, cal);
}

CollectivePlan repeated(CollectivePlan plan, int times) {
  TRAINSIM_CHECK(times >= 1, "a collective is repeated at least once");
  if (times == 1) return plan;
  const double n = times;
  for (auto& ph : plan.phases) {
    for (auto& f : ph.flows) f.bytes *= n;
    ph.steps *= times;  // each repeat pays every step's latency and route latency again
    ph.fixed_latency *= n;
  }
  plan.predicted *= n;
  return plan;
}

}  // namespace trainsim::collective

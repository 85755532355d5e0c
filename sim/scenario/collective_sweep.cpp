#include "scenario/collective_sweep.hpp"

#include <numeric>

#include "core/error.hpp"
#include "collective/nccl_cost_model.hpp"
#include "engine/fabric_rates.hpp"
#include "engine/platform_builder.hpp"
#include "engine/program_executor.hpp"
#include "scenario/child_process.hpp"

namespace trainsim::scenario {

namespace {

using program::TaskKind;

std::vector<int> sweep_group(collective::Op op, int nodes, int per_node) {
  if (op == collective::Op::send_recv) {
    TRAINSIM_CHECK(nodes * per_node >= 2, "send_recv needs two ranks");
    return {0, nodes > 1 ? per_node : 1};
  }
  std::vector<int> g(static_cast<std::size_t>(nodes * per_node));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

/// Every member of the group runs the sweep's collectives in order on one stream.
program::Program sweep_program(const SweepRequest& req, const std::vector<int>& group, int ranks) {
  program::Program p;
  for (int r = 0; r < ranks; ++r) {
    program::RankProgram rp;
    rp.rank = r;
    rp.streams.push_back({"comm", program::StreamKind::communication, {}});
    p.ranks.push_back(std::move(rp));
  }
  for (std::size_t i = 0; i < req.sizes.size(); ++i) {
    program::CollectiveCall c;
    c.name = std::string(collective::op_name(req.op)) + " " + std::to_string(i);
    c.op = req.op;
    c.size = req.sizes[i];
    c.group = group;
    p.collectives.push_back(c);
    for (int r : group)
      p.ranks[r].streams[0].tasks.push_back(
          {c.name, TaskKind::collective, program::Phase::other, 0, static_cast<int>(i), {}});
  }
  program::validate(p);
  return p;
}

nlohmann::json simulate(const topology::Topology& topo,
                        const collective::CollectiveCalibration& cal, const SweepRequest& req) {
  const auto simgrid_engine = engine::make_exact_timing_engine();
  const auto platform = engine::build_platform(topo, req.nodes, 0, collective::ring_nics(cal));
  const int ranks = req.nodes * platform.ranks_per_node;
  const auto group = sweep_group(req.op, req.nodes, platform.ranks_per_node);
  const auto prog = sweep_program(req, group, ranks);
  const collective::RankLayout layout{platform.ranks_per_node};
  const auto rates = engine::fabric_rates(topo);
  std::vector<collective::CollectivePlan> plans;
  const auto result = engine::execute_program(
      prog, platform,
      [&](const program::CollectiveCall& c) {
        plans.push_back(collective::plan_collective(c.op, c.size, c.group, layout, cal, rates,
                                                    req.force));
        return plans.back();
      },
      engine::ExecuteOptions{true, true});
  if (!result.completed) throw std::runtime_error("the collective sweep deadlocked");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& rec : result.records) {
    if (rec.rank != group.front()) continue;
    const auto& plan = plans[static_cast<std::size_t>(rec.index)];
    out.push_back({{"size", req.sizes[static_cast<std::size_t>(rec.index)]},
                   {"ranks", static_cast<int>(group.size())},
                   {"time", rec.end - rec.start},
                   {"predicted", plan.predicted},
                   {"algorithm", plan.algorithm},
                   {"protocol", plan.protocol}});
  }
  return out;
}

}  // namespace

std::vector<SweepPoint> run_sweep(const topology::Topology& topo,
                                  const collective::CollectiveCalibration& cal,
                                  const SweepRequest& req) {
  const auto j = run_in_child([&] { return simulate(topo, cal, req); },
                              std::string(collective::op_name(req.op)) + " sweep on " +
                                  std::to_string(req.nodes) + " nodes");
  std::vector<SweepPoint> points;
  for (const auto& p : j)
    points.push_back({p.at("size").get<double>(), p.at("ranks").get<int>(),
                      p.at("time").get<double>(), p.at("predicted").get<double>(),
                      p.at("algorithm").get<std::string>(), p.at("protocol").get<std::string>()});
  return points;
}

}  // namespace trainsim::scenario

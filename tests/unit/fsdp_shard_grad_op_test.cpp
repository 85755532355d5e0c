// FSDP1's SHARD_GRAD_OP in the sharded schedule (plan::FsdpShardingStrategy), checked as plain
// data: each unit is gathered once per micro-batch, kept from its forward to its backward, and
// every unit's parameters are live together between the two.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "support/fixtures.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::allocated_bytes;
using testing_support::find_task;
using testing_support::index_of;
using testing_support::released_bytes;

constexpr int kCompute = 0, kGather = 1;

/// PyTorch FSDP1 over 4 ranks, `layers` layers, two micro-batches per step.
ScheduleInputs fsdp1(long layers, plan::FsdpShardingStrategy strategy) {
  ScheduleInputs in;
  in.model = {"tiny", layers, 64, 4, 256, 100, 16, false};
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  in.plan.fsdp_sharding_strategy = strategy;
  in.plan.shard_degree = 4;
  in.plan.micro_batch = 2;
  in.plan.accumulation = 2;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10, 300}};
  return in;
}

constexpr auto kFull = plan::FsdpShardingStrategy::full_shard;
constexpr auto kGradOp = plan::FsdpShardingStrategy::shard_grad_op;

std::vector<std::string> gathers_of(const Stream& s, const std::string& micro_batch) {
  std::vector<std::string> names;
  for (const auto& t : s.tasks) {
    const std::string n = t.name.str();
    if (n.rfind("all-gather ", 0) == 0 && n.size() >= micro_batch.size() &&
        n.compare(n.size() - micro_batch.size(), micro_batch.size(), micro_batch) == 0)
      names.push_back(n);
  }
  return names;
}

/// The gathered-parameter bytes certainly allocated and not yet freed when task (stream, index)
/// of `r` starts: what its ancestors (earlier tasks of a stream and dependencies, transitively)
/// allocated on the gather stream minus what they gave back to that stream's pool. Plain data,
/// no engine: a lower bound on the timeline any execution of the program follows.
double gathered_live_at(const RankProgram& r, int stream, int index) {
  std::set<std::pair<int, int>> seen;
  std::vector<std::pair<int, int>> todo;
  auto visit = [&](int s, int i) {
    if (s >= 0 && i >= 0 && seen.insert({s, i}).second) todo.push_back({s, i});
  };
  const Task& start =
      r.streams[static_cast<std::size_t>(stream)].tasks[static_cast<std::size_t>(index)];
  visit(stream, index - 1);
  for (const auto& d : start.deps) visit(d.stream, d.index);
  double live = 0;
  while (!todo.empty()) {
    const auto [s, i] = todo.back();
    todo.pop_back();
    const Task& t = r.streams[static_cast<std::size_t>(s)].tasks[static_cast<std::size_t>(i)];
    if (s == kGather && t.kind == TaskKind::collective) live += t.alloc;
    if (t.borrowed_pool == kGather) live -= t.release_borrowed;
    visit(s, i - 1);
    for (const auto& d : t.deps) visit(d.stream, d.index);
  }
  return live;
}

TEST(FsdpShardGradOp, GathersEachUnitOncePerMicroBatch) {
  const Program full = build_program(fsdp1(4, kFull));
  const Program grad_op = build_program(fsdp1(4, kGradOp));
  validate(grad_op);
  // FULL_SHARD: the root and 4 layers in forward, the 4 layers again in backward (9 per
  // micro-batch).
  EXPECT_EQ(gathers_of(full.ranks[0].streams[kGather], "mb0").size(), 9u);
  // SHARD_GRAD_OP: the forward's 5 only, in every micro-batch (Composer reduce-scatters each
  // one, so each post-backward hook frees its unit and the next forward gathers it again).
  const std::vector<std::string> forward = {"all-gather embedding mb1", "all-gather layer 0 mb1",
                                            "all-gather layer 1 mb1", "all-gather layer 2 mb1",
                                            "all-gather layer 3 mb1"};
  EXPECT_EQ(gathers_of(grad_op.ranks[0].streams[kGather], "mb1"), forward);
  EXPECT_EQ(gathers_of(grad_op.ranks[0].streams[kGather], "mb0").size(), 5u);
  // The gradients are reduce-scattered as under FULL_SHARD: one per unit and micro-batch.
  int reduce_scatters = 0;
  for (const auto& t : grad_op.ranks[0].streams[kGather].tasks)
    reduce_scatters += t.name.str().rfind("reduce-scatter", 0) == 0;
  EXPECT_EQ(reduce_scatters, 2 * 5);
}

TEST(FsdpShardGradOp, NoUnitIsFreedAfterItsForwardAndEachBackwardFreesItsOwn) {
  const ScheduleInputs in = fsdp1(4, kGradOp);
  const Program prog = build_program(in);
  const auto& comp = prog.ranks[1].streams[kCompute];
  const double layer_bytes = model::parameters_per_layer(in.model) * in.plan.parameter_wire_bytes;
  for (const auto& t : comp.tasks) {
    if (t.phase == Phase::forward) {
      EXPECT_EQ(t.release_borrowed, 0) << t.name.str();
    }
  }
  for (int l = 0; l < 4; ++l) {
    const Task& b = find_task(comp, "backward layer " + std::to_string(l) + " mb0");
    EXPECT_DOUBLE_EQ(b.release_borrowed, layer_bytes);
    EXPECT_EQ(b.borrowed_pool, kGather);
    // Nothing to wait for on the gather stream: the parameters are still there.
    for (const auto& d : b.deps) EXPECT_NE(d.stream, kGather) << b.name.str();
  }
  // Under FULL_SHARD the same forward frees the layer.
  const Program full = build_program(fsdp1(4, kFull));
  EXPECT_DOUBLE_EQ(find_task(full.ranks[1].streams[kCompute], "forward layer 2 mb0").release_borrowed,
                   layer_bytes);
}

TEST(FsdpShardGradOp, ForwardGathersWaitForNoRateLimiterSlot) {
  // limit_all_gathers' queue holds free events only of units that were freed: under
  // SHARD_GRAD_OP no forward frees one, so the gathers wait only for the stream's order.
  const Program grad_op = build_program(fsdp1(4, kGradOp));
  const Program full = build_program(fsdp1(4, kFull));
  const Task& g = find_task(grad_op.ranks[0].streams[kGather], "all-gather layer 3 mb0");
  for (const auto& d : g.deps) EXPECT_NE(d.stream, kCompute);
  EXPECT_FALSE(g.host_sync);
  const auto& full_comp = full.ranks[0].streams[kCompute];
  const Task& limited = find_task(full.ranks[0].streams[kGather], "all-gather layer 3 mb0");
  EXPECT_TRUE(limited.host_sync);
  EXPECT_NE(std::find(limited.deps.begin(), limited.deps.end(),
                      TaskRef{kCompute, index_of(full_comp, "forward layer 1 mb0")}),
            limited.deps.end());
}

TEST(FsdpShardGradOp, EveryUnitIsGatheredWhenTheBackwardStartsAndThePeakGrowsWithTheLayers) {
  for (long layers : {2L, 4L}) {
    const ScheduleInputs in = fsdp1(layers, kGradOp);
    const double layer = model::parameters_per_layer(in.model);
    const double root = model::embedding_parameters(in.model) + model::head_parameters(in.model);
    const double wire = in.plan.parameter_wire_bytes;
    for (auto strategy : {kGradOp, kFull}) {
      const Program prog = build_program(fsdp1(layers, strategy));
      const auto& r = prog.ranks[0];
      const auto& comp = r.streams[kCompute];
      const double at_backward = gathered_live_at(r, kCompute, index_of(comp, "backward head mb0"));
      // SHARD_GRAD_OP: (layers x layer + root) x 2 B; FULL_SHARD: the root alone (every layer
      // freed by its forward, the first backward gather not issued before the head's backward).
      const double expected =
          strategy == kGradOp ? (static_cast<double>(layers) * layer + root) * wire : root * wire;
      EXPECT_DOUBLE_EQ(at_backward, expected) << layers << " layers";
      // The embedding's backward, last, starts with the root alone: each layer's backward freed its
      // own.
      EXPECT_DOUBLE_EQ(gathered_live_at(r, kCompute, index_of(comp, "backward embedding mb0")),
                       root * wire);
      // Whatever was allocated is released by the end of the step.
      EXPECT_DOUBLE_EQ(allocated_bytes(r), released_bytes(r));
    }
  }
}

TEST(FsdpShardGradOp, PrefetchingChangesNothingOnTheStreamWithoutBackwardGathers) {
  ScheduleInputs in = fsdp1(4, kGradOp);
  const Program plain = build_program(in);
  in.plan.fsdp_backward_prefetch = plan::FsdpBackwardPrefetch::backward_pre;
  in.plan.fsdp_forward_prefetch = true;
  const Program prefetching = build_program(in);
  validate(prefetching);
  std::vector<std::string> a, b;
  for (const auto& t : plain.ranks[0].streams[kGather].tasks) a.push_back(t.name.str());
  for (const auto& t : prefetching.ranks[0].streams[kGather].tasks) b.push_back(t.name.str());
  EXPECT_EQ(a, b);
}

TEST(FsdpShardGradOp,
     WithHybridShardingGathersWithinTheShardGroupOnceAndStillAllReducesAcrossReplicas) {
  // _HYBRID_SHARD_ZERO2: shard groups {0,1} and {2,3}; the gradients' shard is all-reduced across
  // the replicas on a stream of its own, as under HYBRID_SHARD.
  ScheduleInputs in = fsdp1(4, kGradOp);
  in.plan.shard_degree = 2;
  in.layout = plan::layout_of(in.plan, 4, 4);
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];
  EXPECT_EQ(gathers_of(r.streams[kGather], "mb0").size(), 5u);
  const Task& g = find_task(r.streams[kGather], "all-gather layer 2 mb0");
  EXPECT_EQ(prog.collectives[static_cast<std::size_t>(g.collective)].group,
            (std::vector<int>{0, 1}));
  int replica_all_reduces = 0;
  for (const auto& t : r.streams[2].tasks)
    replica_all_reduces += t.name.str().rfind("replica all-reduce", 0) == 0;
  EXPECT_EQ(replica_all_reduces, 2 * 5);  // the root and 4 layers, two micro-batches
}

}  // namespace
}  // namespace trainsim::program

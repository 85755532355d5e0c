// FSDP / ZeRO-3 programs (program/sharded_schedule.hpp), checked as plain data: which tasks each
// rank runs, on which stream, what each waits for, and which ranks meet in each collective.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/compute_cost.hpp"
#include "model/checkpointing.hpp"
#include "model/composer_metrics.hpp"
#include "model/device_profile.hpp"
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
using testing_support::waits_for;

ScheduleInputs inputs(long world, long shard, long tp, long accumulation = 1) {
  ScheduleInputs in;
  in.model = {"tiny", 2, 64, 4, 256, 100, 16, false};
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.shard_degree = shard;
  in.plan.tp = tp;
  in.plan.micro_batch = 2;
  in.plan.accumulation = accumulation;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.layout = plan::layout_of(in.plan, world, 4);
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10}};
  return in;
}

TEST(ShardedSchedule, FullShardTaskCountsAndValidity) {
  const Program prog = build_program(inputs(4, 4, 1));
  validate(prog);
  ASSERT_EQ(prog.ranks.size(), 4u);
  const auto& r = prog.ranks[0];
  // Units: embedding, 2 layers, head = 4. Compute: 4 forwards + 4 backwards + optimizer.
  EXPECT_EQ(r.streams[0].tasks.size(), 9u);
  EXPECT_EQ(r.streams[1].tasks.size(), 8u);  // a gather per unit in forward and in backward
  EXPECT_EQ(r.streams[2].tasks.size(), 4u);  // a reduce-scatter per unit
  EXPECT_TRUE(r.streams[3].tasks.empty());   // no tensor parallelism
  EXPECT_EQ(prog.samples_per_step, 2 * 4);   // micro-batch x DP
}

TEST(ShardedSchedule, ForwardGathersRunAtMostTwoUnitsAhead) {
  const Program prog = build_program(inputs(4, 4, 1));
  const auto& r = prog.ranks[1];
  const auto& comp = r.streams[0];
  const auto& gather = r.streams[1];
  // Gathering layer 1 (the third unit) waits for the embedding's forward to finish.
  const Task& g = find_task(gather, "all-gather layer 1 mb0");
  EXPECT_TRUE(waits_for(g, 0, index_of(comp, "forward embedding mb0")));
  // Computing a unit waits for its own gather and for the unit before it.
  const Task& f = find_task(comp, "forward layer 1 mb0");
  EXPECT_TRUE(waits_for(f, 1, index_of(gather, "all-gather layer 1 mb0")));
  EXPECT_TRUE(waits_for(f, 0, index_of(comp, "forward layer 0 mb0")));
}

TEST(ShardedSchedule, BackwardReduceScattersOverlapTheNextUnit) {
  const Program prog = build_program(inputs(4, 4, 1));
  const auto& r = prog.ranks[2];
  const auto& comp = r.streams[0];
  const auto& reduce = r.streams[2];
  const Task& rs = find_task(reduce, "reduce-scatter layer 1 mb0");
  EXPECT_TRUE(waits_for(rs, 0, index_of(comp, "backward layer 1 mb0")));
  // The next unit's backward does not wait for that reduce-scatter: they overlap.
  const Task& next = find_task(comp, "backward layer 0 mb0");
  for (const auto& d : next.deps) EXPECT_NE(d.stream, 2);
  // The optimizer waits for every reduction.
  const Task& step = comp.tasks.back();
  EXPECT_EQ(step.phase, Phase::optimizer);
  EXPECT_EQ(step.deps.size(), reduce.tasks.size());
}

TEST(ShardedSchedule, TheOptimizerStepRunsClippingAndTheOptimizersPassesOverTheShard) {
  const ScheduleInputs fused_in = inputs(4, 4, 1);
  ScheduleInputs foreach_in = fused_in;
  foreach_in.plan.optimizer_implementation = plan::OptimizerImplementation::torch_foreach;
  foreach_in.plan.clip_grad_norm = true;
  const Task fused = build_program(fused_in).ranks[0].streams[0].tasks.back();
  const Task foreach_step = build_program(foreach_in).ranks[0].streams[0].tasks.back();
  ASSERT_EQ(fused.phase, Phase::optimizer);
  ASSERT_EQ(foreach_step.phase, Phase::optimizer);
  EXPECT_EQ(fused.kernels, 1);
  EXPECT_EQ(foreach_step.kernels, 2 + 8);  // clipping's norm and scale, AdamW's eight passes
  // The same shard of parameters either way: the bytes per parameter set the ratio, (12 + 80) / 30
  // less what the launches add.
  EXPECT_GT(foreach_step.duration, 2.5 * fused.duration);
  // Clipping alone adds its two passes to the fused step.
  ScheduleInputs clip_in = fused_in;
  clip_in.plan.clip_grad_norm = true;
  const Task clipped = build_program(clip_in).ranks[0].streams[0].tasks.back();
  EXPECT_EQ(clipped.kernels, 3);
  EXPECT_GT(clipped.duration, fused.duration);
  EXPECT_LT(clipped.duration, foreach_step.duration);
}

TEST(ShardedSchedule, ComputeTasksCarryTheirMemoryBoundPart) {
  const ScheduleInputs in = inputs(4, 4, 1);
  const Program prog = build_program(in);
  const auto& comp = prog.ranks[0].streams[0];
  const model::LayerShape shape{in.plan.micro_batch};
  const Task& f = find_task(comp, "forward layer 0 mb0");
  // The layer's elementwise ops at the streaming rate; its GEMMs and launches are the rest.
  EXPECT_DOUBLE_EQ(f.memory_bound, model::ops_memory_bound(model::layer_forward_ops(in.model, shape), in.device));
  EXPECT_GT(f.memory_bound, 0);
  EXPECT_LT(f.memory_bound, f.duration);
  // The optimizer step is all streaming but its launch.
  const Task& step = comp.tasks.back();
  EXPECT_NEAR(step.memory_bound, step.duration - in.device.launch_overhead, 1e-12);
  // Collectives have none.
  for (const auto& t : prog.ranks[0].streams[1].tasks) EXPECT_EQ(t.memory_bound, 0);
}

TEST(ShardedSchedule, ComposerTrainMetricsRunAfterEachMicroBatchsBackwardBeforeTheNextForward) {
  ScheduleInputs in = inputs(4, 4, 1, 2);
  const std::size_t plain = build_program(in).ranks[0].streams[0].tasks.size();
  in.plan.composer_train_metrics = 2;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[0];
  EXPECT_EQ(comp.tasks.size(), plain + 2);  // one metrics task per micro-batch
  const Task& m0 = find_task(comp, "train metrics mb0");
  EXPECT_TRUE(waits_for(m0, 0, index_of(comp, "backward embedding mb0")));
  // In stream order before the next micro-batch's forward (the compute stream runs them in turn).
  EXPECT_EQ(index_of(comp, "forward embedding mb1"), index_of(comp, "train metrics mb0") + 1);
  EXPECT_LT(index_of(comp, "train metrics mb1"), static_cast<int>(comp.tasks.size()) - 1);  // before the step
  const double tokens = static_cast<double>(in.plan.micro_batch * in.model.seq_len);
  const double vocab = static_cast<double>(in.model.vocab);
  const auto ops = model::composer_train_metric_ops(tokens, vocab, 2);
  EXPECT_EQ(m0.kernels, 8);
  EXPECT_DOUBLE_EQ(m0.duration, model::ops_duration(ops, in.device));
  EXPECT_DOUBLE_EQ(m0.workspace, 6 * tokens * vocab);  // one update's bf16 and fp32 log-probabilities
  EXPECT_EQ(m0.phase, Phase::backward);
  // One metric: half the passes.
  in.plan.composer_train_metrics = 1;
  const Program one_metric = build_program(in);  // kept alive: find_task returns a reference into it
  const Task& one = find_task(one_metric.ranks[0].streams[0], "train metrics mb0");
  EXPECT_NEAR(one.duration, m0.duration / 2, 1e-12);
}

TEST(ShardedSchedule, ComposerMetricSyncIsOneHostTaskAfterTheStepGrowingWithTheWorld) {
  // Every rank: after the optimizer step, a host task waiting for the last task of every stream
  // (the drain of the loss's .item() and the barriers), lasting 2 metrics x 2 states x
  // (world zeros_like + world copies) x eager_copy_call.
  for (long world : {4L, 8L}) {
    ScheduleInputs in = inputs(world, world, 1, 2);
    in.plan.composer_train_metrics = 2;
    in.device.eager_copy_call = 1e-3;
    const Program plain = build_program(in);
    in.plan.composer_metric_sync = true;
    const Program prog = build_program(in);
    validate(prog);
    ASSERT_EQ(prog.ranks.size(), static_cast<std::size_t>(world));
    for (const auto& r : prog.ranks) {
      ASSERT_EQ(r.streams.size(), plain.ranks[0].streams.size() + 1);
      const Stream& host = r.streams.back();
      EXPECT_EQ(host.kind, StreamKind::host);
      ASSERT_EQ(host.tasks.size(), 1u);
      const Task& h = host.tasks[0];
      EXPECT_EQ(h.kind, TaskKind::host);
      EXPECT_DOUBLE_EQ(h.duration, 2 * 2 * 2 * static_cast<double>(world) * 1e-3);
      EXPECT_EQ(h.kernels, 0);
      std::size_t non_empty = 0;
      for (std::size_t st = 0; st + 1 < r.streams.size(); ++st) {
        if (r.streams[st].tasks.empty()) continue;
        ++non_empty;
        EXPECT_TRUE(waits_for(h, static_cast<int>(st), static_cast<int>(r.streams[st].tasks.size()) - 1))
            << "does not wait for " << r.streams[st].name;
      }
      EXPECT_EQ(h.deps.size(), non_empty);
      // The device's own tasks are those of the program without the sync.
      for (std::size_t st = 0; st + 1 < r.streams.size(); ++st)
        EXPECT_EQ(r.streams[st].tasks.size(), plain.ranks[0].streams[st].tasks.size());
    }
  }
}

TEST(ShardedSchedule, ComposerMetricSyncChargesTheMeasuredMetricSyncCallOverEagerCopyCall) {
  ScheduleInputs in = inputs(8, 8, 1, 2);
  in.plan.composer_train_metrics = 2;
  in.plan.composer_metric_sync = true;
  in.device.eager_copy_call = 1e-3;
  in.device.metric_sync_call = 4e-4;
  const Program prog = build_program(in);
  const Stream& host = prog.ranks[0].streams.back();
  ASSERT_EQ(host.kind, StreamKind::host);
  ASSERT_EQ(host.tasks.size(), 1u);
  EXPECT_DOUBLE_EQ(host.tasks[0].duration, 2 * 2 * 2 * 8.0 * 4e-4);
}

TEST(ShardedSchedule, ComposerMetricSyncWithoutAMeasuredCallTimeAddsNothing) {
  ScheduleInputs in = inputs(4, 4, 1);
  in.plan.composer_train_metrics = 2;
  in.plan.composer_metric_sync = true;  // round_number_device has no eager_copy_call
  const Program prog = build_program(in);
  for (const auto& s : prog.ranks[0].streams) EXPECT_NE(s.kind, StreamKind::host);
}

TEST(ShardedSchedule, BackwardGathersFollowTheRateLimiterOfBackwardPostPrefetch) {
  // Backward order: head, layer 1, layer 0, embedding. Under BACKWARD_POST the gather of a unit
  // is issued after the unit before it in backward order has resharded; limit_all_gathers then
  // waits for the free event of the unit two back, so a backward gather overlaps exactly one
  // unit's backward.
  const Program prog = build_program(inputs(4, 4, 1));
  const auto& r = prog.ranks[0];
  const auto& comp = r.streams[0];
  const auto& gather = r.streams[1];
  const Task& g0 = find_task(gather, "all-gather layer 0 (backward) mb0");
  EXPECT_TRUE(waits_for(g0, 0, index_of(comp, "backward head mb0")));
  EXPECT_FALSE(waits_for(g0, 0, index_of(comp, "backward layer 1 mb0")));
  const Task& ge = find_task(gather, "all-gather embedding (backward) mb0");
  EXPECT_TRUE(waits_for(ge, 0, index_of(comp, "backward layer 1 mb0")));
  // The first two backward gathers wait for nothing on the compute stream but the gather
  // stream's order (the forward's gathers before them).
  for (const auto& d : find_task(gather, "all-gather head (backward) mb0").deps) EXPECT_NE(d.stream, 0);
  for (const auto& d : find_task(gather, "all-gather layer 1 (backward) mb0").deps) EXPECT_NE(d.stream, 0);
}

ScheduleInputs torch_fsdp1(long world, long shard, long accumulation = 1) {
  ScheduleInputs in = inputs(world, shard, 1, accumulation);
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  return in;
}

std::vector<std::string> names_on(const Stream& s) {
  std::vector<std::string> names;
  for (const auto& t : s.tasks) names.push_back(t.name);
  return names;
}

TEST(ShardedSchedule, TorchFsdp1GathersTheRootUnitOnceAndKeepsItThroughTheBackward) {
  // PyTorch FSDP1 (1.13 fully_sharded_data_parallel.py, forward()): the root's flat parameter,
  // the embedding and the head, is not freed after the forward: gathered once before the
  // embedding, reduce-scattered once after the embedding's backward.
  const Program prog = build_program(torch_fsdp1(4, 4));
  validate(prog);
  const auto& r = prog.ranks[1];
  const auto& gather = r.streams[1];
  const auto& model = torch_fsdp1(4, 4).model;
  const double root = model::embedding_parameters(model) + model::head_parameters(model);
  const Task& g = find_task(gather, "all-gather embedding mb0");
  EXPECT_DOUBLE_EQ(prog.collectives[g.collective].size, root * 2);  // bf16
  const Task& rs = find_task(gather, "reduce-scatter embedding mb0");
  EXPECT_DOUBLE_EQ(prog.collectives[rs.collective].size, root * 2);
  for (const auto& t : gather.tasks) {
    EXPECT_EQ(t.name.str().find("head"), std::string::npos) << t.name.str();
    EXPECT_NE(t.name.str(), "all-gather embedding (backward) mb0");
  }
  // The head's forward and backward wait for no gather of their own.
  for (const auto& d : find_task(r.streams[0], "forward head mb0").deps) EXPECT_EQ(d.stream, 0);
  for (const auto& d : find_task(r.streams[0], "backward head mb0").deps) EXPECT_EQ(d.stream, 0);
}

TEST(ShardedSchedule, TorchFsdp1QueuesGathersAndReduceScattersOnOneStreamInIssueOrder) {
  // ProcessGroupNCCL runs a process group's collectives on one stream per device, in the order
  // the host issues them; the post-backward hook of unit k prefetches k-1's gather, then issues
  // k's reduce-scatter.
  const Program prog = build_program(torch_fsdp1(4, 4, 2));
  validate(prog);
  const auto& r = prog.ranks[0];
  EXPECT_TRUE(r.streams[2].tasks.empty());
  const std::vector<std::string> mb0 = {
      "all-gather embedding mb0",          "all-gather layer 0 mb0",           "all-gather layer 1 mb0",
      "all-gather layer 1 (backward) mb0", "all-gather layer 0 (backward) mb0", "reduce-scatter layer 1 mb0",
      "reduce-scatter layer 0 mb0",        "reduce-scatter embedding mb0"};
  const auto names = names_on(r.streams[1]);
  ASSERT_EQ(names.size(), 2 * mb0.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 8), mb0);
  // Every micro-batch reduce-scatters (Composer runs FSDP without no_sync), the next one's
  // gathers queue behind them.
  EXPECT_EQ(names[8], "all-gather embedding mb1");
  const auto& comp = r.streams[0];
  const auto& gather = r.streams[1];
  EXPECT_TRUE(waits_for(find_task(gather, "reduce-scatter layer 1 mb0"), 0, index_of(comp, "backward layer 1 mb0")));
  // The rate limiter's wait: the gather of layer 0 for its backward waits for the head's.
  EXPECT_TRUE(waits_for(find_task(gather, "all-gather layer 0 (backward) mb0"), 0, index_of(comp, "backward head mb0")));
  // The optimizer waits for every reduce-scatter of both micro-batches.
  EXPECT_EQ(comp.tasks.back().deps.size(), 6u);
}

TEST(ShardedSchedule, TorchFsdp2SchedulesAsFsdp1) {
  // fully_shard keeps its root gathered too and shares one communicator for both collectives.
  ScheduleInputs in = torch_fsdp1(4, 4, 2);
  const auto fsdp1 = names_on(build_program(in).ranks[0].streams[1]);
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp2;
  EXPECT_EQ(names_on(build_program(in).ranks[0].streams[1]), fsdp1);
}

// FullyShardedDataParallel's backward_prefetch and forward_prefetch (_runtime_utils.py
// _pre_backward_hook / _post_backward_hook / _pre_forward_unshard -> _prefetch_handles). Four
// layers, so the rate limiter's wait three units back differs from two.
ScheduleInputs prefetching(plan::FsdpBackwardPrefetch backward, bool forward) {
  ScheduleInputs in = torch_fsdp1(4, 4);
  in.model.layers = 4;
  in.plan.fsdp_backward_prefetch = backward;
  in.plan.fsdp_forward_prefetch = forward;
  return in;
}

std::vector<std::string> backward_part(const Stream& s) {
  auto names = names_on(s);
  return std::vector<std::string>(names.begin() + 5, names.end());  // after the 5 forward gathers
}

TEST(ShardedSchedule, TorchFsdp1BackwardPrefetchOrdersTheSharedStream) {
  using plan::FsdpBackwardPrefetch;
  const Program post = build_program(prefetching(FsdpBackwardPrefetch::backward_post, false));
  const Program pre = build_program(prefetching(FsdpBackwardPrefetch::backward_pre, false));
  const Program none = build_program(prefetching(FsdpBackwardPrefetch::none, false));
  validate(post);
  validate(pre);
  validate(none);
  // BACKWARD_POST: the next gather in the post-backward hook, before the reduce-scatter.
  EXPECT_EQ(backward_part(post.ranks[0].streams[1]),
            (std::vector<std::string>{"all-gather layer 3 (backward) mb0", "all-gather layer 2 (backward) mb0",
                                      "reduce-scatter layer 3 mb0", "all-gather layer 1 (backward) mb0",
                                      "reduce-scatter layer 2 mb0", "all-gather layer 0 (backward) mb0",
                                      "reduce-scatter layer 1 mb0", "reduce-scatter layer 0 mb0",
                                      "reduce-scatter embedding mb0"}));
  // BACKWARD_PRE: the last layer's pre-backward gathers it and prefetches layer 2 at once (the
  // root, first in execution order, prefetches nothing); each later gather is issued before the
  // gradient computation of the unit above it, and so before its reduce-scatter: the stream's
  // order is BACKWARD_POST's (what moves is when the host issues and what the limiter waits for).
  EXPECT_EQ(backward_part(pre.ranks[0].streams[1]), backward_part(post.ranks[0].streams[1]));
  // No prefetch: each unit's gather queues behind the reduce-scatter of the unit above.
  EXPECT_EQ(backward_part(none.ranks[0].streams[1]),
            (std::vector<std::string>{"all-gather layer 3 (backward) mb0", "reduce-scatter layer 3 mb0",
                                      "all-gather layer 2 (backward) mb0", "reduce-scatter layer 2 mb0",
                                      "all-gather layer 1 (backward) mb0", "reduce-scatter layer 1 mb0",
                                      "all-gather layer 0 (backward) mb0", "reduce-scatter layer 0 mb0",
                                      "reduce-scatter embedding mb0"}));
}

TEST(ShardedSchedule, TorchFsdp1BackwardPreIssuesTheGatherBeforeTheGradientAndWaitsOneUnitFurtherBack) {
  using plan::FsdpBackwardPrefetch;
  const Program post = build_program(prefetching(FsdpBackwardPrefetch::backward_post, false));
  const Program pre = build_program(prefetching(FsdpBackwardPrefetch::backward_pre, false));
  for (const Program* prog : {&post, &pre}) {
    const auto& comp = prog->ranks[0].streams[0];
    const auto& gather = prog->ranks[0].streams[1];
    const bool is_pre = prog == &pre;
    const Task& g = find_task(gather, "all-gather layer 0 (backward) mb0");
    // Issued in layer 1's pre-backward (after layer 2's backward was issued) or in layer 1's
    // post-backward (after layer 1's).
    EXPECT_EQ(g.host_after, (TaskRef{0, index_of(comp, is_pre ? "backward layer 2 mb0" : "backward layer 1 mb0")}));
    // limit_all_gathers: the older of the two free events queued, layer 3's reshard (BACKWARD_PRE:
    // layer 1 is not resharded yet) or layer 2's.
    EXPECT_EQ(waits_for(g, 0, index_of(comp, "backward layer 3 mb0")), is_pre);
    EXPECT_EQ(waits_for(g, 0, index_of(comp, "backward layer 2 mb0")), !is_pre);
    EXPECT_TRUE(g.host_sync);
  }
}

TEST(ShardedSchedule, TorchFsdp1ForwardPrefetchIssuesTheNextGatherBeforeTheForward) {
  using plan::FsdpBackwardPrefetch;
  const Program plain = build_program(prefetching(FsdpBackwardPrefetch::backward_post, false));
  const Program ahead = build_program(prefetching(FsdpBackwardPrefetch::backward_post, true));
  validate(ahead);
  // The stream holds the same gathers in the same order: only when they are issued moves.
  EXPECT_EQ(names_on(ahead.ranks[0].streams[1]), names_on(plain.ranks[0].streams[1]));
  for (const Program* prog : {&plain, &ahead}) {
    const bool early = prog == &ahead;
    const auto& comp = prog->ranks[0].streams[0];
    const Task& g = find_task(prog->ranks[0].streams[1], "all-gather layer 3 mb0");
    // Issued in layer 2's pre-forward (after layer 1's forward) or in layer 3's (after layer 2's).
    EXPECT_EQ(g.host_after, (TaskRef{0, index_of(comp, early ? "forward layer 1 mb0" : "forward layer 2 mb0")}));
    EXPECT_EQ(waits_for(g, 0, index_of(comp, "forward layer 0 mb0")), early);
    EXPECT_EQ(waits_for(g, 0, index_of(comp, "forward layer 1 mb0")), !early);
  }
  // The first layer is prefetched by the root's pre-forward, before the embedding's forward.
  const Task& first = find_task(ahead.ranks[0].streams[1], "all-gather layer 0 mb0");
  EXPECT_EQ(first.host_after, (TaskRef{-1, -1}));
}

ScheduleInputs torchao_fsdp2(bool fp8_gather, bool precomputed) {
  ScheduleInputs in = torch_fsdp1(4, 4);
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp2;
  in.plan.linear_precision = plan::LinearPrecision::fp8;
  in.plan.fp8_implementation = plan::Fp8Implementation::torchao;
  in.plan.fsdp_float8_all_gather = fp8_gather;
  in.plan.float8_precomputed_scales = precomputed;
  in.device = model::load_device_profile("topologies/devices/h100-80gb.json");  // fp8 GEMM samples
  return in;
}

double call_bytes(const Program& prog, const std::string& name) {
  for (const auto& c : prog.collectives)
    if (c.name == name) return c.size;
  ADD_FAILURE() << "no call " << name;
  return 0;
}

int calls_named(const Program& prog, const std::string& name, int rank) {
  int k = 0;
  for (const auto& c : prog.collectives)
    if (c.name == name && c.group.front() == rank) ++k;
  return k;
}

TEST(ShardedSchedule, TorchaoFp8AllGatherMovesLinearWeightsAtOneByte) {
  const ScheduleInputs bf16_in = torchao_fsdp2(false, false);
  const Program bf16 = build_program(bf16_in);
  const Program fp8 = build_program(torchao_fsdp2(true, false));
  validate(fp8);
  const double linear = model::linear_weight_parameters(bf16_in.model);
  // A layer's linear weights go from 2 bytes to 1; its norms stay bf16.
  EXPECT_DOUBLE_EQ(call_bytes(bf16, "all-gather layer 0 mb0") - call_bytes(fp8, "all-gather layer 0 mb0"), linear);
  EXPECT_DOUBLE_EQ(call_bytes(bf16, "all-gather layer 1 (backward) mb0") -
                       call_bytes(fp8, "all-gather layer 1 (backward) mb0"),
                   linear);
  // The root unit (embedding and head) stays bf16; the reduce-scatters keep their dtype.
  EXPECT_DOUBLE_EQ(call_bytes(fp8, "all-gather embedding mb0"), call_bytes(bf16, "all-gather embedding mb0"));
  EXPECT_DOUBLE_EQ(call_bytes(fp8, "reduce-scatter layer 0 mb0"), call_bytes(bf16, "reduce-scatter layer 0 mb0"));
}

TEST(ShardedSchedule, TorchaoFp8AllGatherCastsEachShardAfterPerWeightAmaxAllReduces) {
  const Program prog = build_program(torchao_fsdp2(true, false));
  const auto& g = prog.ranks[0].streams[1];
  // Each gather of a layer: amax pass, a scalar all-reduce per weight (the tiny model's GELU MLP:
  // wq wk wv wo and two MLP linears), the cast.
  const int cast = index_of(g, "fp8 shard cast layer 0 mb0");
  EXPECT_TRUE(waits_for(find_task(g, "all-gather layer 0 mb0"), 1, cast));
  EXPECT_TRUE(waits_for(g.tasks[static_cast<std::size_t>(cast)], 1, cast - 1));
  EXPECT_EQ(g.tasks[static_cast<std::size_t>(cast - 1)].name, "fp8 amax all-reduce layer 0 mb0");
  EXPECT_EQ(calls_named(prog, "fp8 amax all-reduce layer 0 mb0", 0), 6);
  EXPECT_EQ(calls_named(prog, "fp8 amax all-reduce layer 0 (backward) mb0", 0), 6);
  EXPECT_DOUBLE_EQ(call_bytes(prog, "fp8 amax all-reduce layer 0 mb0"), 4);
  EXPECT_EQ(find_task(g, "fp8 shard amax layer 0 mb0").kernels, 2 * 6);
  EXPECT_EQ(find_task(g, "fp8 shard cast layer 1 (backward) mb0").kernels, 3 * 6);
  // The root unit has no float8 weights: nothing cast before its gather.
  for (const auto& t : g.tasks) EXPECT_EQ(t.name.str().find("embedding mb0") != std::string::npos &&
                                              t.name.str().find("fp8") != std::string::npos,
                                          false);
  EXPECT_EQ(calls_named(prog, "float8 precompute amax all-reduce", 0), 0);
}

TEST(ShardedSchedule, PrecomputedFloat8ScalesReplaceThePerWeightAmaxByOneAllReducePerStep) {
  const ScheduleInputs in = torchao_fsdp2(true, true);
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[0];
  EXPECT_EQ(calls_named(prog, "fp8 amax all-reduce layer 0 mb0", 0), 0);
  for (const auto& t : r.streams[1].tasks) EXPECT_EQ(t.name.str().find("fp8 shard amax"), std::string::npos);
  EXPECT_TRUE(waits_for(find_task(r.streams[1], "all-gather layer 0 mb0"), 1,
                        index_of(r.streams[1], "fp8 shard cast layer 0 mb0")));
  // After the optimizer: the amax pass, one all-reduce of 2 layers x 6 amaxes, the scales.
  const auto& comp = r.streams[0];
  EXPECT_EQ(comp.tasks[comp.tasks.size() - 3].name, "optimizer step (shard)");
  EXPECT_EQ(comp.tasks[comp.tasks.size() - 2].name, "float8 precompute amax");
  EXPECT_EQ(comp.tasks.back().name, "float8 precompute scales");
  EXPECT_EQ(calls_named(prog, "float8 precompute amax all-reduce", 0), 1);
  EXPECT_DOUBLE_EQ(call_bytes(prog, "float8 precompute amax all-reduce"), 4.0 * 2 * 6);
}

TEST(ShardedSchedule, TorchFsdp1HybridShardingAllReducesOnTheReplicaStream) {
  const Program prog = build_program(torch_fsdp1(4, 2));
  validate(prog);
  const auto& r = prog.ranks[1];
  const Task& ar = find_task(r.streams[2], "replica all-reduce embedding mb0");
  EXPECT_TRUE(waits_for(ar, 1, index_of(r.streams[1], "reduce-scatter embedding mb0")));
}

TEST(ShardedSchedule, HybridShardingReducesWithinAShardGroupThenAcrossReplicas) {
  // 4 ranks, shard groups {0,1} and {2,3}, replica groups {0,2} and {1,3}.
  const Program prog = build_program(inputs(4, 2, 1));
  validate(prog);
  const auto& reduce = prog.ranks[1].streams[2];
  const Task& rs = find_task(reduce, "reduce-scatter head mb0");
  const Task& ar = find_task(reduce, "replica all-reduce head mb0");
  EXPECT_EQ(prog.collectives[rs.collective].group, (std::vector<int>{0, 1}));
  EXPECT_EQ(prog.collectives[ar.collective].group, (std::vector<int>{1, 3}));
  EXPECT_TRUE(waits_for(ar, 2, index_of(reduce, "reduce-scatter head mb0")));
  // The replica all-reduce carries the shard: a half of the unit's gradients.
  EXPECT_DOUBLE_EQ(prog.collectives[ar.collective].size * 2, prog.collectives[rs.collective].size);
}

TEST(ShardedSchedule, TensorParallelLayersEndWithAnAllReduceInTheCriticalPath) {
  // TP 2 x FSDP over 2: TP groups {0,1} and {2,3}; shard groups {0,2} and {1,3}.
  const Program prog = build_program(inputs(4, 2, 2));
  validate(prog);
  const auto& r = prog.ranks[3];
  const auto& comp = r.streams[0];
  const auto& tensor = r.streams[3];
  EXPECT_EQ(tensor.tasks.size(), 8u);  // 2 layers x (forward, backward) x (attention, MLP)
  const int ar = index_of(tensor, "forward layer 0 mb0 all-reduce");
  EXPECT_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(ar)].collective].group, (std::vector<int>{2, 3}));
  // The attention's all-reduce, then the MLP's, each of b x s x h, then the next layer.
  const auto& attention = prog.collectives[tensor.tasks[static_cast<std::size_t>(ar)].collective];
  const auto& mlp = prog.collectives[tensor.tasks[static_cast<std::size_t>(ar + 1)].collective];
  EXPECT_EQ(tensor.tasks[static_cast<std::size_t>(ar + 1)].name, "forward layer 0 mb0 all-reduce");
  EXPECT_DOUBLE_EQ(attention.size, mlp.size);
  EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(ar + 1)], 3, ar));
  const Task& next = find_task(comp, "forward layer 1 mb0");
  EXPECT_TRUE(waits_for(next, 3, ar + 1));
  const Task& g = find_task(r.streams[1], "all-gather layer 0 mb0");
  EXPECT_EQ(prog.collectives[g.collective].group, (std::vector<int>{1, 3}));
}

TEST(ShardedSchedule, MemoryIsAllocatedByTheFirstForwardAndFreedByTheLastBackward) {
  const Program prog = build_program(inputs(4, 4, 1));
  const auto& comp = prog.ranks[0].streams[0];
  EXPECT_EQ(prog.ranks[0].resident, 1000);
  EXPECT_EQ(find_task(comp, "forward embedding mb0").alloc, 100);
  EXPECT_EQ(find_task(comp, "backward embedding mb0").release, 100);
  EXPECT_EQ(find_task(comp, "backward layer 0 mb0").workspace, 10);
}

TEST(ShardedSchedule, GatheredUnitsAndGradientsComeFromTheirStreamsPools) {
  // With the units gathered, the memory model's gathered parameters and gradients leave
  // `resident` and are allocated unit by unit: parameters by the gather on the gather stream,
  // freed (into that stream's pool) by the pass that used them; the gradient by the backward on
  // the compute stream, freed by the reduce-scatter; FSDP1's reduce-dtype cast and padded copy
  // from the post-backward stream's pool (index 2) although the call runs on the gather stream.
  ScheduleInputs in = torch_fsdp1(4, 4);
  in.stages = {{1000, 100, 10, 300}};
  in.plan.gradient_wire_bytes = 4;  // fp32 reduction (Composer's PURE mixed precision: bf16)
  const Program prog = build_program(in);
  const auto& r = prog.ranks[0];
  EXPECT_EQ(r.resident, 700);
  const auto& comp = r.streams[0];
  const auto& gather = r.streams[1];
  const double layer = model::parameters_per_layer(in.model);
  const double root = model::embedding_parameters(in.model) + model::head_parameters(in.model);
  const double wire = in.plan.parameter_wire_bytes, reduce = in.plan.gradient_wire_bytes;
  const Task& g = find_task(gather, "all-gather layer 0 mb0");
  EXPECT_DOUBLE_EQ(g.alloc, layer * wire);
  EXPECT_EQ(g.alloc_pool, -1);  // its own (gather) stream
  const Task& f = find_task(comp, "forward layer 0 mb0");
  EXPECT_DOUBLE_EQ(f.release_borrowed, layer * wire);
  EXPECT_EQ(f.borrowed_pool, 1);
  // The root unit is released by the embedding's backward only, which allocates its gradient.
  EXPECT_EQ(find_task(comp, "forward embedding mb0").release_borrowed, 0);
  const Task& be = find_task(comp, "backward embedding mb0");
  EXPECT_DOUBLE_EQ(be.release_borrowed, root * wire);
  EXPECT_DOUBLE_EQ(be.alloc, root * wire);
  EXPECT_EQ(find_task(comp, "backward head mb0").alloc, 0);
  const Task& bl = find_task(comp, "backward layer 1 mb0");
  EXPECT_DOUBLE_EQ(bl.alloc, layer * wire);  // autograd's gradient, in the compute dtype
  EXPECT_DOUBLE_EQ(bl.release_borrowed, layer * wire);
  const Task& rs = find_task(gather, "reduce-scatter layer 1 mb0");
  EXPECT_DOUBLE_EQ(rs.release_borrowed, layer * wire);
  EXPECT_EQ(rs.borrowed_pool, 0);
  EXPECT_DOUBLE_EQ(rs.workspace, layer * reduce * 2);
  EXPECT_EQ(rs.alloc_pool, 2);
  // Every gather's allocation is released once: the timeline ends where it began.
  EXPECT_DOUBLE_EQ(allocated_bytes(r), released_bytes(r));
}

TEST(ShardedSchedule, WithoutShardingTheGatheredTermsStayResident) {
  ScheduleInputs in = inputs(4, 1, 1);
  in.stages = {{1000, 100, 10, 300}};
  const Program prog = build_program(in);
  EXPECT_EQ(prog.ranks[0].resident, 1000);
  for (const auto& t : prog.ranks[0].streams[0].tasks) EXPECT_EQ(t.release_borrowed, 0);
}

ScheduleInputs offloading(long layers, long tp) {
  ScheduleInputs in = inputs(4 * tp, 4, tp);
  in.model.layers = layers;
  in.plan.activation_checkpointing = true;
  in.plan.activation_offloading = true;
  return in;
}

TEST(ShardedSchedule, NoCopyStreamWithoutOffloading) {
  ScheduleInputs in = inputs(4, 4, 1);
  in.plan.activation_checkpointing = true;
  const Program prog = build_program(in);
  EXPECT_EQ(prog.ranks[0].streams.size(), 4u);
}

TEST(ShardedSchedule, OffloadingCopiesEachLayerInputToHostAndBack) {
  const Program prog = build_program(offloading(2, 1));
  validate(prog);
  const auto& r = prog.ranks[0];
  ASSERT_EQ(r.streams.size(), 5u);
  const auto& copy = r.streams[4];
  EXPECT_EQ(copy.name, "host-copy");
  EXPECT_EQ(copy.kind, StreamKind::copy);
  // Layer input in bf16: micro-batch 2 x seq 16 x hidden 64 x 2 B (the memory model's number).
  const Bytes input = 2.0 * 2 * 16 * 64;
  EXPECT_EQ(model::layer_input_bytes(offloading(2, 1).model, {2, 1, false, false, false}), input);
  // Two offloads in forward order, then two fetches in backward order; embedding and head none.
  ASSERT_EQ(copy.tasks.size(), 4u);
  const std::vector<std::string> names = {"offload input layer 0 mb0", "offload input layer 1 mb0",
                                          "fetch input layer 1 mb0", "fetch input layer 0 mb0"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(copy.tasks[i].name, names[i]);
    EXPECT_EQ(copy.tasks[i].kind, TaskKind::host_copy);
    EXPECT_EQ(copy.tasks[i].phase, Phase::offload);
    EXPECT_EQ(copy.tasks[i].copy_bytes, input);
    EXPECT_EQ(copy.tasks[i].copy_direction, i < 2 ? CopyDirection::to_host : CopyDirection::to_device);
    EXPECT_EQ(copy.tasks[i].alloc + copy.tasks[i].release + copy.tasks[i].workspace, 0);
  }
}

TEST(ShardedSchedule, OffloadFollowsTheForwardAndFetchIsPrefetchedOneLayerAhead) {
  const Program prog = build_program(offloading(4, 1));
  validate(prog);
  const auto& comp = prog.ranks[1].streams[0];
  const auto& copy = prog.ranks[1].streams[4];
  // The offload waits for its layer's forward.
  EXPECT_TRUE(waits_for(find_task(copy, "offload input layer 1 mb0"), 0, index_of(comp, "forward layer 1 mb0")));
  // Two layer inputs on device: a forward waits for the offload of the layer two before it.
  EXPECT_TRUE(waits_for(find_task(comp, "forward layer 2 mb0"), 4, index_of(copy, "offload input layer 0 mb0")));
  // Backward (without TP the recompute is part of it) waits for its fetch ...
  EXPECT_TRUE(waits_for(find_task(comp, "backward layer 1 mb0"), 4, index_of(copy, "fetch input layer 1 mb0")));
  // ... which starts once the backward two units later is done: it overlaps the one in between.
  EXPECT_TRUE(waits_for(find_task(copy, "fetch input layer 1 mb0"), 0, index_of(comp, "backward layer 3 mb0")));
  EXPECT_TRUE(find_task(copy, "fetch input layer 3 mb0").deps.empty());  // right after the offloads
  EXPECT_TRUE(waits_for(find_task(copy, "fetch input layer 2 mb0"), 0, index_of(comp, "backward head mb0")));
}

TEST(ShardedSchedule, UnderTensorParallelismTheRecomputeWaitsForTheFetch) {
  const Program prog = build_program(offloading(2, 2));
  validate(prog);
  const auto& comp = prog.ranks[0].streams[0];
  const auto& copy = prog.ranks[0].streams[4];
  EXPECT_TRUE(waits_for(find_task(comp, "recompute layer 0 mb0"), 4, index_of(copy, "fetch input layer 0 mb0")));
}

TEST(ShardedSchedule, SequenceParallelismReplacesEachTpAllReduceByAllGatherAndReduceScatter) {
  ScheduleInputs in = inputs(4, 2, 2);
  in.plan.sequence_parallel = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[0];
  const auto& tensor = prog.ranks[0].streams[3];
  const Task& ag = find_task(tensor, "forward layer 0 mb0 all-gather");
  const Task& rs = find_task(tensor, "forward layer 0 mb0 reduce-scatter");
  EXPECT_EQ(prog.collectives[ag.collective].op, collective::Op::all_gather);
  EXPECT_EQ(prog.collectives[rs.collective].op, collective::Op::reduce_scatter);
  EXPECT_DOUBLE_EQ(prog.collectives[ag.collective].size, prog.collectives[rs.collective].size);
  // all-gather -> layer -> reduce-scatter, in the critical path.
  EXPECT_TRUE(waits_for(find_task(comp, "forward layer 0 mb0"), 3, index_of(tensor, "forward layer 0 mb0 all-gather") + 1));
  EXPECT_TRUE(waits_for(rs, 0, index_of(comp, "forward layer 0 mb0")));
  // In backward too (the output gradients are gathered before the pass).
  EXPECT_TRUE(waits_for(find_task(comp, "backward layer 1 mb0"), 3, index_of(tensor, "backward layer 1 mb0 all-gather") + 1));
  for (const auto& t : tensor.tasks) EXPECT_EQ(t.name.str().find("all-reduce"), std::string::npos) << t.name;
  // Transformer Engine's FP8 linears gather the sequence in FP8 (model/fp8_linear.hpp).
  in.plan.linear_precision = plan::LinearPrecision::fp8;
  in.plan.fp8_implementation = plan::Fp8Implementation::transformer_engine;
  in.device = model::load_device_profile("tests/data/fp8/device.json");
  const Program fp8 = build_program(in);
  validate(fp8);
  const auto& fp8_tensor = fp8.ranks[0].streams[3];
  for (const char* pass : {"forward layer 0 mb0", "backward layer 1 mb0"}) {
    const auto& gather = fp8.collectives[find_task(fp8_tensor, std::string(pass) + " all-gather").collective];
    const auto& scatter = fp8.collectives[find_task(fp8_tensor, std::string(pass) + " reduce-scatter").collective];
    EXPECT_DOUBLE_EQ(gather.size, scatter.size / 2) << pass;
  }
}

// torchtitan's op policy with TP: the recompute is a task of its own holding what the policy did
// not save; under sequence parallelism it gathers the sequence again (the reduce-scatter outputs
// are saved), without it it all-reduces again (all-reduce outputs are not saved).
TEST(ShardedSchedule, SelectiveOpRecomputeUnderTensorParallelismRunsOnlyTheUnsavedCollectives) {
  for (const bool sp : {true, false}) {
    ScheduleInputs in = inputs(4, 2, 2);
    in.plan.flash_attention = true;
    in.plan.sequence_parallel = sp;
    in.plan.activation_checkpointing = true;
    ScheduleInputs full = in;
    in.plan.checkpoint_policy = plan::CheckpointPolicy::selective_op;
    const Program prog = build_program(in), whole = build_program(full);
    validate(prog);
    const auto& comp = prog.ranks[0].streams[0];
    const auto& tensor = prog.ranks[0].streams[3].tasks;
    const model::LayerShape shape{in.plan.micro_batch, 2, sp, true};
    const auto ops = model::recomputed_forward_ops(in.model, shape, model::Checkpointing::selective_op);
    const Task& r = find_task(comp, "recompute layer 0 mb0");
    EXPECT_DOUBLE_EQ(r.duration, model::ops_duration(ops, in.device)) << sp;
    EXPECT_EQ(r.kernels, model::ops_kernels(ops)) << sp;
    EXPECT_LT(r.duration, find_task(whole.ranks[0].streams[0], "recompute layer 0 mb0").duration) << sp;
    // The backward proper is the same as under full recompute.
    EXPECT_DOUBLE_EQ(find_task(comp, "backward layer 0 mb0").duration,
                     find_task(whole.ranks[0].streams[0], "backward layer 0 mb0").duration);
    auto named = [&](const std::vector<Task>& tasks, const std::string& name) {
      return std::count_if(tasks.begin(), tasks.end(), [&](const Task& t) { return t.name.str() == name; });
    };
    const auto& full_tensor = whole.ranks[0].streams[3].tasks;
    if (sp) {
      EXPECT_EQ(named(tensor, "recompute layer 0 mb0 all-gather"), 2);
      EXPECT_EQ(named(tensor, "recompute layer 0 mb0 reduce-scatter"), 0);
      EXPECT_EQ(named(full_tensor, "recompute layer 0 mb0 reduce-scatter"), 2);
      EXPECT_EQ(tensor.size() + 2 * 2, full_tensor.size());  // two layers' saved reduce-scatters
    } else {
      EXPECT_EQ(named(tensor, "recompute layer 0 mb0 all-reduce"), 2);
      EXPECT_EQ(tensor.size(), full_tensor.size());
    }
  }
}

// llm-foundry's flash_attn_fn (module_kernels mpt-flash) under torch FSDP1, host dispatch on or off.
ScheduleInputs unpadding(bool checkpointing, bool host_dispatch) {
  auto in = inputs(4, 4, 1);
  in.model.layers = 3;
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  in.plan.flash_attention = true;
  in.plan.module_kernels = plan::ModuleKernels::mpt_flash;
  in.plan.activation_checkpointing = checkpointing;
  in.plan.host_dispatch = host_dispatch;
  return in;
}

// `pass` cut into `runs` tasks ("<pass> to sync k", then the pass's own name) in `cut`, against
// the one task of that name in `whole`: in order, each after the first a host sync waiting on
// the one before, the first waiting for what the whole pass waits for, kernels and time summed,
// and the pass's memory all on the last. Returns the first run's index.
int expect_cut(const Stream& cut, const Stream& whole, const std::string& pass, int runs) {
  const Task& w = find_task(whole, pass);
  const int first = index_of(cut, pass + " to sync 1");
  EXPECT_EQ(index_of(cut, pass), first + runs - 1);
  int kernels = 0;
  double duration = 0, memory_bound = 0;
  for (int k = 0; k < runs; ++k) {
    const Task& t = cut.tasks[static_cast<std::size_t>(first + k)];
    if (k + 1 < runs) {
      EXPECT_EQ(t.name, pass + " to sync " + std::to_string(k + 1));
    }
    EXPECT_EQ(t.host_sync, k > 0) << t.name;
    if (k > 0) {
      EXPECT_EQ(t.deps, (std::vector<TaskRef>{{0, first + k - 1}})) << t.name;
    }
    if (k + 1 < runs) {
      EXPECT_EQ(t.alloc + t.workspace + t.release + t.release_borrowed, 0) << t.name;
      EXPECT_EQ(t.allocations, -1) << t.name;
    }
    kernels += t.kernels;
    duration += t.duration;
    memory_bound += t.memory_bound;
  }
  EXPECT_EQ(cut.tasks[static_cast<std::size_t>(first)].deps.size(), w.deps.size());
  const Task& last = cut.tasks[static_cast<std::size_t>(first + runs - 1)];
  EXPECT_EQ(last.alloc, w.alloc);
  EXPECT_EQ(last.workspace, w.workspace);
  EXPECT_EQ(last.release, w.release);
  EXPECT_EQ(last.release_borrowed, w.release_borrowed);
  EXPECT_EQ(last.allocations, w.allocations);
  EXPECT_EQ(kernels, w.kernels);
  EXPECT_NEAR(duration, w.duration, 1e-9 * w.duration);
  EXPECT_NEAR(memory_bound, w.memory_bound, 1e-9 * w.duration);
  return first;
}

TEST(ShardedSchedule, MptFlashCutsEachLayersForwardAtUnpadInputsSixHostSyncs) {
  const Program cut = build_program(unpadding(false, true));
  const Program whole = build_program(unpadding(false, false));
  validate(cut);
  const auto& comp = cut.ranks[0].streams[0];
  // Three layers' forwards, six syncs each (q, k, v: nonzero's count and .item()); the backward,
  // with nothing recomputed, is one task.
  EXPECT_EQ(comp.tasks.size(), whole.ranks[0].streams[0].tasks.size() + 3 * 6);
  for (const char* layer : {"forward layer 0 mb0", "forward layer 2 mb0"}) {
    const int first = expect_cut(comp, whole.ranks[0].streams[0], layer, 7);
    // What the host issues after each sync before the next: nonzero's select and the max (3),
    // cumsum, pad, the gather and the next call's mask sum and nonzero count (9).
    for (int k = 1; k <= 5; ++k)
      EXPECT_EQ(comp.tasks[static_cast<std::size_t>(first + k)].kernels, k % 2 == 1 ? 3 : 9);
  }
  EXPECT_GT(find_task(whole.ranks[0].streams[0], "forward layer 0 mb0").release_borrowed, 0);
  EXPECT_FALSE(find_task(comp, "backward layer 0 mb0").host_sync);
  // The rate limiter's gather waits for the whole forward two units back: its last run.
  EXPECT_TRUE(waits_for(find_task(cut.ranks[0].streams[1], "all-gather layer 2 mb0"), 0, index_of(comp, "forward layer 0 mb0")));
}

TEST(ShardedSchedule, MptFlashUnderCheckpointingCutsTheBackwardAtTheRecomputedForwardsSyncs) {
  const Program cut = build_program(unpadding(true, true));
  const Program whole = build_program(unpadding(true, false));
  validate(cut);
  const auto& comp = cut.ranks[0].streams[0];
  EXPECT_EQ(comp.tasks.size(), whole.ranks[0].streams[0].tasks.size() + 3 * 6 * 2);
  expect_cut(comp, whole.ranks[0].streams[0], "forward layer 1 mb0", 7);
  expect_cut(comp, whole.ranks[0].streams[0], "backward layer 1 mb0", 7);
  // The gradient's allocation and the activations' release stay with the backward proper.
  EXPECT_GT(find_task(comp, "backward layer 1 mb0").alloc, 0);
  EXPECT_EQ(find_task(comp, "backward layer 1 mb0 to sync 1").alloc, 0);
}

TEST(BuildProgram, SaysWhatItCannotBuildYet) {
  ScheduleInputs in = inputs(4, 4, 1);
  EXPECT_TRUE(unsupported_plan(in).empty());
  in.plan.pp = 2;
  EXPECT_FALSE(unsupported_plan(in).empty());
}

}  // namespace
}  // namespace trainsim::program

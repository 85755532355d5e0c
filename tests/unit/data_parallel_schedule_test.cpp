// Data-parallel programs (program/data_parallel_schedule.hpp) and program::validate, no SimGrid:
// the tasks and dependencies of DDP and ZeRO-1 for a small model on a hand-made device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/fixtures.hpp"
#include "core/error.hpp"
#include "model/compute_cost.hpp"
#include "model/device_profile.hpp"
#include "program/data_parallel_schedule.hpp"
#include "program/schedule_inputs.hpp"
#include "program/program.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::find_task;
using testing_support::index_of;
using testing_support::waits_for;
using collective::Op;

model::TransformerSpec small_model() {
  return {"small", 4, 64, 4, 256, 1000, 32, false};
}

model::DeviceProfile small_device() { return testing_support::round_number_device(); }

DataParallelConfig config(DataParallelKind kind, double bucket_elements = 1e12) {
  DataParallelConfig c;
  c.kind = kind;
  c.world = 4;
  c.ranks_per_node = 2;
  c.micro_batch = 2;
  c.accumulation = 3;
  c.bucket_elements = bucket_elements;
  c.gradient_bytes = 4;
  c.parameter_bytes = 2;
  return c;
}

Program build(const DataParallelConfig& c) {
  return build_data_parallel(small_model(), small_device(), c);
}

int count_phase(const Stream& s, Phase p) {
  int n = 0;
  for (const auto& t : s.tasks) n += t.phase == p ? 1 : 0;
  return n;
}

int optimizer_index(const Stream& compute) {
  for (std::size_t i = 0; i < compute.tasks.size(); ++i)
    if (compute.tasks[i].phase == Phase::optimizer) return static_cast<int>(i);
  return -1;
}

int gradient_collectives(const Program& p) {
  int n = 0;
  for (const auto& c : p.collectives) n += c.name.str().rfind("grad bucket", 0) == 0 ? 1 : 0;
  return n;
}

TEST(DataParallel, EveryRankHasAComputeAndACommunicationStream) {
  const Program p = build(config(DataParallelKind::zero1));
  ASSERT_EQ(p.ranks.size(), 4u);
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    EXPECT_EQ(p.ranks[r].rank, static_cast<int>(r));
    ASSERT_EQ(p.ranks[r].streams.size(), 2u);
    EXPECT_EQ(p.ranks[r].streams[0].kind, StreamKind::compute);
    EXPECT_EQ(p.ranks[r].streams[1].kind, StreamKind::communication);
  }
}

TEST(DataParallel, OneForwardAndOneBackwardPerMicroBatch) {
  const Program p = build(config(DataParallelKind::ddp, 60000));
  const int buckets = gradient_collectives(p);
  ASSERT_GT(buckets, 1);
  for (const auto& rp : p.ranks) {
    const Stream& comp = rp.streams[0];
    EXPECT_EQ(count_phase(comp, Phase::forward), 3);
    // Micro-batches 0 and 1 run one backward task each; the last one runs one per bucket.
    EXPECT_EQ(count_phase(comp, Phase::backward), 2 + buckets);
    EXPECT_EQ(count_phase(comp, Phase::optimizer), 1);
    // An accumulating backward lasts as long as the last micro-batch's buckets together.
    Seconds last = 0;
    for (const auto& t : comp.tasks)
      if (t.name.str().rfind("backward mb2 bucket", 0) == 0) last += t.duration;
    for (const auto& t : comp.tasks) {
      if (t.name == "backward mb0" || t.name == "backward mb1") {
        EXPECT_NEAR(t.duration, last, 1e-12 * last);
      }
    }
  }
}

Seconds compute_time(const Program& p) {
  Seconds total = 0;
  for (const auto& t : p.ranks[0].streams[0].tasks) total += t.duration;
  return total;
}

TEST(DataParallel, FlashAttentionShortensTheComputeAndThePlanSetsTheKernelFlags) {
  // A fused attention kernel keeps the s x s scores on chip; the plan's flags must reach the
  // operation list the DP schedule times, as they do in the sharded and pipeline schedules
  // (fused cross-entropy changes what is stored, not the time).
  DataParallelConfig c = config(DataParallelKind::ddp);
  const Seconds plain = compute_time(build(c));
  c.flash_attention = true;
  const Seconds flash = compute_time(build(c));
  EXPECT_LT(flash, plain);
  plan::TrainingPlan t;
  t.flash_attention = true;
  t.fused_cross_entropy = true;
  const DataParallelConfig from_plan = data_parallel_config(t, plan::Layout{});
  EXPECT_TRUE(from_plan.flash_attention);
  EXPECT_TRUE(from_plan.fused_cross_entropy);
}

TEST(DataParallel, SamplesPerStep) {
  EXPECT_EQ(build(config(DataParallelKind::ddp)).samples_per_step, 2 * 3 * 4);  // mb x accum x world
}

TEST(DataParallel, Zero1ReduceScattersBucketsAndGathersAfterTheOptimizer) {
  const Program p = build(config(DataParallelKind::zero1, 60000));
  const int buckets = gradient_collectives(p);
  ASSERT_EQ(p.collectives.size(), static_cast<std::size_t>(buckets + 1));
  Bytes gradient_bytes = 0;
  for (int b = 0; b < buckets; ++b) {
    EXPECT_EQ(p.collectives[b].op, Op::reduce_scatter);
    EXPECT_EQ(p.collectives[b].group, (std::vector<int>{0, 1, 2, 3}));
    gradient_bytes += p.collectives[b].size;
  }
  const double params = model::parameter_count(small_model());
  EXPECT_NEAR(gradient_bytes, 4 * params, 1e-9 * params);  // fp32 gradients, every parameter once
  const CollectiveCall& gather = p.collectives.back();
  EXPECT_EQ(gather.op, Op::all_gather);
  EXPECT_DOUBLE_EQ(gather.size, 2 * params);  // bf16 parameters

  for (const auto& rp : p.ranks) {
    const Stream& comm = rp.streams[1];
    ASSERT_EQ(comm.tasks.size(), static_cast<std::size_t>(buckets + 1));
    const Task& g = comm.tasks.back();
    EXPECT_EQ(g.collective, buckets);
    EXPECT_EQ(g.phase, Phase::parameter_sync);
    EXPECT_EQ(g.deps, (std::vector<TaskRef>{{0, optimizer_index(rp.streams[0])}}));
  }
}

TEST(DataParallel, Zero1OptimizerUpdatesOneShard) {
  const Program p = build(config(DataParallelKind::zero1));
  const double shard = model::parameter_count(small_model()) / 4;
  const Stream& comp = p.ranks[0].streams[0];
  EXPECT_DOUBLE_EQ(comp.tasks[optimizer_index(comp)].duration,
                   model::op_duration(model::optimizer_step_op(shard), small_device()));
}

TEST(DataParallel, Zero1WithShardGroupsReducesInsideThemAndAcrossReplicas) {
  DataParallelConfig c = config(DataParallelKind::zero1);  // one bucket
  c.shard = 2;                                              // groups {0, 1} and {2, 3}
  const Program p = build(c);
  EXPECT_NO_THROW(validate(p));
  const double params = model::parameter_count(small_model());
  for (const auto& rp : p.ranks) {
    const Stream& comm = rp.streams[1];
    ASSERT_EQ(comm.tasks.size(), 3u) << "rank " << rp.rank;
    const auto& scatter = p.collectives[comm.tasks[0].collective];
    const auto& across = p.collectives[comm.tasks[1].collective];
    const auto& gather = p.collectives[comm.tasks[2].collective];
    const int g = rp.rank / 2, j = rp.rank % 2;
    EXPECT_EQ(scatter.op, Op::reduce_scatter);
    EXPECT_EQ(scatter.group, (std::vector<int>{2 * g, 2 * g + 1}));
    EXPECT_EQ(across.op, Op::all_reduce);  // this rank's half of the gradients, with its replica
    EXPECT_EQ(across.group, (std::vector<int>{j, 2 + j}));
    EXPECT_DOUBLE_EQ(across.size, scatter.size / 2);
    EXPECT_EQ(gather.op, Op::all_gather);
    EXPECT_EQ(gather.group, scatter.group);
    EXPECT_DOUBLE_EQ(gather.size, 2 * params);
  }
  const Stream& comp = p.ranks[0].streams[0];  // the optimizer updates half the parameters
  EXPECT_DOUBLE_EQ(comp.tasks[optimizer_index(comp)].duration,
                   model::op_duration(model::optimizer_step_op(params / 2), small_device()));
}

TEST(DataParallel, Zero2ReduceScattersAfterEveryMicroBatchsBackward) {
  // Gradients are sharded too: a rank keeps only its shard's accumulation, so every micro-batch's
  // gradients are reduce-scattered during its backward (ZeRO-1 waits for the last).
  const Program z1 = build(config(DataParallelKind::zero1, 60000));
  const Program z2 = build(config(DataParallelKind::zero2, 60000));
  const int buckets = gradient_collectives(z1);
  ASSERT_GT(buckets, 1);
  EXPECT_EQ(gradient_collectives(z2), 3 * buckets);  // accumulation 3
  EXPECT_NO_THROW(validate(z2));
  const Stream& comp = z2.ranks[0].streams[0];
  const Stream& comm = z2.ranks[0].streams[1];
  ASSERT_EQ(comm.tasks.size(), static_cast<std::size_t>(3 * buckets + 1));
  for (int mb = 0; mb < 3; ++mb)
    for (int b = 0; b < buckets; ++b) {
      const Task& t = comm.tasks[static_cast<std::size_t>(mb * buckets + b)];
      EXPECT_EQ(z2.collectives[t.collective].op, Op::reduce_scatter);
      ASSERT_EQ(t.deps.size(), 1u);  // waits for its own micro-batch's bucket
      EXPECT_EQ(comp.tasks[t.deps[0].index].name,
                "backward mb" + std::to_string(mb) + " bucket " + std::to_string(b));
    }
  EXPECT_EQ(z2.collectives[comm.tasks.back().collective].op, Op::all_gather);
}

TEST(DataParallel, DdpAllReducesAndNeverGathers) {
  const Program p = build(config(DataParallelKind::ddp, 60000));
  ASSERT_GT(p.collectives.size(), 1u);
  for (const auto& c : p.collectives) EXPECT_EQ(c.op, Op::all_reduce) << c.name;
  for (const auto& rp : p.ranks)
    for (const auto& t : rp.streams[1].tasks) EXPECT_EQ(t.phase, Phase::gradient_sync);
  const Stream& comp = p.ranks[0].streams[0];
  EXPECT_DOUBLE_EQ(comp.tasks[optimizer_index(comp)].duration,
                   model::op_duration(
                       model::optimizer_step_op(model::parameter_count(small_model())),
                       small_device()));
}

TEST(DataParallel, BucketCountShrinksAsBucketsGrow) {
  // One parameter per bucket: the head's few parameters, each of the 4 layers and the embedding
  // each close a bucket (4 + 2); past the whole model there is one bucket.
  const double layer = model::parameters_per_layer(small_model());
  int previous = gradient_collectives(build(config(DataParallelKind::ddp, 1)));
  EXPECT_EQ(previous, 4 + 2);
  for (double elements : {layer, 2 * layer, 3 * layer, 1e12}) {
    const int buckets = gradient_collectives(build(config(DataParallelKind::ddp, elements)));
    EXPECT_LE(buckets, previous) << elements;
    previous = buckets;
  }
  EXPECT_EQ(previous, 1);
}

TEST(DataParallel, EachBucketWaitsForItsBackwardAndTheOptimizerForEveryBucket) {
  for (auto kind : {DataParallelKind::ddp, DataParallelKind::zero1}) {
    const Program p = build(config(kind, 60000));
    const int buckets = gradient_collectives(p);
    for (const auto& rp : p.ranks) {
      const Stream& comp = rp.streams[0];
      const Stream& comm = rp.streams[1];
      std::vector<TaskRef> gradient_tasks;
      for (int b = 0; b < buckets; ++b) {
        const Task& t = comm.tasks[b];
        EXPECT_EQ(t.collective, b);
        ASSERT_EQ(t.deps.size(), 1u);
        EXPECT_EQ(t.deps[0].stream, 0);
        EXPECT_EQ(comp.tasks[t.deps[0].index].name, "backward mb2 bucket " + std::to_string(b));
        gradient_tasks.push_back({1, b});
      }
      EXPECT_EQ(comp.tasks[optimizer_index(comp)].deps, gradient_tasks);
    }
  }
}

TEST(DataParallel, ProgramsValidate) {
  for (auto kind : {DataParallelKind::ddp, DataParallelKind::zero1})
    for (double bucket : {1.0, 60000.0, 1e12}) {
      DataParallelConfig c = config(kind, bucket);
      EXPECT_NO_THROW(validate(build(c)));
      c.accumulation = 1;
      EXPECT_NO_THROW(validate(build(c)));
    }
}

// ---- validate() on hand-made programs --------------------------------------------------------

/// Two ranks, each with a communication stream running the given collectives in order.
Program two_ranks(const std::vector<int>& order0, const std::vector<int>& order1) {
  Program p;
  p.collectives = {{"a", Op::all_reduce, 1e6, {0, 1}}, {"b", Op::all_reduce, 1e6, {0, 1}}};
  for (const auto* order : {&order0, &order1}) {
    RankProgram rp;
    rp.rank = static_cast<int>(p.ranks.size());
    rp.streams.push_back({"communication", StreamKind::communication, {}});
    for (int c : *order)
      rp.streams[0].tasks.push_back({"c", TaskKind::collective, Phase::gradient_sync, 0, c, {}});
    p.ranks.push_back(rp);
  }
  return p;
}

DataParallelConfig offloading(double bucket_elements = 1e12) {
  DataParallelConfig c = config(DataParallelKind::ddp, bucket_elements);
  c.activation_checkpointing = true;
  c.activation_offloading = true;
  c.activation_memory = 50;
  return c;
}

TEST(DataParallel, NoCopyStreamWithoutOffloading) {
  EXPECT_EQ(build(config(DataParallelKind::ddp)).ranks[0].streams.size(), 2u);
}

TEST(DataParallel, OffloadingCopiesEachLayerInputToHostAndBackPerMicroBatch) {
  const Program prog = build(offloading());
  validate(prog);
  const auto& r = prog.ranks[0];
  ASSERT_EQ(r.streams.size(), 3u);
  const auto& comp = r.streams[0];
  const auto& copy = r.streams[2];
  EXPECT_EQ(copy.kind, StreamKind::copy);
  // 4 layers x 3 micro-batches, each offloaded and fetched back: 24 copies of b x s x h x 2 B.
  ASSERT_EQ(copy.tasks.size(), 24u);
  for (const auto& t : copy.tasks) {
    EXPECT_EQ(t.kind, TaskKind::host_copy);
    EXPECT_DOUBLE_EQ(t.copy_bytes, 2.0 * 2 * 32 * 64);
  }
  EXPECT_EQ(find_task(copy, "offload input layer 0 mb1").copy_direction, CopyDirection::to_host);
  EXPECT_EQ(find_task(copy, "fetch input layer 0 mb1").copy_direction, CopyDirection::to_device);
  // The offload follows its layer's forward; a forward waits for the offload two layers back.
  EXPECT_TRUE(waits_for(find_task(copy, "offload input layer 1 mb0"), 0, index_of(comp, "forward layer 1 mb0")));
  EXPECT_TRUE(waits_for(find_task(comp, "forward layer 2 mb0"), 2, index_of(copy, "offload input layer 0 mb0")));
  // A layer's backward waits for its fetch, which starts once the backward two units later is
  // done (it overlaps the one in between); the first two fetches start right after the offloads.
  EXPECT_TRUE(waits_for(find_task(comp, "backward layer 1 mb0"), 2, index_of(copy, "fetch input layer 1 mb0")));
  EXPECT_TRUE(waits_for(find_task(copy, "fetch input layer 1 mb0"), 0, index_of(comp, "backward layer 3 mb0")));
  EXPECT_TRUE(waits_for(find_task(copy, "fetch input layer 2 mb0"), 0, index_of(comp, "backward head mb0")));
  EXPECT_TRUE(find_task(copy, "fetch input layer 3 mb0").deps.empty());
  // Memory: allocated by the embedding's forward, freed by its backward.
  EXPECT_DOUBLE_EQ(find_task(comp, "forward embedding mb2").alloc, 50);
  EXPECT_DOUBLE_EQ(find_task(comp, "backward embedding mb2").release, 50);
}

TEST(DataParallel, OffloadingKeepsTheComputeAndTheBucketsOfThePlainProgram) {
  const Program prog = build(offloading(3e4));
  validate(prog);
  DataParallelConfig checkpointing = config(DataParallelKind::ddp, 3e4);
  checkpointing.activation_checkpointing = true;
  const Program plain_ckpt = build(checkpointing);
  // The same work (the recompute included), split by unit.
  Seconds a = 0, b = 0;
  for (const auto& t : plain_ckpt.ranks[0].streams[0].tasks) a += t.duration;
  for (const auto& t : prog.ranks[0].streams[0].tasks) b += t.duration;
  EXPECT_NEAR(a, b, 1e-9 * a);
  // The same buckets, each reduced once the unit that completes it is done.
  ASSERT_EQ(prog.collectives.size(), plain_ckpt.collectives.size());
  ASSERT_GT(prog.ranks[0].streams[1].tasks.size(), 1u);
  const auto& comp = prog.ranks[0].streams[0];
  for (const auto& t : prog.ranks[0].streams[1].tasks) {
    if (t.phase != Phase::gradient_sync) continue;
    ASSERT_EQ(t.deps.size(), 1u);
    EXPECT_EQ(comp.tasks[static_cast<std::size_t>(t.deps[0].index)].name.str().rfind("backward ", 0), 0u);
    EXPECT_NE(comp.tasks[static_cast<std::size_t>(t.deps[0].index)].name.str().find("mb2"), std::string::npos);
  }
}

TEST(DataParallel, TransformerEngineFp8ReducesTheAmaxesAfterEveryPass) {
  // TE's delayed scaling (model/fp8_amax_reduction.hpp): every forward and every backward ends
  // with a concat, a MAX all-reduce of the 4 layers' amaxes over every rank and the update, which
  // what follows waits for; with tp_only_amax_red the group is one rank, so the kernels alone.
  plan::TrainingPlan plan;
  plan.linear_precision = plan::LinearPrecision::fp8;
  DataParallelConfig c = config(DataParallelKind::zero1);
  c.fp8 = fp8_linears_of(plan);
  c.fp8_amax_reduction = true;
  const auto device = model::load_device_profile("tests/data/fp8/device.json");
  const Program prog = build_data_parallel(small_model(), device, c);
  validate(prog);
  const auto& r = prog.ranks[1];
  ASSERT_EQ(r.streams.size(), 3u);
  const auto& amax = r.streams[2];
  ASSERT_EQ(amax.tasks.size(), 6u);  // 3 micro-batches
  for (const auto& t : amax.tasks) {
    const auto& call = prog.collectives[static_cast<std::size_t>(t.collective)];
    EXPECT_EQ(call.op, Op::all_reduce);
    EXPECT_EQ(call.group, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_DOUBLE_EQ(call.size, t.phase == Phase::forward ? 4 * 21 * 4.0 : 4 * 14 * 4.0);
  }
  const auto& comp = r.streams[0];
  const int forward = index_of(comp, "forward mb1");
  EXPECT_EQ(comp.tasks[static_cast<std::size_t>(forward + 1)].name.str(), "fp8 amax concat forward mb1");
  const Task& update = comp.tasks[static_cast<std::size_t>(forward + 2)];
  EXPECT_EQ(update.name.str(), "fp8 amax and scale update forward mb1");
  EXPECT_TRUE(waits_for(update, 2, 2));
  EXPECT_EQ(comp.tasks[static_cast<std::size_t>(forward + 3)].name.str(), "backward mb1");
  c.fp8_amax_tp_only = true;
  const Program tp_only = build_data_parallel(small_model(), device, c);
  validate(tp_only);
  EXPECT_EQ(tp_only.ranks[1].streams.size(), 2u);
  EXPECT_EQ(index_of(tp_only.ranks[1].streams[0], "fp8 amax and scale update backward mb2") + 1,
            optimizer_index(tp_only.ranks[1].streams[0]));
}

TEST(Validate, SameOrderOnEveryRankPasses) { EXPECT_NO_THROW(validate(two_ranks({0, 1}, {0, 1}))); }

TEST(Validate, DifferentOrdersWouldDeadlock) {
  try {
    validate(two_ranks({0, 1}, {1, 0}));
    ADD_FAILURE() << "expected an InvariantError";
  } catch (const InvariantError& e) {
    EXPECT_NE(std::string(e.what()).find("different orders"), std::string::npos) << e.what();
  }
}

TEST(Validate, CollectivesOnDifferentStreamsNeedNoCommonOrder) {
  // Rank 1 issues b on a second stream (interleaved pipelines send on one stream per chunk):
  // both streams can progress, so issuing b before a there cannot deadlock.
  Program p = two_ranks({0, 1}, {0});
  auto& second = p.ranks[1].streams.emplace_back(Stream{"p2p", StreamKind::communication, {}});
  second.tasks.push_back(p.ranks[1].streams[0].tasks[0]);
  second.tasks[0].collective = 1;
  EXPECT_NO_THROW(validate(p));
}

TEST(Validate, CollectiveMissingOnAMember) {
  EXPECT_THROW(validate(two_ranks({0, 1}, {0})), InvariantError);
}

TEST(Validate, CollectiveTwiceOnARank) {
  EXPECT_THROW(validate(two_ranks({0, 1, 1}, {0, 1})), InvariantError);
}

TEST(Validate, DependencyOutOfRange) {
  Program p = two_ranks({0, 1}, {0, 1});
  p.ranks[1].streams[0].tasks[1].deps = {{0, 5}};
  EXPECT_THROW(validate(p), InvariantError);
  p.ranks[1].streams[0].tasks[1].deps = {{3, 0}};
  EXPECT_THROW(validate(p), InvariantError);
}

TEST(Validate, UnknownCollective) {
  EXPECT_THROW(validate(two_ranks({0, 1, 2}, {0, 1, 2})), InvariantError);
}

}  // namespace
}  // namespace trainsim::program

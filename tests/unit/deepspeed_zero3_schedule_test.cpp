// DeepSpeed 0.3 ZeRO-3 programs (program/deepspeed_zero3_schedule.hpp), checked as plain data:
// one gather per parameter, host synchronizes before and after them, prefetch of the next
// parameter, release and reuse, gradient all-reduces in buckets on the same NCCL stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "program/build_program.hpp"
#include "support/fixtures.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::waits_for;

enum { kCompute = 0, kNccl = 1 };

/// Two layers of hidden 64: weights QKV 12288, attention output 4096, MLP in and out 16384
/// elements; the thresholds are scaled down so that they are gathered.
ScheduleInputs inputs(long world) {
  ScheduleInputs in;
  in.model = {"tiny", 2, 64, 4, 256, 100, 16, false};
  in.plan.sharding = plan::Sharding::zero3;
  in.plan.zero3_implementation = plan::Zero3Implementation::deepspeed_0_3;
  in.plan.micro_batch = 2;
  in.plan.activation_checkpointing = true;
  auto& ds = in.plan.deepspeed_zero3;
  ds.param_persistence_threshold = 1000;  // word table 6400, position table 1024: gathered
  ds.prefetch_bucket_size = 1;            // one parameter ahead
  ds.max_live_parameters = 1e9;
  ds.max_reuse_distance = 0;              // released after every use
  ds.reduce_bucket_size = 20000;
  EXPECT_TRUE(plan::precision_recipe("amp", in.plan.precision));
  in.layout = plan::layout_of(in.plan, world, 4);
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10}};
  return in;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

/// Index of the first task on `s` whose name starts with `prefix`.
int index_of(const Stream& s, const std::string& prefix) {
  for (std::size_t i = 0; i < s.tasks.size(); ++i)
    if (starts_with(s.tasks[i].name.str(), prefix)) return static_cast<int>(i);
  ADD_FAILURE() << "no task " << prefix << "... on " << s.name;
  return 0;
}

long count(const Stream& s, const std::string& prefix) {
  return std::count_if(s.tasks.begin(), s.tasks.end(),
                       [&](const Task& t) { return starts_with(t.name.str(), prefix); });
}

TEST(DeepSpeedZero3Schedule, OneGatherPerParameterOnTheStreamTheReductionsUse) {
  const Program prog = build_program(inputs(4));
  validate(prog);
  ASSERT_EQ(prog.ranks.size(), 4u);
  const auto& r = prog.ranks[0];
  ASSERT_EQ(r.streams.size(), 2u);
  // Submodules: embedding, 2 x (QKV, attention output, MLP in, MLP out), head. Uses: 10
  // forwards, 8 recomputes, 10 backwards, then the optimizer.
  EXPECT_EQ(r.streams[kCompute].tasks.size(), 29u);
  // Released after every use: each of the 8 layer weights is gathered for its forward, its
  // recomputation and its backward; the word table for the embedding, the head's forward and
  // backward, the embedding's backward; the position table twice.
  EXPECT_EQ(count(r.streams[kNccl], "all-gather layer 0 qkv weight"), 3);
  EXPECT_EQ(count(r.streams[kNccl], "all-gather word embedding"), 4);
  EXPECT_EQ(count(r.streams[kNccl], "all-gather position embedding"), 2);
  // After the optimizer step, the persistent parameters (each layer's 4 biases and 2 x 2 norm
  // tensors) in one gather.
  EXPECT_EQ(count(r.streams[kNccl], "all-gather 16 persistent parameters (step)"), 1);
  EXPECT_EQ(count(r.streams[kNccl], "all-gather"), 8 * 3 + 4 + 2 + 1);
  const Task& g = r.streams[kNccl].tasks[index_of(r.streams[kNccl], "all-gather layer 1 ffn_in weight")];
  const CollectiveCall& call = prog.collectives[g.collective];
  EXPECT_EQ(call.op, collective::Op::all_gather);
  EXPECT_DOUBLE_EQ(call.size, 64 * 256 * 2.0);  // the weight, fp16 on the wire
  EXPECT_EQ(call.group, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(count(r.streams[kNccl], "all-reduce gradient bucket"), count(r.streams[kNccl], "all-reduce"));
  EXPECT_GT(count(r.streams[kNccl], "all-reduce gradient bucket"), 0);
}

TEST(DeepSpeedZero3Schedule, ThePrefetchedWeightOverlapsTheSubmoduleBeforeIt) {
  const Program prog = build_program(inputs(4));
  const auto& r = prog.ranks[1];
  const auto& comp = r.streams[kCompute];
  const auto& nccl = r.streams[kNccl];
  // Entering QKV, the host gathers the attention output's weight (one parameter ahead) and only
  // then computes QKV: the two overlap, ...
  const int prefetch = index_of(nccl, "all-gather layer 0 attn_out weight (prefetch for forward layer 0 qkv mb0)");
  const int qkv = index_of(comp, "forward layer 0 qkv mb0");
  EXPECT_FALSE(waits_for(comp.tasks[qkv], kNccl, prefetch));
  // ... after a device synchronize: the prefetch waits for what ran before (the gather of QKV).
  EXPECT_TRUE(waits_for(nccl.tasks[prefetch], kNccl, prefetch - 1));
  // Entering the attention output, the fetch synchronizes: it waits for the gather and for QKV.
  const Task& out = comp.tasks[index_of(comp, "forward layer 0 attn_out mb0")];
  EXPECT_TRUE(waits_for(out, kNccl, prefetch));
  EXPECT_TRUE(waits_for(out, kCompute, qkv));
}

TEST(DeepSpeedZero3Schedule, AboveMaxLiveParametersEveryGatherIsSynchronous) {
  ScheduleInputs in = inputs(4);
  in.plan.deepspeed_zero3.max_live_parameters = 1;  // no prefetch
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& nccl = prog.ranks[0].streams[kNccl];
  EXPECT_EQ(count(nccl, "all-gather layer 1 ffn_out weight (prefetch"), 0);
  // The gather starts after the submodule before it, and the submodule waits for it.
  const int g = index_of(nccl, "all-gather layer 1 ffn_out weight (forward layer 1 ffn_out mb0)");
  const int before = index_of(comp, "forward layer 1 ffn_in mb0");
  EXPECT_TRUE(waits_for(nccl.tasks[g], kCompute, before));
  EXPECT_TRUE(waits_for(comp.tasks[before + 1], kNccl, g));
}

TEST(DeepSpeedZero3Schedule, ParametersReusedWithinTheDistanceStayGathered) {
  ScheduleInputs in = inputs(4);
  in.plan.deepspeed_zero3.max_reuse_distance = 1e12;
  const Program prog = build_program(in);
  validate(prog);
  // Every parameter is gathered once (8 layer weights, the word and position tables), except the
  // tied word table: the head, not used again in the step, releases it after its backward and
  // the embedding's backward gathers it again.
  EXPECT_EQ(count(prog.ranks[0].streams[kNccl], "all-gather"), 11 + 1);  // + the persistent ones
  EXPECT_EQ(count(prog.ranks[0].streams[kNccl], "all-gather word embedding"), 2);
}

TEST(DeepSpeedZero3Schedule, GradientsAreAllReducedInBucketsAndTheStepWaitsForThem) {
  const ScheduleInputs in = inputs(4);
  const Program prog = build_program(in);
  const auto& comp = prog.ranks[2].streams[kCompute];
  const auto& nccl = prog.ranks[2].streams[kNccl];
  double reduced = 0;
  int last = -1;
  for (std::size_t i = 0; i < nccl.tasks.size(); ++i) {
    if (nccl.tasks[i].collective < 0) continue;
    const CollectiveCall& c = prog.collectives[nccl.tasks[i].collective];
    if (c.op != collective::Op::all_reduce) continue;
    EXPECT_LE(c.size, in.plan.deepspeed_zero3.reduce_bucket_size * 2);
    reduced += c.size;
    last = static_cast<int>(i);
    // Flattened and scaled before, each gradient copied back out after, on the same stream.
    EXPECT_TRUE(starts_with(nccl.tasks[i - 1].name.str(), "flatten and scale " + c.name.str()));
    EXPECT_TRUE(starts_with(nccl.tasks[i + 1].name.str(), "copy back " + c.name.str()));
    EXPECT_GT(nccl.tasks[i - 1].duration, 0);
    EXPECT_GT(nccl.tasks[i + 1].duration, 0);
  }
  // Every gradient once, fp16 on the wire.
  EXPECT_DOUBLE_EQ(reduced, model::parameter_count(in.model) * 2);
  // The first bucket (layer 1's MLP output weight, biases and norms) is flushed by the gradient
  // that overflows it, the MLP input weight's, and overlaps that backward.
  const Task& ar = nccl.tasks[index_of(nccl, "flatten and scale all-reduce gradient bucket 0")];
  EXPECT_TRUE(waits_for(ar, kCompute, index_of(comp, "backward layer 1 ffn_out mb0")));
  const int overflowing = index_of(comp, "backward layer 1 ffn_in mb0");
  for (const auto& d : ar.deps) EXPECT_FALSE(d.stream == kCompute && d.index >= overflowing);
  const Task& step = comp.tasks.back();
  EXPECT_EQ(step.phase, Phase::optimizer);
  EXPECT_TRUE(waits_for(step, kNccl, last + 1));  // the last copy back
}

TEST(DeepSpeedZero3Schedule, WithoutCheckpointingNoRecompute) {
  ScheduleInputs in = inputs(4);
  in.plan.activation_checkpointing = false;
  const Program prog = build_program(in);
  validate(prog);
  EXPECT_EQ(count(prog.ranks[0].streams[kCompute], "recompute"), 0);
  EXPECT_EQ(count(prog.ranks[0].streams[kNccl], "all-gather layer 0 qkv weight"), 2);
}

// Host loops over the ranks of the group (Init._allgather_param's narrow() per rank, PyTorch's
// copy_ per rank back into the all_gather list): host tasks that grow with the group.
TEST(DeepSpeedZero3Schedule, EachGatherPaysHostLoopsOverTheRanksOfItsGroup) {
  auto build = [](long world) {
    ScheduleInputs in = inputs(world);
    in.device.eager_view_call = 1e-3;
    in.device.eager_copy_call = 2e-3;
    return build_program(in);
  };
  const Program four = build(4);
  validate(four);
  const auto& r = four.ranks[0];
  ASSERT_EQ(r.streams.size(), 3u);
  const int kHost = 2;
  const auto& comp = r.streams[kCompute];
  const auto& nccl = r.streams[kNccl];
  const auto& host = r.streams[kHost];
  EXPECT_EQ(host.kind, StreamKind::host);
  const std::string what = "all-gather layer 0 attn_out weight (prefetch for forward layer 0 qkv mb0)";
  const int g = index_of(nccl, what);
  const int views = index_of(host, "host: 4 views for " + what);
  const int copies = index_of(host, "host: 4 copy calls for " + what);
  EXPECT_EQ(host.tasks[views].kind, TaskKind::host);
  EXPECT_DOUBLE_EQ(host.tasks[views].duration, 4 * 1e-3);
  EXPECT_DOUBLE_EQ(host.tasks[copies].duration, 4 * 2e-3);
  // The gather follows the loop of views; the buffer was zeroed and copied out on its stream.
  EXPECT_TRUE(waits_for(nccl.tasks[g], kHost, views));
  EXPECT_TRUE(starts_with(nccl.tasks[g - 1].name.str(), "zero buffer for " + what));
  EXPECT_TRUE(starts_with(nccl.tasks[g + 1].name.str(), "copy-out " + what));
  EXPECT_EQ(nccl.tasks[g + 1].kind, TaskKind::compute);
  auto after = [](const Task& t, int stream, int index) {
    return std::any_of(t.deps.begin(), t.deps.end(),
                       [&](const TaskRef& d) { return d.stream == stream && d.index >= index; });
  };
  // QKV, launched once the prefetch returns, waits for the host's copy calls but overlaps the
  // gather and its copies; the attention output, whose fetch synchronizes, waits for the copies.
  const Task& qkv = comp.tasks[index_of(comp, "forward layer 0 qkv mb0")];
  EXPECT_TRUE(after(qkv, kHost, copies));
  EXPECT_FALSE(after(qkv, kNccl, g));
  // Whether task (stream, index) waits, directly or through others, for task (s, i).
  std::function<bool(int, int, int, int)> reaches = [&](int stream, int index, int st, int i) {
    if (stream == st) return index >= i;
    for (const auto& d : r.streams[stream].tasks[index].deps)
      if (reaches(d.stream, d.index, st, i)) return true;
    return index > 0 && reaches(stream, index - 1, st, i);
  };
  EXPECT_TRUE(reaches(kCompute, index_of(comp, "forward layer 0 attn_out mb0"), kNccl, g + 1));
  EXPECT_FALSE(reaches(kCompute, index_of(comp, "forward layer 0 qkv mb0"), kNccl, g));
  // Twice the ranks: the same gathers, twice the host time each.
  // (but for the copies of the rank's own persistent shards, one per parameter).
  const Program eight = build(8);
  validate(eight);
  const auto& host8 = eight.ranks[0].streams[kHost];
  ASSERT_EQ(host8.tasks.size(), host.tasks.size());
  for (std::size_t i = 0; i < host.tasks.size(); ++i)
    if (host.tasks[i].name.str().find("shard copies") == std::string::npos) {
      EXPECT_DOUBLE_EQ(host8.tasks[i].duration, 2 * host.tasks[i].duration) << host.tasks[i].name.str();
    }
}

// _post_step re-gathers the persistent parameters that the end of the backward partitioned: one
// gather after the optimizer, then a host loop of 3 views and a copy per parameter and rank.
TEST(DeepSpeedZero3Schedule, TheStepGathersThePersistentParametersAgainWithAHostLoopPerRank) {
  ScheduleInputs in = inputs(4);
  in.device.eager_view_call = 1e-3;
  in.device.eager_copy_call = 2e-3;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[3];
  const int kHost = 2;
  const auto& comp = r.streams[kCompute];
  const auto& nccl = r.streams[kNccl];
  const auto& host = r.streams[kHost];
  const std::string what = "all-gather 16 persistent parameters (step)";
  const int g = index_of(nccl, what);
  const int step = index_of(comp, "optimizer step");
  const CollectiveCall& call = prog.collectives[nccl.tasks[g].collective];
  EXPECT_EQ(call.op, collective::Op::all_gather);
  // Per layer: biases 192 + 64 + 256 + 64, norms 4 x 64 elements, fp16; each divides by 4.
  EXPECT_DOUBLE_EQ(call.size, 2 * (192 + 64 + 256 + 64 + 4 * 64) * 2.0);
  // The gather carries the updated shards: it follows the optimizer step and the host's loops
  // of views (one per rank) and shard copies (one per parameter), which overlap the step.
  EXPECT_TRUE(waits_for(nccl.tasks[g], kCompute, step));
  const int views = index_of(host, "host: 4 views for " + what);
  const int shards = index_of(host, "host: 16 shard copies for " + what);
  EXPECT_DOUBLE_EQ(host.tasks[views].duration, 4 * 1e-3);
  EXPECT_DOUBLE_EQ(host.tasks[shards].duration, 16 * (1e-3 + 2e-3));
  EXPECT_TRUE(waits_for(nccl.tasks[g], kHost, shards));
  EXPECT_FALSE(waits_for(host.tasks[views], kCompute, step));
  // Then 16 parameters x 4 ranks slice copies: 3 views and a copy_ each, the step's last host
  // work, and the device copies after it.
  const int loop = index_of(host, "host: 64 slice copies into the persistent parameters");
  EXPECT_EQ(loop, static_cast<int>(host.tasks.size()) - 1);
  EXPECT_DOUBLE_EQ(host.tasks[loop].duration, 64 * (3 * 1e-3 + 2e-3));
  EXPECT_TRUE(waits_for(comp.tasks.back(), kHost, loop));
  EXPECT_TRUE(waits_for(comp.tasks.back(), kNccl, static_cast<int>(nccl.tasks.size()) - 1));
  // A parameter smaller than the group is copied from the ranks that hold part of it: at 128
  // ranks each 64-element tensor has one element per rank on 64 of them.
  ScheduleInputs big = inputs(128);
  big.device.eager_view_call = 1e-3;
  big.device.eager_copy_call = 2e-3;
  const Program wide = build_program(big);
  const auto& host128 = wide.ranks[0].streams[2];
  // Slices: 64-element tensors (12 of them) 64 each, 192 -> 2 per rank: 96, 256 -> 2: 128.
  const double slices = 2 * (64 + 64 + 96 + 128 + 4 * 64);
  EXPECT_DOUBLE_EQ(host128.tasks.back().duration, slices * (3 * 1e-3 + 2e-3));
  // Where the profile has the loop's iteration measured whole, that is what each slice costs.
  big.device.eager_slice_copy_iteration = 4e-3;
  const Program measured = build_program(big);
  EXPECT_DOUBLE_EQ(measured.ranks[0].streams[2].tasks.back().duration, slices * 4e-3);
}

TEST(DeepSpeedZero3Schedule, WithoutHostCallCostsNoHostStream) {
  const Program prog = build_program(inputs(4));
  for (const auto& s : prog.ranks[0].streams) EXPECT_NE(s.kind, StreamKind::host);
}

}  // namespace
}  // namespace trainsim::program

// Shared task bodies (RankProgram::body) as plain data: a PTD-P program built with them is the
// program built without them once materialised, folds the same way, and validate() rejects a
// shared body whose calls do not fit it.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "model/device_profile.hpp"
#include "program/build_program.hpp"
#include "program/rank_folding.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

void expect_same_tasks(const RankProgram& a, const RankProgram& b) {
  ASSERT_EQ(a.streams.size(), b.streams.size()) << "rank " << a.rank;
  EXPECT_EQ(a.resident, b.resident);
  for (std::size_t s = 0; s < a.streams.size(); ++s) {
    const auto& x = a.streams[s];
    const auto& y = b.streams[s];
    EXPECT_EQ(x.name, y.name);
    ASSERT_EQ(x.tasks.size(), y.tasks.size()) << "rank " << a.rank << " stream " << x.name;
    for (std::size_t i = 0; i < x.tasks.size(); ++i) {
      const Task& t = x.tasks[i];
      const Task& u = y.tasks[i];
      EXPECT_TRUE(t.name == u.name && t.kind == u.kind && t.phase == u.phase && t.duration == u.duration &&
                  t.collective == u.collective && t.deps == u.deps && t.alloc == u.alloc && t.release == u.release &&
                  t.workspace == u.workspace && t.copy_bytes == u.copy_bytes &&
                  t.copy_direction == u.copy_direction && t.kernels == u.kernels && t.host_sync == u.host_sync)
          << "rank " << a.rank << " " << x.name << " task " << i << " " << t.name;
    }
  }
}

void expect_sharing_changes_nothing(ScheduleInputs in) {
  in.share_task_bodies = false;
  const Program full = build_program(in);
  in.share_task_bodies = true;
  const Program shared = build_program(in);
  ASSERT_TRUE(shares_bodies(shared));
  EXPECT_FALSE(shares_bodies(full));
  EXPECT_NO_THROW(validate(shared));
  // The same calls in the same order, and every rank's tasks once its body is copied.
  ASSERT_EQ(shared.collectives.size(), full.collectives.size());
  for (std::size_t c = 0; c < full.collectives.size(); ++c) {
    EXPECT_EQ(shared.collectives[c].name, full.collectives[c].name);
    EXPECT_EQ(shared.collectives[c].op, full.collectives[c].op);
    EXPECT_EQ(shared.collectives[c].size, full.collectives[c].size);
    EXPECT_EQ(shared.collectives[c].group, full.collectives[c].group);
  }
  const Program copied = materialise(shared);
  EXPECT_FALSE(shares_bodies(copied));
  ASSERT_EQ(copied.ranks.size(), full.ranks.size());
  for (std::size_t r = 0; r < full.ranks.size(); ++r) expect_same_tasks(copied.ranks[r], full.ranks[r]);
  // Folding reads the classes off the sharing: the same classes and merged calls.
  const auto a = fold_ranks(full);
  const auto b = fold_ranks(shared);
  EXPECT_EQ(b.class_of_rank, a.class_of_rank);
  EXPECT_EQ(b.representative, a.representative);
  EXPECT_EQ(b.members, a.members);
  EXPECT_EQ(b.merged_of_call, a.merged_of_call);
  EXPECT_EQ(b.calls, a.calls);
  EXPECT_EQ(b.classes_of, a.classes_of);
  for (int r : b.representative) EXPECT_LT(shared.ranks[static_cast<std::size_t>(r)].body, 0);
}

TEST(SharedBody, EachStagesRanksShareItsFirstRanksBody) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.share_task_bodies = true;
  const Program p = build_program(in);
  // TP 2 x DP 2 per stage: ranks 1-3 run rank 0's tasks, 5-7 rank 4's.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p.ranks[static_cast<std::size_t>(r)].body, r % 4 == 0 ? -1 : r / 4 * 4);
  EXPECT_TRUE(p.ranks[1].streams.empty());
  EXPECT_EQ(&tasks_of(p, 6), &p.ranks[4]);
  // Rank 1 is rank 0's TP peer: the same TP calls; rank 2 the other replica: its own.
  EXPECT_EQ(calls_of(p, 1).size(), calls_of(p, 0).size());
  EXPECT_NE(calls_of(p, 2), calls_of(p, 0));
  // A TP peer takes its calls from its group's first rank, patched where they differ (its
  // stage-to-stage sends and data-parallel calls); that rank lists its own.
  EXPECT_EQ(p.ranks[1].calls_from, 0);
  EXPECT_EQ(p.ranks[3].calls_from, 2);
  EXPECT_EQ(p.ranks[2].calls_from, -1);
  EXPECT_TRUE(p.ranks[1].calls.empty());
  EXPECT_FALSE(p.ranks[1].call_patches.empty());
  EXPECT_LT(p.ranks[1].call_patches.size(), calls_of(p, 1).size());
  const auto peer = calls_of(p, 1), first = calls_of(p, 0);
  std::size_t differing = 0;
  for (std::size_t k = 0; k < peer.size(); ++k) differing += peer[k] != first[k] ? 1 : 0;
  EXPECT_GT(differing, 0U);
  EXPECT_LE(differing, p.ranks[1].call_patches.size());
}

TEST(SharedBody, PipelineProgramsAreTheFullOnesMaterialised) {
  expect_sharing_changes_nothing(testing_support::tiny_tp2_pp2_dp2());
}

TEST(SharedBody, HoldsWithZero1SequenceParallelismOffloadingAndTheMegatronOptimizer) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sharding = plan::Sharding::zero1;
  in.plan.sequence_parallel = true;
  in.plan.activation_checkpointing = true;
  in.plan.activation_offloading = true;
  in.plan.optimizer_implementation = plan::OptimizerImplementation::megatron_fp16;
  in.layout = plan::layout_of(in.plan, 16, 4);
  expect_sharing_changes_nothing(in);
}

// Transformer Engine's TP overlap adds the userbuffers ring inside each TP group: each step is
// one ring_exchange call over the group, so a TP group's ranks keep identical programs, share a
// body and fold into one class like the rest of the PTD-P program.
TEST(SharedBody, HoldsWithTpCommOverlap) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sharding = plan::Sharding::zero1;
  in.plan.sequence_parallel = true;
  in.plan.tp_comm_overlap = true;
  in.layout = plan::layout_of(in.plan, 16, 4);
  expect_sharing_changes_nothing(in);
  const auto f = fold_ranks(build_program(in));
  EXPECT_TRUE(f.folded());
  EXPECT_EQ(f.classes(), 2);  // one per stage
}

// Megatron-core's overlapped stage exchanges (interleaved) and Transformer Engine's amax
// all-reduces over the stage's TP x DP group, or its TP group: every rank of a stage makes the
// same requests in the same order, so sharing and folding hold.
TEST(SharedBody, HoldsWithOverlappedExchangesAndTransformerEngineAmaxReductions) {
  for (const bool tp_only : {false, true}) {
    ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
    in.plan.sharding = plan::Sharding::zero1;
    in.plan.sequence_parallel = true;
    in.plan.tp_comm_overlap = true;
    in.plan.pipeline = plan::PipelineSchedule::interleaved;
    in.plan.virtual_stages = 2;
    in.plan.overlap_p2p_comm = true;
    in.plan.linear_precision = plan::LinearPrecision::fp8;
    in.plan.fp8_amax_tp_only = tp_only;
    in.device = model::load_device_profile("tests/data/fp8/device.json");
    in.layout = plan::layout_of(in.plan, 16, 4);
    expect_sharing_changes_nothing(in);
    const auto f = fold_ranks(build_program(in));
    EXPECT_TRUE(f.folded());
    EXPECT_EQ(f.classes(), 2);  // one per stage
  }
}

// DeepSpeed's pipeline engine adds calls of its own (the TP re-gather of a stage's output before
// each backward, the tied all-reduce before the data-parallel one, the norm over the
// model-parallel group): the stage's other ranks must replay them in the same order.
TEST(SharedBody, HoldsWithDeepSpeedsPipelineEngineAndItsBf16Optimizer) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sharding = plan::Sharding::zero1;
  in.plan.zero1_gradient_all_reduce = true;
  in.plan.pipeline_engine = plan::PipelineEngine::deepspeed;
  ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", in.plan.precision));
  in.plan.gradient_buffers = plan::GradientBuffers::deepspeed_bf16_optimizer;
  in.layout = plan::layout_of(in.plan, 16, 4);
  expect_sharing_changes_nothing(in);
}

TEST(SharedBody, ValidateRejectsCallsThatDoNotFitTheBody) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.share_task_bodies = true;
  const Program p = build_program(in);
  // Rank 2 (the other replica's first rank) lists its calls; rank 1 takes rank 0's, patched.
  Program missing = p;
  missing.ranks[2].calls.pop_back();
  EXPECT_THROW(validate(missing), InvariantError);
  // A call of another shape at some place: the p2p send where the body has a TP call.
  const auto& body_calls = calls_of(p, 0);
  std::size_t k = 0;
  while (p.collectives[static_cast<std::size_t>(body_calls[k])].op == collective::Op::send_recv) ++k;
  std::size_t send = 0;
  while (p.collectives[send].op != collective::Op::send_recv) ++send;
  Program shape = p;
  shape.ranks[2].calls[k] = static_cast<int>(send);
  EXPECT_THROW(validate(shape), InvariantError);
  // And folding, which trusts the schedule's comparison of tasks but not of calls, falls back.
  EXPECT_FALSE(fold_ranks(shape).folded());
  // The same through a patch of rank 1, and a patch past the body's calls.
  Program patched = p;
  patched.ranks[1].call_patches = {{static_cast<int>(k), static_cast<int>(send)}};
  EXPECT_THROW(validate(patched), InvariantError);
  EXPECT_FALSE(fold_ranks(patched).folded());
  Program beyond = p;
  beyond.ranks[1].call_patches.push_back({static_cast<int>(body_calls.size()), 0});
  EXPECT_THROW(validate(beyond), InvariantError);
  EXPECT_FALSE(fold_ranks(beyond).folded());
  // Calls taken from a higher rank, or from a rank that takes its own from another.
  Program later = p;
  later.ranks[1].calls_from = 2;
  EXPECT_THROW(validate(later), InvariantError);
  EXPECT_FALSE(fold_ranks(later).folded());
  Program chained = p;
  chained.ranks[3].calls_from = 1;
  EXPECT_THROW(validate(chained), InvariantError);
  EXPECT_FALSE(fold_ranks(chained).folded());
  Program upward = p;
  upward.ranks[1].body = 2;  // a higher rank, itself sharing
  EXPECT_THROW(validate(upward), InvariantError);
}

}  // namespace
}  // namespace trainsim::program

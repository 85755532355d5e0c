// Pipeline orders (program/pipeline_schedule.hpp) as plain data, and a PTD-P program's shape.
#include <gtest/gtest.h>

#include "program/build_program.hpp"
#include "program/pipeline_schedule.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

std::string text(const std::vector<PipelineSlot>& order) {
  std::string s;
  for (const auto& o : order)
    s += (o.forward ? "F" : "B") + std::to_string(o.micro_batch) + (o.chunk ? "c" + std::to_string(o.chunk) : "") + " ";
  return s;
}

TEST(PipelineOrder, GpipeRunsEveryForwardFirst) {
  EXPECT_EQ(text(pipeline_order(plan::PipelineSchedule::gpipe, 4, 1, 3, 1)), "F0 F1 F2 B0 B1 B2 ");
}

TEST(PipelineOrder, OneFOneBWarmsUpWithPpMinusStageMinusOneForwards) {
  // Stage 0 of 4 with 6 micro-batches: 3 warm-up forwards, then alternate, then drain.
  EXPECT_EQ(text(pipeline_order(plan::PipelineSchedule::one_f_one_b, 4, 0, 6, 1)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  // The last stage alternates from the start.
  EXPECT_EQ(text(pipeline_order(plan::PipelineSchedule::one_f_one_b, 4, 3, 3, 1)), "F0 B0 F1 B1 F2 B2 ");
}

TEST(PipelineOrder, InterleavedFollowsMegatronsChunkGroups) {
  // pp 2, 2 chunks, 4 micro-batches, stage 1: warm-up (2-1-1)*2 + (2-1)*2 = 2 forwards; forward
  // slots go through chunk 0 for micro-batches 0-1, chunk 1 for 0-1, chunk 0 for 2-3, ...;
  // backward slots start with the last chunk.
  const auto order = pipeline_order(plan::PipelineSchedule::interleaved, 2, 1, 4, 2);
  EXPECT_EQ(text(order), "F0 F1 F0c1 B0c1 F1c1 B1c1 F2 B0 F3 B1 F2c1 B2c1 F3c1 B3c1 B2 B3 ");
  long forwards = 0, backwards = 0;
  for (const auto& o : order) (o.forward ? forwards : backwards)++;
  EXPECT_EQ(forwards, 8);
  EXPECT_EQ(backwards, 8);
}

TEST(PipelineProgram, TensorAndPipelineGroupsAndValidity) {
  const ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  ASSERT_TRUE(unsupported_plan(in).empty());
  const Program prog = build_program(in);
  validate(prog);
  ASSERT_EQ(prog.ranks.size(), 8u);
  EXPECT_EQ(prog.samples_per_step, 1 * 4 * 2);
  // Rank 1 = stage 0, dp 0, tp 1: its first TP all-reduce is with rank 0; its first activation
  // goes to rank 5 (stage 1, dp 0, tp 1).
  const auto& r = prog.ranks[1];
  EXPECT_EQ(prog.collectives[r.streams[1].tasks.front().collective].group, (std::vector<int>{0, 1}));
  const auto& send = r.streams[3 + 1].tasks.front();
  EXPECT_EQ(prog.collectives[send.collective].group, (std::vector<int>{1, 5}));
  // The data-parallel all-reduce after the flush joins the two replicas of the stage.
  EXPECT_EQ(prog.collectives[r.streams[2].tasks.front().collective].group, (std::vector<int>{1, 3}));
}

TEST(PipelineProgram, TorchDdpOverlapsOneAllReducePerLayerWithTheLastBackward) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pp = 1;
  in.plan.gradient_sync = plan::GradientSync::overlap_backward;
  in.layout = plan::layout_of(in.plan, 8, 4);  // tp 2 x dp 4
  in.stages = {{100, 10, 1}};
  ASSERT_TRUE(unsupported_plan(in).empty());
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[0];
  const auto& syncs = r.streams[2].tasks;
  ASSERT_EQ(syncs.size(), 4u);  // one per layer
  double bytes = 0;
  for (const auto& task : syncs) {
    const auto& call = prog.collectives[static_cast<std::size_t>(task.collective)];
    EXPECT_EQ(call.group, (std::vector<int>{0, 2, 4, 6}));
    bytes += call.size;
    // Each starts after a task of the last micro-batch's backward, not after the flush.
    ASSERT_EQ(task.deps.size(), 1u);
    const auto& dep = r.streams[static_cast<std::size_t>(task.deps[0].stream)].tasks[static_cast<std::size_t>(task.deps[0].index)];
    EXPECT_NE(dep.name.find("mb3"), std::string::npos) << dep.name;
  }
  // Every parameter's gradient once: (4 layers + embedding + head) / TP 2, 2 bytes each.
  const double params = 4 * model::parameters_per_layer(in.model) + model::embedding_parameters(in.model) +
                        model::head_parameters(in.model);
  EXPECT_DOUBLE_EQ(bytes, params / 2 * 2);
  // The optimizer step waits for all of them.
  EXPECT_EQ(r.streams[0].tasks.back().phase, Phase::optimizer);
  EXPECT_EQ(r.streams[0].tasks.back().deps.size(), 1u + 4u);
}

TEST(PipelineProgram, OverlappedGradientSyncWithPipelineStagesIsNotScheduled) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.gradient_sync = plan::GradientSync::overlap_backward;
  EXPECT_NE(unsupported_plan(in).find("overlapping backward"), std::string::npos) << unsupported_plan(in);
}

}  // namespace
}  // namespace trainsim::program

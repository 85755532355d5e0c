// Pipeline orders (program/pipeline_schedule.hpp) as plain data, and a PTD-P program's shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/pipeline_schedule.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

const Task& find(const Stream& s, const std::string& name) {
  auto it = std::find_if(s.tasks.begin(), s.tasks.end(), [&](const Task& t) { return t.name == name; });
  if (it == s.tasks.end()) ADD_FAILURE() << "no task " << name << " on " << s.name;
  return *it;
}

int index_of(const Stream& s, const std::string& name) { return static_cast<int>(&find(s, name) - s.tasks.data()); }

bool waits_for(const Task& t, int stream, int index) {
  return std::find(t.deps.begin(), t.deps.end(), TaskRef{stream, index}) != t.deps.end();
}

enum { kCompute = 0, kTensor = 1, kDataParallel = 2 };

/// The small PTD-P job with a sharding (and optionally a shard group) on `world` ranks.
ScheduleInputs sharded(plan::Sharding sharding, long world = 8, long shard_degree = 0) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sharding = sharding;
  in.plan.shard_degree = shard_degree;
  in.layout = plan::layout_of(in.plan, world, 4);
  return in;
}

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

TEST(PipelineProgram, Zero1ReduceScattersAfterTheFlushThenStepsTheShardThenGathers) {
  const ScheduleInputs in = sharded(plan::Sharding::zero1);
  ASSERT_TRUE(unsupported_plan(in).empty());
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0, dp 0, tp 1: its data-parallel group is {1, 3}
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel];
  ASSERT_EQ(dp.tasks.size(), 2u);
  const auto& rs = dp.tasks[0];
  const auto& ag = dp.tasks[1];
  EXPECT_EQ(prog.collectives[rs.collective].op, collective::Op::reduce_scatter);
  EXPECT_EQ(prog.collectives[rs.collective].group, (std::vector<int>{1, 3}));
  // After the flush: the reduce-scatter waits for the stage's last layer pass (its TP all-reduce).
  EXPECT_TRUE(waits_for(rs, kTensor, static_cast<int>(r.streams[kTensor].tasks.size()) - 1));
  // The optimizer (last on the compute stream) waits for it; the all-gather for the optimizer.
  const auto& step = comp.tasks.back();
  EXPECT_EQ(step.name, "optimizer step (shard)");
  EXPECT_TRUE(waits_for(step, kDataParallel, 0));
  EXPECT_EQ(prog.collectives[ag.collective].op, collective::Op::all_gather);
  EXPECT_EQ(prog.collectives[ag.collective].group, (std::vector<int>{1, 3}));
  EXPECT_TRUE(waits_for(ag, kCompute, static_cast<int>(comp.tasks.size()) - 1));
  // Stage 0 holds 2 layers and the embedding, split by TP 2; gradients and parameters in bf16.
  const double params =
      (2 * model::parameters_per_layer(in.model) + model::embedding_parameters(in.model)) / 2;
  EXPECT_DOUBLE_EQ(prog.collectives[rs.collective].size, 2 * params);
  EXPECT_DOUBLE_EQ(prog.collectives[ag.collective].size, 2 * params);
  // The optimizer steps half of what DDP's steps (dp 2).
  const Program ddp = build_program(testing_support::tiny_tp2_pp2_dp2());
  EXPECT_DOUBLE_EQ(step.duration, ddp.ranks[1].streams[kCompute].tasks.back().duration / 2);
  EXPECT_EQ(ddp.ranks[1].streams[kDataParallel].tasks.size(), 1u);  // DDP: one all-reduce, no gather
}

TEST(PipelineProgram, OverlappedReduceRunsInBucketsDuringTheLastMicroBatchsBackward) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.overlap_grad_reduce = true;  // bucket_elements 0: one bucket per layer pass
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel];
  // Stage 0 has 2 layers: 2 buckets, then the all-gather after the optimizer.
  ASSERT_EQ(dp.tasks.size(), 3u);
  EXPECT_EQ(dp.tasks[0].name, "gradient reduce-scatter bucket 0");
  EXPECT_TRUE(waits_for(dp.tasks[0], kCompute, index_of(comp, "backward mb3 c0 layer 0")));
  EXPECT_TRUE(waits_for(dp.tasks[1], kCompute, index_of(comp, "backward mb3 c0 layer 1")));
  // The first bucket is reduced while the stage's last layer pass still runs.
  EXPECT_LT(index_of(comp, "backward mb3 c0 layer 0"), index_of(comp, "backward mb3 c0 layer 1"));
  EXPECT_TRUE(waits_for(comp.tasks.back(), kDataParallel, 1));
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].op, collective::Op::all_gather);
  // Bucket sizes: a layer, then a layer and the embedding (its backward ends the stage).
  const double layer = model::parameters_per_layer(in.model) / 2;
  EXPECT_DOUBLE_EQ(prog.collectives[dp.tasks[0].collective].size, 2 * layer);
  EXPECT_DOUBLE_EQ(prog.collectives[dp.tasks[1].collective].size,
                   2 * (layer + model::embedding_parameters(in.model) / 2));
}

TEST(PipelineProgram, InterleavedChunksReduceWhenTheirOwnLastBackwardEnds) {
  ScheduleInputs in = sharded(plan::Sharding::none);
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;  // 1 layer per chunk
  in.plan.overlap_grad_reduce = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& dp = prog.ranks[0].streams[kDataParallel];
  ASSERT_EQ(dp.tasks.size(), 2u);  // DDP: an all-reduce per chunk, no gather
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].op, collective::Op::all_reduce);
  // Chunk 1's last backward comes first in backward order.
  EXPECT_TRUE(waits_for(dp.tasks[0], kCompute, index_of(comp, "backward mb3 c1 layer 0")));
  EXPECT_TRUE(waits_for(dp.tasks[1], kCompute, index_of(comp, "backward mb3 c0 layer 0")));
}

TEST(PipelineProgram, Zero1WithAShardGroupAllReducesTheShardAcrossReplicas) {
  // 16 ranks: TP 2 x PP 2 x DP 4, optimizer states sharded over groups of 2.
  const Program prog = build_program(sharded(plan::Sharding::zero1, 16, 2));
  validate(prog);
  const auto& dp = prog.ranks[0].streams[kDataParallel];  // stage 0, dp 0, tp 0
  ASSERT_EQ(dp.tasks.size(), 3u);
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].op, collective::Op::reduce_scatter);
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].group, (std::vector<int>{0, 2}));
  EXPECT_EQ(prog.collectives[dp.tasks[1].collective].op, collective::Op::all_reduce);
  EXPECT_EQ(prog.collectives[dp.tasks[1].collective].group, (std::vector<int>{0, 4}));
  EXPECT_DOUBLE_EQ(prog.collectives[dp.tasks[1].collective].size, prog.collectives[dp.tasks[0].collective].size / 2);
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].op, collective::Op::all_gather);
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].group, (std::vector<int>{0, 2}));
}

TEST(BuildProgram, PipelinesTakeZero1ButNotZero2) {
  EXPECT_TRUE(unsupported_plan(sharded(plan::Sharding::zero1)).empty());
  EXPECT_FALSE(unsupported_plan(sharded(plan::Sharding::zero2)).empty());
}

TEST(PipelineProgram, TensorParallelZero2ReduceScattersEveryMicroBatchsGradients) {
  // TP 2 x DP 4 (one stage), ZeRO-2: each micro-batch's backward reduce-scatters its gradients
  // over the data-parallel group as it produces them; then the shard's optimizer step, then the
  // parameter all-gather.
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pp = 1;
  in.plan.sharding = plan::Sharding::zero2;
  in.layout = plan::layout_of(in.plan, 8, 4);
  in.stages = {in.stages.front()};
  ASSERT_TRUE(unsupported_plan(in).empty()) << unsupported_plan(in);
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[0];
  const auto& dp = r.streams[kDataParallel].tasks;
  const long m = in.plan.accumulation;
  ASSERT_GT(m, 1);
  const long layers = in.model.layers;  // bucket_elements 0: a bucket per layer
  ASSERT_EQ(dp.size(), static_cast<std::size_t>(m * layers + 1));
  double reduced = 0;
  for (long k = 0; k < m; ++k)
    for (long l = 0; l < layers; ++l) {
      const auto& rs = dp[static_cast<std::size_t>(k * layers + l)];
      EXPECT_EQ(prog.collectives[rs.collective].op, collective::Op::reduce_scatter);
      EXPECT_EQ(prog.collectives[rs.collective].group, (std::vector<int>{0, 2, 4, 6}));
      reduced += prog.collectives[rs.collective].size;
      // It waits for a backward pass of its own micro-batch.
      ASSERT_EQ(rs.deps.size(), 1u);
      const auto& dep = r.streams[static_cast<std::size_t>(rs.deps[0].stream)].tasks[static_cast<std::size_t>(rs.deps[0].index)];
      EXPECT_NE(dep.name.str().find("mb" + std::to_string(k)), std::string::npos) << dep.name.str();
    }
  // Every micro-batch reduces every gradient (layers, embedding, head: TP 2, bf16).
  const double params = (layers * model::parameters_per_layer(in.model) + model::embedding_parameters(in.model) +
                         model::head_parameters(in.model)) / 2;
  EXPECT_DOUBLE_EQ(reduced, static_cast<double>(m) * 2 * params);
  EXPECT_EQ(prog.collectives[dp.back().collective].op, collective::Op::all_gather);
  EXPECT_EQ(r.streams[kCompute].tasks.back().name, "optimizer step (shard)");
}

TEST(PipelineProgram, SequenceParallelismGathersBeforeEachPassAndReduceScattersAfter) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program plain = build_program(in);
  in.plan.sequence_parallel = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& tensor = prog.ranks[0].streams[kTensor];
  const auto& plain_tensor = plain.ranks[0].streams[kTensor];
  ASSERT_EQ(tensor.tasks.size(), 2 * plain_tensor.tasks.size());
  for (std::size_t i = 0; i < plain_tensor.tasks.size(); ++i) {
    const auto& ag = prog.collectives[tensor.tasks[2 * i].collective];
    const auto& rs = prog.collectives[tensor.tasks[2 * i + 1].collective];
    const auto& ar = plain.collectives[plain_tensor.tasks[i].collective];
    EXPECT_EQ(ag.op, collective::Op::all_gather);
    EXPECT_EQ(rs.op, collective::Op::reduce_scatter);
    EXPECT_EQ(ar.op, collective::Op::all_reduce);
    // The same bytes on the wire: an all-reduce of S is a reduce-scatter and an all-gather of S.
    EXPECT_DOUBLE_EQ(ag.size, ar.size);
    EXPECT_DOUBLE_EQ(rs.size, ar.size);
    EXPECT_EQ(ag.group, (std::vector<int>{0, 1}));
  }
  // Stage 0's first pass: all-gather, then the layer, then its reduce-scatter, all in line.
  const int layer0 = index_of(comp, "forward mb0 c0 layer 0");
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(layer0)], kTensor, 0));
  EXPECT_TRUE(waits_for(tensor.tasks[1], kCompute, layer0));
  EXPECT_TRUE(waits_for(tensor.tasks[2], kTensor, 1));  // the next pass's all-gather
  // The elementwise work shrinks (norms and residuals on 1/tp of the sequence); the GEMMs do not.
  EXPECT_LT(comp.tasks[static_cast<std::size_t>(layer0)].duration,
            plain.ranks[0].streams[kCompute].tasks[static_cast<std::size_t>(layer0)].duration);
}

TEST(PipelineProgram, OffloadingCopiesEachLayerInputToHostAndBackOnACopyStream) {
  // TP 2 x DP 2, one stage of 4 layers (pipeline_schedule runs any TP or PP plan).
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pp = 1;
  in.plan.accumulation = 2;
  in.plan.activation_checkpointing = true;
  in.plan.activation_offloading = true;
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.stages = {{100, 10, 1}};
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[0];
  const auto& comp = r.streams[kCompute];
  ASSERT_EQ(r.streams.back().kind, StreamKind::copy);
  const int kCopy = static_cast<int>(r.streams.size()) - 1;
  const auto& copy = r.streams.back();
  ASSERT_EQ(copy.tasks.size(), 2u * 4u * 2u);  // 2 micro-batches x 4 layers, out and back
  EXPECT_DOUBLE_EQ(copy.tasks.front().copy_bytes, model::layer_input_bytes(in.model, {1, 2}));
  EXPECT_TRUE(waits_for(find(copy, "offload input mb0 c0 layer 1"), kCompute, index_of(comp, "forward mb0 c0 layer 1")));
  EXPECT_TRUE(waits_for(find(comp, "forward mb0 c0 layer 2"), kCopy, index_of(copy, "offload input mb0 c0 layer 0")));
  EXPECT_TRUE(waits_for(find(comp, "backward mb1 c0 layer 2"), kCopy, index_of(copy, "fetch input mb1 c0 layer 2")));
  // Prefetched one pass ahead: the fetch waits for the compute task two before its pass.
  EXPECT_TRUE(waits_for(find(copy, "fetch input mb1 c0 layer 2"), kCompute, index_of(comp, "backward mb1 c0 layer 0")));
  EXPECT_EQ(find(copy, "fetch input mb0 c0 layer 0").copy_direction, CopyDirection::to_device);
  // Without offloading there is no copy stream.
  in.plan.activation_offloading = false;
  EXPECT_NE(build_program(in).ranks[0].streams.back().kind, StreamKind::copy);
}

}  // namespace
}  // namespace trainsim::program

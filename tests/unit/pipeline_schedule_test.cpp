// Pipeline orders (program/pipeline_schedule.hpp) as plain data, and a PTD-P program's shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/checkpointing.hpp"
#include "model/compute_cost.hpp"
#include "model/device_profile.hpp"
#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/pipeline_exchanges.hpp"
#include "program/pipeline_schedule.hpp"
#include "support/pipeline_fixture.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::find_task;
using testing_support::index_of;
using testing_support::waits_for;

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

/// F: forward; B: whole backward; b: input gradients only; W: deferred weight gradients.
std::string zb_text(const std::vector<PipelineSlot>& order) {
  std::string s;
  for (const auto& o : order)
    s += (o.forward                                   ? "F"
          : o.part == PipelineSlot::Part::input       ? "b"
          : o.part == PipelineSlot::Part::weight      ? "W"
                                                      : "B") +
         std::to_string(o.micro_batch) + " ";
  return s;
}

TEST(PipelineOrder, ZeroBubbleH1DefersTheFirstStageIndexWeightGradientsIntoTheCoolDown) {
  // 4 stages, 6 micro-batches, the quick ZB-H1 of the paper's repository (95212f70): stage r
  // splits the backwards of its first r steady iterations, its last one and its cool-down's,
  // and runs a queued W after the last steady send and after each cool-down send from
  // remaining + i >= r on, the rest at the end. Stage 0 runs 1F1B.
  using plan::PipelineSchedule;
  EXPECT_EQ(zb_text(pipeline_order(PipelineSchedule::zero_bubble_h1, 4, 0, 6, 1)),
            zb_text(pipeline_order(PipelineSchedule::one_f_one_b, 4, 0, 6, 1)));
  EXPECT_EQ(zb_text(pipeline_order(PipelineSchedule::zero_bubble_h1, 4, 1, 6, 1)),
            "F0 F1 F2 b0 F3 B1 F4 B2 F5 b3 W0 b4 W3 b5 W4 W5 ");
  EXPECT_EQ(zb_text(pipeline_order(PipelineSchedule::zero_bubble_h1, 4, 3, 6, 1)),
            "F0 b0 F1 b1 F2 b2 F3 B3 F4 B4 F5 b5 W0 W1 W2 W5 ");
  // Every micro-batch's weight gradients once, after its B, on every stage and size.
  for (long pp : {2, 4, 8})
    for (long m : {pp, pp + 1, 3 * pp})
      for (long stage = 0; stage < pp; ++stage) {
        const auto order = pipeline_order(PipelineSchedule::zero_bubble_h1, pp, stage, m, 1);
        std::vector<int> whole(static_cast<std::size_t>(m), 0), input(static_cast<std::size_t>(m), 0),
            weight(static_cast<std::size_t>(m), 0);
        for (const auto& o : order) {
          if (o.forward) continue;
          const auto b = static_cast<std::size_t>(o.micro_batch);
          if (o.part == PipelineSlot::Part::weight) {
            EXPECT_EQ(input[b], 1) << "W before its B: pp " << pp << " m " << m << " stage " << stage;
            ++weight[b];
          } else {
            ++(o.part == PipelineSlot::Part::input ? input : whole)[b];
          }
        }
        for (std::size_t b = 0; b < static_cast<std::size_t>(m); ++b)
          EXPECT_EQ(whole[b] + input[b], 1) << pp << " " << m << " " << stage << " mb " << b;
        EXPECT_EQ(input, weight) << pp << " " << m << " " << stage;
        // The exchanges are 1F1B's (pipeline_exchanges checks the loop against this order).
      }
  for (long pp : {2, 4, 8})
    for (long m : {pp, 3 * pp}) {
      const auto zb = pipeline_exchanges(PipelineSchedule::zero_bubble_h1, pp, m, 1);
      const auto plain = pipeline_exchanges(PipelineSchedule::one_f_one_b, pp, m, 1);
      for (long stage = 0; stage < pp; ++stage) {
        std::vector<std::vector<PipelineTransfer>> a, b;
        for (const auto& st : zb[static_cast<std::size_t>(stage)])
          if (!st.compute) a.push_back(st.transfers);
        for (const auto& st : plain[static_cast<std::size_t>(stage)])
          if (!st.compute) b.push_back(st.transfers);
        EXPECT_EQ(a, b) << "pp " << pp << " m " << m << " stage " << stage;
      }
    }
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
  ASSERT_EQ(dp.tasks.size(), 3u);  // reduce-scatter, tied word-embedding all-reduce, all-gather
  const auto& rs = dp.tasks[0];
  const auto& ag = dp.tasks[2];
  EXPECT_EQ(prog.collectives[rs.collective].op, collective::Op::reduce_scatter);
  EXPECT_EQ(prog.collectives[rs.collective].group, (std::vector<int>{1, 3}));
  // After the flush: the reduce-scatter waits for the stage's last backward (the embedding's).
  EXPECT_TRUE(waits_for(rs, kCompute, index_of(comp, "embedding backward mb3 c0")));
  // The optimizer (last on the compute stream) waits for the embedding all-reduce that follows
  // it; the all-gather for the optimizer.
  const auto& step = comp.tasks.back();
  EXPECT_EQ(step.name, "optimizer step (shard)");
  EXPECT_TRUE(waits_for(step, kDataParallel, 1));
  EXPECT_TRUE(waits_for(dp.tasks[1], kDataParallel, 0));
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
  EXPECT_EQ(ddp.ranks[1].streams[kDataParallel].tasks.size(), 2u);  // DDP: all-reduce, embedding, no gather
}

// DeepSpeed's pipeline engine with its BF16_Optimizer (v0.6.2): after every backward the fp32
// gradient accumulation on the compute stream, before it (off the last stage) the TP re-gather of
// the stage's own output; after the flush the tied embedding's all-reduce before the data-parallel
// one, then the gradient norm read on the host and all-reduced over the model-parallel group.
TEST(PipelineProgram, DeepSpeedEngineAccumulatesInFp32AfterEveryBackwardAndReducesTiedFirst) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.zero1_gradient_all_reduce = true;
  in.plan.pipeline_engine = plan::PipelineEngine::deepspeed;
  ASSERT_TRUE(plan::precision_recipe("bf16_fp32_grads", in.plan.precision));
  in.plan.gradient_buffers = plan::GradientBuffers::deepspeed_bf16_optimizer;
  const Program prog = build_program(in);
  validate(prog);
  const long m = in.plan.accumulation;
  for (int rank : {1, 3 + 2}) {  // stage 0 and stage 1 (the last)
    const auto& r = prog.ranks[static_cast<std::size_t>(rank)];
    const auto& comp = r.streams[kCompute];
    const bool last_stage = rank == 5;
    for (long b = 0; b < m; ++b) {
      const std::string tag = " mb" + std::to_string(b) + " c0";
      const int acc = index_of(comp, "fp32 gradient accumulation" + tag);
      // Right after the slot's last compute; it waits for it, or on the last stage for the TP
      // all-reduce that ends the last layer's backward.
      const Task& accumulate = comp.tasks[static_cast<std::size_t>(acc)];
      EXPECT_TRUE(last_stage ? accumulate.deps.size() == 1 && accumulate.deps.begin()->stream == kTensor
                             : waits_for(accumulate, kCompute, acc - 1))
          << rank << tag;
      EXPECT_EQ(comp.tasks[static_cast<std::size_t>(acc - 1)].name.str(),
                (last_stage ? "backward" + tag + " layer 1" : "embedding backward" + tag));
      const auto& tensor = r.streams[kTensor].tasks;
      const bool regathers = std::any_of(tensor.begin(), tensor.end(),
                                         [&](const Task& t) { return t.name == "tp gather own output" + tag; });
      EXPECT_EQ(regathers, !last_stage) << rank << tag;
    }
    const auto& dp = r.streams[kDataParallel].tasks;
    ASSERT_EQ(dp.size(), 4u);
    EXPECT_EQ(dp[0].name, "word-embedding all-reduce");
    EXPECT_EQ(dp[1].name, "gradient all-reduce (shard group)");
    EXPECT_TRUE(waits_for(dp[1], kDataParallel, 0));
    EXPECT_EQ(dp[2].name, "gradient-norm all-reduce");
    EXPECT_EQ(prog.collectives[dp[2].collective].group.size(), 4u);  // pp 2 x tp 2
    const Task& norm = find_task(comp, "optimizer gradient norm");
    EXPECT_TRUE(norm.host_sync);
    EXPECT_TRUE(waits_for(norm, kDataParallel, 1));
  }
  // Megatron's engine and optimizer on the same plan: no accumulation pass, the tied all-reduce after.
  in.plan.pipeline_engine = plan::PipelineEngine::megatron;
  in.plan.gradient_buffers = plan::GradientBuffers::generic;
  const Program megatron = build_program(in);
  const auto& comp = megatron.ranks[1].streams[kCompute].tasks;
  EXPECT_TRUE(std::none_of(comp.begin(), comp.end(), [](const Task& t) {
    return t.name.str().find("fp32 gradient accumulation") != std::string::npos;
  }));
  EXPECT_EQ(megatron.ranks[1].streams[kDataParallel].tasks[1].name, "word-embedding all-reduce");
}

/// The tiny job under DeepSpeed's pipeline engine and BF16_Optimizer, bf16 on the wire as BLOOM.
ScheduleInputs deepspeed_bf16(bool step_work) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.zero1_gradient_all_reduce = true;
  in.plan.pipeline_engine = plan::PipelineEngine::deepspeed;
  EXPECT_TRUE(plan::precision_recipe("bf16_fp32_grads", in.plan.precision));
  in.plan.gradient_buffers = plan::GradientBuffers::deepspeed_bf16_optimizer;
  in.plan.gradient_wire_bytes = 2;
  in.plan.deepspeed_step_work = step_work;
  return in;
}

// _exec_reduce_tied_grads all-reduces the tied weight's fp32 _hp_grad as it is (v0.6.2
// pipe/engine.py 246-248): 4 B per element whatever the data-parallel wire dtype.
TEST(PipelineProgram, DeepSpeedBf16OptimizerAllReducesTheTiedGradientInFp32) {
  const ScheduleInputs in = deepspeed_bf16(false);
  const Program prog = build_program(in);
  const double word_embedding = static_cast<double>(in.model.vocab) * static_cast<double>(in.model.hidden) / 2;  // tp 2
  for (int rank : {1, 5}) {  // stage 0 and the last stage
    const auto& dp = prog.ranks[static_cast<std::size_t>(rank)].streams[kDataParallel].tasks;
    ASSERT_EQ(dp[0].name, "word-embedding all-reduce");
    EXPECT_DOUBLE_EQ(prog.collectives[dp[0].collective].size, 4 * word_embedding);
  }
  // The data-parallel all-reduce stays in the wire dtype: 2 B per parameter of stage 0
  // (2 layers and the word embedding, over tp 2).
  const auto& dp = prog.ranks[1].streams[kDataParallel].tasks;
  EXPECT_EQ(dp[1].name, "gradient all-reduce (shard group)");
  const double stage_params = model::parameters_per_layer(in.model) + model::embedding_parameters(in.model) / 2;
  EXPECT_DOUBLE_EQ(prog.collectives[dp[1].collective].size, 2 * stage_params);
}

// deepspeed_step_work: allreduce_bucket's cast before the data-parallel all-reduce, its scale and
// copy back after it (engine.py 2059-2084 at v0.6.2), and clear_hp_grads after Adam.
TEST(PipelineProgram, DeepSpeedStepWorkCastsBeforeTheReduceCopiesBackAfterAndClearsAfterTheStep) {
  const Program off = build_program(deepspeed_bf16(false));
  const ScheduleInputs in = deepspeed_bf16(true);
  const Program on = build_program(in);
  validate(on);
  // Stage 0 (rank 1): 2 layers / tp 2 + the word embedding / tp 2 = its all-reduced parameters.
  const double params = model::parameters_per_layer(in.model) + model::embedding_parameters(in.model) / 2;
  const auto& comp = on.ranks[1].streams[kCompute];
  const auto& dp = on.ranks[1].streams[kDataParallel].tasks;
  ASSERT_EQ(dp[1].name, "gradient all-reduce (shard group)");
  const int cast = index_of(comp, "allreduce_bucket cast");
  const int finish = index_of(comp, "allreduce_bucket scale and copy back");
  const int clear = index_of(comp, "optimizer clear fp32 gradients");
  ASSERT_GE(cast, 0);
  ASSERT_GT(finish, cast);
  ASSERT_GT(clear, finish);
  // The cast reads fp32 and writes bf16 (4 + 2 B); after the all-reduce, mul_ in bf16 (2 + 2)
  // and copy_ back to fp32 (2 + 4): 10 B; the zeroing writes fp32 (4). At the profile's stream rate.
  const auto at_rate = [&](double bytes) { return model::op_duration(model::make_elementwise("x", bytes, 0), in.device); };
  EXPECT_NEAR(comp.tasks[static_cast<std::size_t>(cast)].duration, at_rate(6 * params), 1e-9);
  EXPECT_GT(comp.tasks[static_cast<std::size_t>(finish)].duration, at_rate(10 * params) * 0.999);
  EXPECT_NEAR(comp.tasks[static_cast<std::size_t>(clear)].duration, at_rate(4 * params), 1e-9);
  // The all-reduce waits for the cast; the copy back for the all-reduce; the norm for the copy back.
  EXPECT_TRUE(waits_for(dp[1], kCompute, cast));
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(finish)], kDataParallel, 1));
  EXPECT_TRUE(waits_for(find_task(comp, "optimizer gradient norm"), kCompute, finish));
  // Without the option none of the three, and the rest of the program is the same length.
  for (const char* name : {"allreduce_bucket cast", "allreduce_bucket scale and copy back", "optimizer clear fp32 gradients"})
    EXPECT_LT(testing_support::task_named(off.ranks[1].streams[kCompute], name), 0) << name;
  EXPECT_EQ(comp.tasks.size(), off.ranks[1].streams[kCompute].tasks.size() + 3);
  // With an fp32 wire: no cast, the scale alone in place (4 + 4 B), one kernel.
  ScheduleInputs fp32 = deepspeed_bf16(true);
  fp32.plan.gradient_wire_bytes = 4;
  const Program wide = build_program(fp32);
  EXPECT_LT(testing_support::task_named(wide.ranks[1].streams[kCompute], "allreduce_bucket cast"), 0);
  const Task& scale = find_task(wide.ranks[1].streams[kCompute], "allreduce_bucket scale and copy back");
  EXPECT_EQ(scale.kernels, 1);
  EXPECT_GT(scale.duration, at_rate(8 * params) * 0.999);
  EXPECT_LT(scale.duration, comp.tasks[static_cast<std::size_t>(finish)].duration * 1.5);
}

// DeepSpeed's BF16_Optimizer under its pipeline engine: an all-reduce of the whole gradient over
// the shard group where ZeRO-1 reduce-scatters, then the same shard step and all-gather.
TEST(PipelineProgram, AutogradAccumulationAddsEveryBackwardAfterTheFirstInThePass) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program fused = build_program(in);
  in.plan.autograd_gradient_accumulation = true;
  const Program autograd = build_program(in);
  validate(autograd);
  // One fp16 pass over the layer's TP shard: read .grad and the new gradient, write the sum.
  const double layer_params = model::parameters_per_layer(in.model) / static_cast<double>(in.plan.tp);
  const Seconds add = model::op_duration(model::autograd_gradient_accumulation_op(layer_params, 2), in.device);
  EXPECT_GT(add, 0);
  for (int rank : {1, 5}) {  // stage 0 and the last stage
    const auto& before = fused.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
    const auto& after = autograd.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
    ASSERT_EQ(before.tasks.size(), after.tasks.size());  // no task of its own: inside the pass
    for (long b = 0; b < in.plan.accumulation; ++b)
      for (int l = 0; l < 2; ++l) {
        const std::string name = "backward mb" + std::to_string(b) + " c0 layer " + std::to_string(l);
        // The first micro-batch's gradients become .grad as they are; the others are added.
        EXPECT_NEAR(find_task(after, name).duration - find_task(before, name).duration, b == 0 ? 0.0 : add, 1e-12) << name;
        EXPECT_EQ(find_task(after, name).kernels - find_task(before, name).kernels, b == 0 ? 0 : 12) << name;  // a GPT layer's tensors
        EXPECT_EQ(find_task(after, "forward mb" + std::to_string(b) + " c0 layer " + std::to_string(l)).duration,
                  find_task(before, "forward mb" + std::to_string(b) + " c0 layer " + std::to_string(l)).duration);
      }
  }
}

TEST(PipelineProgram, Bf16OptimizerAllReducesTheGradientsWhereZero1ReduceScatters) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.zero1_gradient_all_reduce = true;
  const Program prog = build_program(in);
  validate(prog);
  const Program zero1 = build_program(sharded(plan::Sharding::zero1));
  const auto& dp = prog.ranks[1].streams[kDataParallel];
  const auto& dp1 = zero1.ranks[1].streams[kDataParallel];
  ASSERT_EQ(dp.tasks.size(), dp1.tasks.size());
  const auto& ar = prog.collectives[dp.tasks[0].collective];
  const auto& rs = zero1.collectives[dp1.tasks[0].collective];
  EXPECT_EQ(ar.op, collective::Op::all_reduce);
  EXPECT_EQ(ar.group, rs.group);
  EXPECT_DOUBLE_EQ(ar.size, rs.size);  // S of the whole gradient: twice a reduce-scatter's bytes
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].op, collective::Op::all_gather);
  EXPECT_EQ(prog.ranks[1].streams[kCompute].tasks.back().duration,
            zero1.ranks[1].streams[kCompute].tasks.back().duration);
}

TEST(PipelineProgram, OverlappedReduceRunsInBucketsDuringTheLastMicroBatchsBackward) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.overlap_grad_reduce = true;  // bucket_elements 0: one bucket per layer pass
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel];
  // Stage 0 has 2 layers: 2 buckets, the tied embedding's all-reduce, then the all-gather after
  // the optimizer.
  ASSERT_EQ(dp.tasks.size(), 4u);
  EXPECT_EQ(dp.tasks[0].name, "gradient reduce-scatter bucket 0");
  EXPECT_TRUE(waits_for(dp.tasks[0], kCompute, index_of(comp, "backward mb3 c0 layer 0")));
  // The last bucket holds the embedding's gradients too, ready after its backward.
  EXPECT_TRUE(waits_for(dp.tasks[1], kCompute, index_of(comp, "embedding backward mb3 c0")));
  // The first bucket is reduced while the stage's last layer pass still runs.
  EXPECT_LT(index_of(comp, "backward mb3 c0 layer 0"), index_of(comp, "backward mb3 c0 layer 1"));
  EXPECT_EQ(dp.tasks[2].name, "word-embedding all-reduce");
  EXPECT_TRUE(waits_for(comp.tasks.back(), kDataParallel, 2));
  EXPECT_EQ(prog.collectives[dp.tasks[3].collective].op, collective::Op::all_gather);
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
  ASSERT_EQ(dp.tasks.size(), 3u);  // DDP: an all-reduce per chunk, the tied embedding's, no gather
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].op, collective::Op::all_reduce);
  // Chunk 1's last backward comes first in backward order; chunk 0 ends with the embedding.
  EXPECT_TRUE(waits_for(dp.tasks[0], kCompute, index_of(comp, "backward mb3 c1 layer 0")));
  EXPECT_TRUE(waits_for(dp.tasks[1], kCompute, index_of(comp, "embedding backward mb3 c0")));
  // The embedding group joins the first chunk of stage 0 and the last chunk of stage 1.
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].group, (std::vector<int>{0, 4}));
}

// The zero-bubble paper's interleaved runs (pipeline_partition transformer_and_embedding with
// virtual stages): layers + 2 units over the virtual stages, the first chunk of stage 0 holding
// only the embedding and the last chunk of the last stage only the head.
TEST(PipelineProgram, EmbeddingAndHeadPartitionUnderInterleavingLeavesTheEndChunksWithoutLayers) {
  ScheduleInputs in = sharded(plan::Sharding::none);  // 4 layers, PP 2
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 3;  // (4 + 2) / (2 x 3) = 1 unit per chunk
  in.plan.partition = plan::PipelinePartition::transformer_and_embedding;
  in.plan.overlap_grad_reduce = true;
  ASSERT_TRUE(unsupported_plan(in).empty()) << unsupported_plan(in);
  EXPECT_EQ(plan::layers_of_chunk(in.plan, 4, 0, 0), 0);
  EXPECT_EQ(plan::layers_of_chunk(in.plan, 4, 1, 2), 0);
  EXPECT_EQ(plan::layers_of_stage(in.plan, 4, 0), 2);
  EXPECT_EQ(plan::layers_of_stage(in.plan, 4, 1), 2);
  const Program prog = build_program(in);
  validate(prog);
  const auto& first = prog.ranks[0].streams[kCompute];
  auto has = [](const Stream& st, const std::string& name) {
    return std::any_of(st.tasks.begin(), st.tasks.end(), [&](const Task& t) { return t.name.str() == name; });
  };
  EXPECT_TRUE(has(first, "embedding forward mb0 c0"));
  EXPECT_FALSE(has(first, "forward mb0 c0 layer 0"));
  EXPECT_TRUE(has(first, "forward mb0 c1 layer 0"));
  EXPECT_TRUE(has(first, "forward mb0 c2 layer 0"));
  const RankProgram* last_stage = nullptr;
  for (const auto& r : prog.ranks)
    if (has(r.streams[kCompute], "head forward mb0 c2")) last_stage = &r;
  ASSERT_NE(last_stage, nullptr);
  const auto& comp = last_stage->streams[kCompute];
  EXPECT_FALSE(has(comp, "forward mb0 c2 layer 0"));
  EXPECT_TRUE(has(comp, "forward mb0 c0 layer 0"));
  EXPECT_TRUE(has(comp, "forward mb0 c1 layer 0"));
  EXPECT_FALSE(has(comp, "forward mb0 c1 layer 1"));
  // The head-only chunk still reduces its gradients, once its last backward is done: an
  // all-reduce per chunk, then the tied embedding's.
  const auto& dp = last_stage->streams[kDataParallel].tasks;
  ASSERT_EQ(dp.size(), 4u);
  // (after the head's input-gradient all-reduce over TP, the pass's last task)
  EXPECT_TRUE(waits_for(dp[0], kTensor, index_of(last_stage->streams[kTensor], "tp head all-reduce mb3 c2")));
  EXPECT_DOUBLE_EQ(prog.collectives[dp[0].collective].size, 2.0 * 100 * 64 / 2);  // the tied table's copy, TP 2
  // Layers must fill the chunks evenly, as the paper's padded layer count does.
  in.model.layers = 5;
  EXPECT_NE(unsupported_plan(in).find("layers + 2 divisible"), std::string::npos);
}

TEST(PipelineProgram, Zero1WithAShardGroupAllReducesTheShardAcrossReplicas) {
  // 16 ranks: TP 2 x PP 2 x DP 4, optimizer states sharded over groups of 2.
  const Program prog = build_program(sharded(plan::Sharding::zero1, 16, 2));
  validate(prog);
  const auto& dp = prog.ranks[0].streams[kDataParallel];  // stage 0, dp 0, tp 0
  ASSERT_EQ(dp.tasks.size(), 4u);
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].op, collective::Op::reduce_scatter);
  EXPECT_EQ(prog.collectives[dp.tasks[0].collective].group, (std::vector<int>{0, 2}));
  EXPECT_EQ(prog.collectives[dp.tasks[1].collective].op, collective::Op::all_reduce);
  EXPECT_EQ(prog.collectives[dp.tasks[1].collective].group, (std::vector<int>{0, 4}));
  EXPECT_DOUBLE_EQ(prog.collectives[dp.tasks[1].collective].size, prog.collectives[dp.tasks[0].collective].size / 2);
  // The tied embedding's all-reduce: stage 0 and stage 1 at the same (dp, tp) = (0, 0).
  EXPECT_EQ(prog.collectives[dp.tasks[2].collective].group, (std::vector<int>{0, 8}));
  EXPECT_EQ(prog.collectives[dp.tasks[3].collective].op, collective::Op::all_gather);
  EXPECT_EQ(prog.collectives[dp.tasks[3].collective].group, (std::vector<int>{0, 2}));
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
  const double params = (static_cast<double>(layers) * model::parameters_per_layer(in.model) +
                         model::embedding_parameters(in.model) + model::head_parameters(in.model)) /
                        2;
  EXPECT_DOUBLE_EQ(reduced, static_cast<double>(m) * 2 * params);
  EXPECT_EQ(prog.collectives[dp.back().collective].op, collective::Op::all_gather);
  EXPECT_EQ(r.streams[kCompute].tasks.back().name, "optimizer step (shard)");
}

TEST(PipelineProgram, SequenceParallelismGathersBeforeColumnLinearsAndReduceScattersAfterRowLinears) {
  // Megatron's own sequence parallelism (megatron/mpu/layers.py, 2022): each column-parallel
  // linear (QKV, the MLP's first) all-gathers its sequence-sharded input and waits for it; each
  // row-parallel one (the projection, the MLP's second) reduce-scatters its output, which what
  // follows waits for. Each all-reduce of S becomes an all-gather and a reduce-scatter of S.
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program plain = build_program(in);
  in.plan.sequence_parallel = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& tensor = prog.ranks[0].streams[kTensor];
  const Bytes activation = 2.0 * static_cast<double>(in.plan.micro_batch * in.model.seq_len * in.model.hidden);
  std::size_t all_reduces = 0, gathers = 0, scatters = 0;
  for (const auto& t : plain.ranks[0].streams[kTensor].tasks)
    all_reduces += t.name.str().rfind("tp all-reduce mb0 c0", 0) == 0 && t.phase == Phase::forward;
  for (const auto& t : tensor.tasks) {
    const std::string name = t.name.str();
    if (name.rfind("forward mb0 c0 tp all-gather ", 0) != 0 && name.rfind("forward mb0 c0 tp reduce-scatter ", 0) != 0)
      continue;
    const auto& call = prog.collectives[t.collective];
    EXPECT_DOUBLE_EQ(call.size, activation) << name;
    EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
    gathers += call.op == collective::Op::all_gather;
    scatters += call.op == collective::Op::reduce_scatter;
  }
  EXPECT_EQ(all_reduces, 2u * 2u);  // two layers, attention and MLP
  EXPECT_EQ(gathers, all_reduces);
  EXPECT_EQ(scatters, all_reduces);
  // Stage 0's first forward: the QKV GEMM waits for its input's gather; the projection's output
  // is reduce-scattered and the compute after it waits for that.
  const int gather = index_of(tensor, "forward mb0 c0 tp all-gather qkv");
  const int qkv = index_of(comp, "forward mb0 c0 qkv");
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(qkv)], kTensor, gather));
  const int proj = index_of(comp, "forward mb0 c0 attn_out");
  const int scatter = index_of(tensor, "forward mb0 c0 tp reduce-scatter attn_out");
  EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(scatter)], kCompute, proj));
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(proj + 1)], kTensor, scatter));
  EXPECT_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(scatter)].collective].op,
            collective::Op::reduce_scatter);
}

TEST(PipelineProgram, SequenceParallelEagerLayersKeepTheirPassWhole) {
  // Eager module code (nn.Linear each for q, k and v) has no fused QKV to cut at: each pass is
  // one task between its two gathers and its two reduce-scatters, the backward re-gather beside.
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sequence_parallel = true;
  in.plan.eager_kernels = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& tensor = prog.ranks[0].streams[kTensor];
  const int layer = index_of(comp, "backward mb0 c0 layer 0");
  EXPECT_GE(testing_support::task_named(tensor, "tp re-gather mb0 c0"), 0);
  const int scatter = index_of(tensor, "tp reduce-scatter mb0 c0");
  EXPECT_GE(layer, 0);
  EXPECT_GE(scatter, 0);
}

TEST(PipelineProgram, EachTensorParallelRegionAllReducesOnItsOwn) {
  // Megatron's mappings.py all-reduces after attention and after the MLP, each b x s x h; with
  // recompute the backward pass redoes the forward's two and adds the two input gradients'. Each
  // is its own call, so NCCL's rate is that of the size it really moves.
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.activation_checkpointing = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[0].streams[kCompute];
  const auto& tensor = prog.ranks[0].streams[kTensor];
  const Bytes activation = 2.0 * static_cast<double>(in.plan.micro_batch * in.model.seq_len * in.model.hidden);  // fp16 b x s x h
  for (const char* pass : {"forward", "backward"}) {
    const int layer = index_of(comp, std::string(pass) + " mb0 c0 layer 0");
    std::vector<int> calls;  // the tensor tasks that follow this layer, up to the next compute
    for (std::size_t i = 0; i < tensor.tasks.size(); ++i)
      if (waits_for(tensor.tasks[i], kCompute, layer)) {
        calls.push_back(static_cast<int>(i));
        for (std::size_t j = i + 1; j < tensor.tasks.size() && waits_for(tensor.tasks[j], kTensor, static_cast<int>(j - 1)) &&
                                    tensor.tasks[j].name == tensor.tasks[i].name;
             ++j)
          calls.push_back(static_cast<int>(j));
        break;
      }
    ASSERT_EQ(calls.size(), std::string(pass) == "forward" ? 2u : 4u) << pass;
    for (int c : calls) {
      const auto& call = prog.collectives[tensor.tasks[static_cast<std::size_t>(c)].collective];
      EXPECT_EQ(call.op, collective::Op::all_reduce);
      EXPECT_DOUBLE_EQ(call.size, activation) << pass;
    }
  }
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
  EXPECT_TRUE(waits_for(find_task(copy, "offload input mb0 c0 layer 1"), kCompute, index_of(comp, "forward mb0 c0 layer 1")));
  EXPECT_TRUE(waits_for(find_task(comp, "forward mb0 c0 layer 2"), kCopy, index_of(copy, "offload input mb0 c0 layer 0")));
  EXPECT_TRUE(waits_for(find_task(comp, "backward mb1 c0 layer 2"), kCopy, index_of(copy, "fetch input mb1 c0 layer 2")));
  // Prefetched one pass ahead: the fetch waits for the compute task two before its pass.
  EXPECT_TRUE(waits_for(find_task(copy, "fetch input mb1 c0 layer 2"), kCompute, index_of(comp, "backward mb1 c0 layer 0")));
  EXPECT_EQ(find_task(copy, "fetch input mb0 c0 layer 0").copy_direction, CopyDirection::to_device);
  // Without offloading there is no copy stream.
  in.plan.activation_offloading = false;
  EXPECT_NE(build_program(in).ranks[0].streams.back().kind, StreamKind::copy);
}

TEST(PipelineProgram, TiedWordEmbeddingGradientIsAllReducedBetweenTheFirstAndLastStage) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();  // tied embeddings (the default)
  ASSERT_TRUE(in.model.tied_embeddings);
  const Program prog = build_program(in);
  validate(prog);
  // Rank 1 = stage 0, dp 0, tp 1; its partner is rank 5 = stage 1 (last), dp 0, tp 1.
  for (int rank : {1, 5}) {
    const auto& r = prog.ranks[static_cast<std::size_t>(rank)];
    const auto& dp = r.streams[kDataParallel].tasks;
    ASSERT_EQ(dp.size(), 2u) << rank;
    const auto& call = prog.collectives[dp[1].collective];
    EXPECT_EQ(dp[1].name, "word-embedding all-reduce");
    EXPECT_EQ(call.op, collective::Op::all_reduce);
    EXPECT_EQ(call.group, (std::vector<int>{1, 5}));
    // vocab / tp x hidden gradient elements, in the gradient's wire dtype (2 B).
    EXPECT_DOUBLE_EQ(call.size, 100.0 * 64 / 2 * in.plan.gradient_wire_bytes);
    // After the stage's data-parallel all-reduce, before the optimizer.
    EXPECT_TRUE(waits_for(dp[1], kDataParallel, 0));
    EXPECT_EQ(r.streams[kCompute].tasks.back().name, "optimizer step");
    EXPECT_TRUE(waits_for(r.streams[kCompute].tasks.back(), kDataParallel, 1));
  }
  // The last stage's copy of the table is in its data-parallel all-reduce (and optimizer step).
  const double layer = model::parameters_per_layer(in.model);
  const double last_params = (2 * layer + model::head_parameters(in.model) + 100.0 * 64) / 2;
  EXPECT_DOUBLE_EQ(prog.collectives[prog.ranks[5].streams[kDataParallel].tasks[0].collective].size,
                   2 * last_params);
  // Untied, or a single stage: no such call.
  in.model.tied_embeddings = false;
  EXPECT_EQ(build_program(in).ranks[1].streams[kDataParallel].tasks.size(), 1u);
  in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.pp = 1;
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.stages = {in.stages.front()};
  const Program one_stage = build_program(in);
  validate(one_stage);
  EXPECT_EQ(one_stage.ranks[1].streams[kDataParallel].tasks.size(), 1u);
}

TEST(PipelineProgram, EmbeddingLossAndHeadReduceOverTheTensorGroup) {
  const ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program prog = build_program(in);
  validate(prog);
  const double activation = 2.0 * 1 * 16 * 64;  // b x s x h in bf16
  // Stage 0 (rank 0): the embedding, its all-reduce over TP {0, 1}, then the first layer.
  {
    const auto& comp = prog.ranks[0].streams[kCompute];
    const auto& tensor = prog.ranks[0].streams[kTensor];
    const int emb = index_of(comp, "embedding forward mb0 c0");
    const int ar = index_of(tensor, "tp embedding all-reduce mb0 c0");
    const auto& call = prog.collectives[tensor.tasks[static_cast<std::size_t>(ar)].collective];
    EXPECT_EQ(call.op, collective::Op::all_reduce);
    EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
    EXPECT_DOUBLE_EQ(call.size, activation);
    EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(ar)], kCompute, emb));
    EXPECT_TRUE(waits_for(find_task(comp, "forward mb0 c0 layer 0"), kTensor, ar));
    EXPECT_EQ(emb, 0);  // the forward's stored activations are allocated by its first task
    EXPECT_GT(comp.tasks[0].alloc, 0);
    // Its backward has no collective without sequence parallelism; it frees the activations.
    const auto& back = find_task(comp, "embedding backward mb0 c0");
    ASSERT_EQ(back.deps.size(), 1u);  // the last layer pass's all-reduce
    EXPECT_EQ(back.deps[0].stream, kTensor);
    EXPECT_EQ(tensor.tasks[static_cast<std::size_t>(back.deps[0].index)].name, "tp all-reduce mb0 c0");
    EXPECT_GT(back.release, 0);
    for (const auto& t : tensor.tasks) EXPECT_EQ(t.name.str().find("embedding all-gather"), std::string::npos);
  }
  // Stage 1 (rank 4, last): the head, then the loss's three fp32-per-token all-reduces in line;
  // in backward the head's input-gradient all-reduce before the layers.
  {
    const auto& comp = prog.ranks[4].streams[kCompute];
    const auto& tensor = prog.ranks[4].streams[kTensor];
    int before = index_of(comp, "head forward mb0 c0");
    int stream = kCompute;
    for (const char* what : {"max", "target", "sum-exp"}) {
      const int i = index_of(tensor, std::string("tp loss ") + what + " all-reduce mb0 c0");
      const auto& call = prog.collectives[tensor.tasks[static_cast<std::size_t>(i)].collective];
      EXPECT_EQ(call.op, collective::Op::all_reduce);
      EXPECT_EQ(call.group, (std::vector<int>{4, 5}));
      EXPECT_DOUBLE_EQ(call.size, 4.0 * 16);
      EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(i)], stream, before));
      stream = kTensor;
      before = i;
    }
    const int head_b = index_of(comp, "head backward mb0 c0");
    const int ar = index_of(tensor, "tp head all-reduce mb0 c0");
    EXPECT_DOUBLE_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(ar)].collective].size, activation);
    EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(ar)], kCompute, head_b));
    EXPECT_TRUE(waits_for(find_task(comp, "backward mb0 c0 layer 0"), kTensor, ar));
    EXPECT_GT(comp.tasks[static_cast<std::size_t>(index_of(comp, "backward mb0 c0 layer 1"))].release, 0);
  }
  // Without tensor parallelism the ends have no collective.
  ScheduleInputs no_tp = testing_support::tiny_tp2_pp2_dp2();
  no_tp.plan.tp = 1;
  no_tp.layout = plan::layout_of(no_tp.plan, 4, 4);
  const Program pp_only = build_program(no_tp);
  validate(pp_only);
  for (const auto& r : pp_only.ranks) EXPECT_TRUE(r.streams[kTensor].tasks.empty());
}

TEST(PipelineProgram, TransformerEngineFp8GathersTheSequenceInFp8) {
  // Transformer Engine casts the norm outputs and the row-parallel linears' output gradients
  // before the sequence-parallel all-gathers (model/fp8_linear.hpp); the reductions stay bf16, and
  // torchao's linears gather bf16.
  for (const auto impl : {plan::Fp8Implementation::transformer_engine, plan::Fp8Implementation::torchao}) {
    const bool te = impl == plan::Fp8Implementation::transformer_engine;
    ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
    in.plan.sequence_parallel = true;
    in.model.learned_positions = false;
    in.plan.linear_precision = plan::LinearPrecision::fp8;
    in.plan.fp8_implementation = impl;
    in.device = model::load_device_profile("tests/data/fp8/device.json");
    EXPECT_EQ(fp8_linears_of(in.plan).norm_writes_input, te);
    EXPECT_EQ(fp8_linears_of(in.plan).sequence_gathers_fp8, te);
    const Program prog = build_program(in);
    validate(prog);
    const double activation = 2.0 * 1 * 16 * 64;
    const double gathered = te ? activation / 2 : activation;
    int gathers = 0, regathers = 0, scatters = 0;
    for (const auto& t : prog.ranks[0].streams[kTensor].tasks) {
      const auto& call = prog.collectives[t.collective];
      const std::string name = t.name.str();
      const bool layer = name.rfind("forward mb0 c0 ", 0) == 0 || name.rfind("backward mb0 c0 ", 0) == 0;
      if (layer && name.find(" tp all-gather ") != std::string::npos) {
        ++gathers;
        EXPECT_DOUBLE_EQ(call.size, gathered);
      } else if (layer && name.find(" tp re-gather ") != std::string::npos) {
        ++regathers;
        EXPECT_DOUBLE_EQ(call.size, gathered);
      } else if (layer && name.find(" tp reduce-scatter ") != std::string::npos) {
        ++scatters;
        EXPECT_DOUBLE_EQ(call.size, activation);
      } else if (name == "tp embedding reduce-scatter mb0 c0") {
        EXPECT_DOUBLE_EQ(call.size, activation);
      }
    }
    EXPECT_EQ(gathers, 8);    // two layers, two per pass, forward and backward
    EXPECT_EQ(regathers, 4);  // two layers, the QKV's and the MLP's inputs
    EXPECT_EQ(scatters, 8);
  }
}

TEST(PipelineProgram, TransformerEngineReducesTheAmaxesAtTheEndOfEveryChunkPass) {
  // TE 1.13 under Megatron-core (model/fp8_amax_reduction.hpp): each chunk's forward and backward
  // end with a concat, a MAX all-reduce of the rank's one amax buffer (every FP8 layer of the
  // stage: 21 fp32 forward, 14 backward per layer) over the stage's TP x DP group, or the TP group
  // with tp_only_amax_red, and the update; what follows the pass waits for the update.
  for (const bool tp_only : {false, true}) {
    ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();  // 2 layers per stage, 4 micro-batches
    in.plan.sequence_parallel = true;
    in.model.learned_positions = false;
    in.plan.linear_precision = plan::LinearPrecision::fp8;
    in.plan.fp8_amax_tp_only = tp_only;
    in.device = model::load_device_profile("tests/data/fp8/device.json");
    const Program prog = build_program(in);
    validate(prog);
    const auto& r = prog.ranks[2];  // stage 0, dp 1, tp 0
    ASSERT_EQ(r.streams.size(), 8u);
    const auto& amax = r.streams[7];
    EXPECT_EQ(amax.name, "fp8 amax");
    ASSERT_EQ(amax.tasks.size(), 8u);  // 4 micro-batches, forward and backward
    for (const auto& t : amax.tasks) {
      const auto& call = prog.collectives[static_cast<std::size_t>(t.collective)];
      EXPECT_EQ(call.op, collective::Op::all_reduce);
      EXPECT_EQ(call.group, tp_only ? (std::vector<int>{2, 3}) : (std::vector<int>{0, 1, 2, 3}));
      EXPECT_DOUBLE_EQ(call.size, t.phase == Phase::forward ? 2 * 21 * 4.0 : 2 * 14 * 4.0);
    }
    const auto& comp = r.streams[kCompute];
    const int concat = index_of(comp, "fp8 amax concat mb0 c0");
    const int update = index_of(comp, "fp8 amax and scale update mb0 c0");
    EXPECT_EQ(update, concat + 1);
    EXPECT_TRUE(waits_for(amax.tasks.front(), kCompute, concat));
    EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(update)], 7, 0));
    // The forward's output leaves after the update.
    const auto& send = r.streams[4].tasks.front();
    EXPECT_TRUE(waits_for(send, kCompute, update)) << send.name.str();
  }
  // torchao's dynamic scaling reduces no amax history; nor does a bf16 run.
  ScheduleInputs torchao = testing_support::tiny_tp2_pp2_dp2();
  torchao.plan.linear_precision = plan::LinearPrecision::fp8;
  torchao.plan.fp8_implementation = plan::Fp8Implementation::torchao;
  torchao.device = model::load_device_profile("tests/data/fp8/device.json");
  EXPECT_EQ(build_program(torchao).ranks[0].streams.size(), 7u);
  EXPECT_EQ(build_program(testing_support::tiny_tp2_pp2_dp2()).ranks[0].streams.size(), 7u);
}

TEST(PipelineProgram, SequenceParallelBackwardOverlapsTheReGatherAndTheInputGradientsReduceScatter) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sequence_parallel = true;
  in.model.learned_positions = false;  // megatron/core then reduce-scatters the embedding
  const Program prog = build_program(in);
  validate(prog);
  const double activation = 2.0 * 1 * 16 * 64;
  {
    const auto& comp = prog.ranks[0].streams[kCompute];
    const auto& tensor = prog.ranks[0].streams[kTensor];
    // A column-parallel linear's backward (megatron/mpu/layers.py, 2022): the input it keeps
    // sequence-sharded is re-gathered for the weight gradient beside the input-gradient GEMM;
    // that gradient is reduce-scattered beside the weight-gradient GEMM; what follows waits for
    // both. The row-parallel linears' output gradients are gathered first, in the critical path.
    for (const std::string gemm : {"qkv", "ffn_in"}) {
      const int regather = index_of(tensor, "backward mb0 c0 tp re-gather " + gemm + "_dgrad");
      const int dgrad = index_of(comp, "backward mb0 c0 " + gemm + "_dgrad");
      const int scatter = index_of(tensor, "backward mb0 c0 tp reduce-scatter " + gemm + "_dgrad");
      const int wgrad = index_of(comp, "backward mb0 c0 " + gemm + "_wgrad");
      ASSERT_TRUE(regather >= 0 && dgrad >= 0 && scatter >= 0 && wgrad >= 0) << gemm;
      EXPECT_EQ(wgrad, dgrad + 1);
      EXPECT_EQ(scatter, regather + 1);
      const auto& ag = prog.collectives[tensor.tasks[static_cast<std::size_t>(regather)].collective];
      EXPECT_EQ(ag.op, collective::Op::all_gather);
      EXPECT_EQ(ag.group, (std::vector<int>{0, 1}));
      EXPECT_DOUBLE_EQ(ag.size, activation);
      EXPECT_EQ(tensor.tasks[static_cast<std::size_t>(regather)].deps,
                comp.tasks[static_cast<std::size_t>(dgrad)].deps);  // launched together
      EXPECT_FALSE(waits_for(comp.tasks[static_cast<std::size_t>(dgrad)], kTensor, regather));
      EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(scatter)], kCompute, dgrad));
      EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(wgrad)], kTensor, regather));
      EXPECT_FALSE(waits_for(comp.tasks[static_cast<std::size_t>(wgrad)], kTensor, scatter));
      EXPECT_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(scatter)].collective].op,
                collective::Op::reduce_scatter);
      const auto& next = comp.tasks[static_cast<std::size_t>(wgrad + 1)];
      EXPECT_TRUE(waits_for(next, kCompute, wgrad) && waits_for(next, kTensor, scatter)) << next.name.str();
    }
    for (const std::string gemm : {"attn_out", "ffn_out"}) {
      const int gather = index_of(tensor, "backward mb0 c0 tp all-gather " + gemm + "_dgrad");
      EXPECT_TRUE(waits_for(find_task(comp, "backward mb0 c0 " + gemm + "_dgrad"), kTensor, gather)) << gemm;
    }
    // The embedding: reduce-scattered in forward, its gradient all-gathered in backward.
    const auto& rs = prog.collectives[find_task(tensor, "tp embedding reduce-scatter mb0 c0").collective];
    EXPECT_EQ(rs.op, collective::Op::reduce_scatter);
    EXPECT_DOUBLE_EQ(rs.size, activation);
    const int ag = index_of(tensor, "tp embedding all-gather mb0 c0");
    EXPECT_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(ag)].collective].op, collective::Op::all_gather);
    EXPECT_TRUE(waits_for(find_task(comp, "embedding backward mb0 c0"), kTensor, ag));
  }
  {
    // The head: its input all-gathered in forward; in backward re-gathered beside the head's
    // backward, whose input gradient is reduce-scattered.
    const auto& comp = prog.ranks[4].streams[kCompute];
    const auto& tensor = prog.ranks[4].streams[kTensor];
    const int ag = index_of(tensor, "tp head all-gather mb0 c0");
    EXPECT_TRUE(waits_for(find_task(comp, "head forward mb0 c0"), kTensor, ag));
    const int regather = index_of(tensor, "tp head re-gather mb0 c0");
    const int rs = index_of(tensor, "tp head reduce-scatter mb0 c0");
    EXPECT_EQ(rs, regather + 1);
    EXPECT_DOUBLE_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(regather)].collective].size, activation);
    EXPECT_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(rs)].collective].op, collective::Op::reduce_scatter);
    const int head_b = index_of(comp, "head backward mb0 c0");
    EXPECT_FALSE(waits_for(comp.tasks[static_cast<std::size_t>(head_b)], kTensor, regather));
    EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(rs)], kCompute, head_b));
  }
  // With a position table the embedding is all-reduced (and its sequence slice kept).
  in.model.learned_positions = true;
  const Program learned = build_program(in);
  EXPECT_EQ(learned.collectives[find_task(learned.ranks[0].streams[kTensor], "tp embedding all-reduce mb0 c0").collective].op,
            collective::Op::all_reduce);
}

TEST(PipelineProgram, OverlappedParameterGatherOpensTheStepBucketByBucket) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.overlap_grad_reduce = true;
  in.plan.overlap_param_gather = true;  // bucket_elements 0: a bucket per layer
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0, dp 0, tp 1: shard group {1, 3}
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel].tasks;
  // Two parameter buckets (the embedding with layer 0, then layer 1), then the two gradient
  // buckets and the tied embedding's all-reduce; nothing after the optimizer.
  ASSERT_EQ(dp.size(), 5u);
  EXPECT_EQ(dp[0].name, "parameter all-gather c0 bucket 0");
  EXPECT_EQ(dp[1].name, "parameter all-gather c0 bucket 1");
  EXPECT_EQ(dp[4].name, "word-embedding all-reduce");
  EXPECT_EQ(comp.tasks.back().name, "optimizer step (shard)");
  const double layer = model::parameters_per_layer(in.model) / 2;
  const double embedding = model::embedding_parameters(in.model) / 2;
  const auto& g0 = prog.collectives[dp[0].collective];
  EXPECT_EQ(g0.op, collective::Op::all_gather);
  EXPECT_EQ(g0.group, (std::vector<int>{1, 3}));
  EXPECT_DOUBLE_EQ(g0.size, 2 * (embedding + layer));
  EXPECT_DOUBLE_EQ(prog.collectives[dp[1].collective].size, 2 * layer);
  // The first micro-batch's embedding waits for bucket 0, its layer 1 for bucket 1, which is
  // dispatched once bucket 0 is waited for (one bucket ahead); later micro-batches wait for none.
  EXPECT_TRUE(dp[0].deps.empty());  // stage 0's first forward needs nothing else
  EXPECT_TRUE(waits_for(find_task(comp, "embedding forward mb0 c0"), kDataParallel, 0));
  EXPECT_TRUE(waits_for(dp[1], kDataParallel, 0));
  EXPECT_TRUE(waits_for(find_task(comp, "forward mb0 c0 layer 1"), kDataParallel, 1));
  for (const auto& t : comp.tasks)
    if (t.name.str().find("mb1") != std::string::npos) {
      for (const auto& dep : t.deps) EXPECT_NE(dep.stream, kDataParallel) << t.name;
    }
  // Stage 1 gathers when its first activation has arrived (received, then all-gathered over TP:
  // scatter/gather).
  const auto& last = prog.ranks[5];
  const auto& gather = last.streams[kDataParallel].tasks.front();
  EXPECT_EQ(gather.name, "parameter all-gather c0 bucket 0");
  ASSERT_FALSE(gather.deps.empty());
  const TaskRef arrived = gather.deps[gather.deps.size() - 1];
  EXPECT_EQ(last.streams[static_cast<std::size_t>(arrived.stream)].tasks[static_cast<std::size_t>(arrived.index)].name,
            "tp gather activation 0->1 mb0");
}

TEST(PipelineProgram, InterleavedParameterGathersAreAligned) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  in.plan.overlap_grad_reduce = true;
  in.plan.overlap_param_gather = true;
  const Program prog = build_program(in);
  validate(prog);
  // Chunks 0 and 1 of every stage: all their buckets dispatched when the step starts.
  for (int rank : {0, 4}) {
    const auto& dp = prog.ranks[static_cast<std::size_t>(rank)].streams[kDataParallel].tasks;
    ASSERT_GE(dp.size(), 2u);
    EXPECT_EQ(dp[0].name, "parameter all-gather c0 bucket 0");
    EXPECT_EQ(dp[1].name, "parameter all-gather c1 bucket 0");
    EXPECT_TRUE(dp[0].deps.empty());
    EXPECT_TRUE(dp[1].deps.empty());
  }
}

// FSDP2 inside the stages (torchtitan): each unit gathered once, at the first forward, one unit
// ahead; every backward adds its gradients into the fp32 accumulated ones; after the stage's last
// backward one reduce-scatter per unit, then the optimizer, and no all-gather after it.
TEST(PipelineProgram, FsdpInsideStagesGathersEachUnitOnceAndReducesItAfterTheFlush) {
  ScheduleInputs in = sharded(plan::Sharding::fsdp);
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp2;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0, dp 0, tp 1
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel].tasks;
  std::vector<std::string> names;
  for (const auto& t : dp) names.push_back(t.name.str());
  // Stage 0: two layers (the embedding with layer 0), two gathers and two reduce-scatters; the
  // tied embedding's all-reduce between the end stages after them.
  const std::vector<std::string> expected{"parameter all-gather c0 bucket 0", "parameter all-gather c0 bucket 1",
                                          "gradient reduce-scatter unit 0", "gradient reduce-scatter unit 1",
                                          "word-embedding all-reduce"};
  EXPECT_EQ(names, expected);
  EXPECT_TRUE(waits_for(find_task(comp, "forward mb0 c0 layer 1"), kDataParallel, 1));
  EXPECT_FALSE(waits_for(find_task(comp, "forward mb1 c0 layer 1"), kDataParallel, 1));
  const int last_backward = index_of(comp, "embedding backward mb3 c0");
  EXPECT_TRUE(waits_for(dp[2], kCompute, last_backward));
  EXPECT_TRUE(waits_for(dp[3], kCompute, last_backward));
  // The first micro-batch casts (6 B per parameter), the later ones add (10 B).
  const Program ddp = build_program(sharded(plan::Sharding::zero1));
  const Seconds plain = find_task(ddp.ranks[1].streams[kCompute], "backward mb0 c0 layer 0").duration;
  const Seconds cast = find_task(comp, "backward mb0 c0 layer 0").duration;
  const Seconds add = find_task(comp, "backward mb1 c0 layer 0").duration;
  const double layer = model::parameters_per_layer(in.model) / 2;  // on one TP rank
  EXPECT_NEAR(cast - plain, model::op_duration(model::fsdp2_unsharded_grad_accumulation_op(layer, true), in.device), 1e-15);
  EXPECT_NEAR(add - plain, model::op_duration(model::fsdp2_unsharded_grad_accumulation_op(layer, false), in.device), 1e-15);
  EXPECT_GT(add, cast);
  // Interleaved: each chunk's units are gathered at its own first forward (FSDP2's pre-forward),
  // not all dispatched when the step starts as Megatron's aligned gathers are.
  in.model.layers = 8;
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  const Program interleaved = build_program(in);
  validate(interleaved);
  const auto& idp = interleaved.ranks[1].streams[kDataParallel].tasks;
  ASSERT_GE(idp.size(), 3u);
  EXPECT_EQ(idp[1].name, "parameter all-gather c0 bucket 1");
  const int c1 = testing_support::task_named(interleaved.ranks[1].streams[kDataParallel], "parameter all-gather c1 bucket 0");
  ASSERT_GE(c1, 0);
  EXPECT_FALSE(idp[static_cast<std::size_t>(c1)].deps.empty());
}

// Megatron-core builds every model chunk after the first with disable_bucketing: its gradients
// are reduced as one bucket once its last backward is done, chunk 0's bucket by bucket.
TEST(PipelineProgram, InterleavedChunksAfterTheFirstReduceTheirGradientsAsOneBucket) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.model.layers = 8;  // 2 layers per model chunk on each of the 2 stages
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  in.plan.overlap_grad_reduce = true;  // bucket_elements 0: a bucket per layer, in chunk 0
  const Program prog = build_program(in);
  validate(prog);
  const auto& dp = prog.ranks[1].streams[kDataParallel].tasks;  // stage 0, dp 0, tp 1
  const auto& comp = prog.ranks[1].streams[kCompute];
  std::vector<const Task*> buckets;
  for (const auto& t : dp)
    if (t.name.str().rfind("gradient reduce-scatter bucket", 0) == 0) buckets.push_back(&t);
  // Chunk 1 (layers 4 and 5) finishes its backward first: one bucket of both layers; then chunk
  // 0's two buckets (layer 1, then layer 0 with the embedding).
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(prog.collectives[buckets[0]->collective].size,
                   2 * prog.collectives[buckets[1]->collective].size);
  int chunk_one_last = -1;  // chunk 1's last layer pass of its last micro-batch's backward
  for (std::size_t i = 0; i < comp.tasks.size(); ++i)
    if (comp.tasks[i].name.str().rfind("backward mb3 c1 ", 0) == 0) chunk_one_last = static_cast<int>(i);
  ASSERT_GE(chunk_one_last, 0);
  EXPECT_TRUE(waits_for(*buckets[0], kCompute, chunk_one_last)) << comp.tasks[static_cast<std::size_t>(chunk_one_last)].name;
}

// Megatron-core's defer_embedding_wgrad_compute: the first wgrad_deferral_limit micro-batches'
// output-layer weight gradients leave their backward (and under SP its re-gather) and run on the
// last stage after its last backward, each after a double-buffered re-gather, before the
// gradients are reduced.
TEST(PipelineProgram, DeferredHeadWeightGradientsRunAfterTheLastStagesLastBackward) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sequence_parallel = true;
  const Program plain = build_program(in);
  in.plan.defer_embedding_wgrad_compute = true;
  in.plan.wgrad_deferral_limit = 3;  // of 4 micro-batches
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[4];  // stage 1 (last), dp 0, tp 0
  const auto& comp = r.streams[kCompute];
  const auto& tensor = r.streams[kTensor];
  const auto& plain_comp = plain.ranks[4].streams[kCompute];
  const Task& deferred_head = find_task(comp, "head backward mb0 c0");
  const Task& kept_head = find_task(comp, "head backward mb3 c0");
  EXPECT_DOUBLE_EQ(kept_head.duration, find_task(plain_comp, "head backward mb3 c0").duration);
  const Task& gemm0 = find_task(comp, "deferred head weight gradient mb0 c0");
  EXPECT_GT(gemm0.duration, 0);
  EXPECT_NEAR(deferred_head.duration + gemm0.duration, kept_head.duration, 1e-15);
  EXPECT_EQ(deferred_head.kernels + gemm0.kernels, kept_head.kernels);
  EXPECT_EQ(testing_support::task_named(tensor, "tp head re-gather mb0 c0"), -1);
  EXPECT_EQ(testing_support::task_named(tensor, "tp head re-gather mb2 c0"), -1);
  EXPECT_GE(testing_support::task_named(tensor, "tp head re-gather mb3 c0"), 0);
  EXPECT_EQ(testing_support::task_named(comp, "deferred head weight gradient mb3 c0"), -1);
  // After every slot of the stage, in micro-batch order, each after its own re-gather; gather k
  // waits for GEMM k - 2 (its double buffer).
  int last_backward = -1;  // the stage's last layer piece (its pieces carry no layer index)
  for (std::size_t i = 0; i < comp.tasks.size(); ++i)
    if (comp.tasks[i].name.str().rfind("backward mb3 c0 ", 0) == 0) last_backward = static_cast<int>(i);
  ASSERT_GE(last_backward, 0);
  int g[3], a[3];
  for (int k = 0; k < 3; ++k) {
    g[k] = index_of(comp, "deferred head weight gradient mb" + std::to_string(k) + " c0");
    a[k] = index_of(tensor, "tp head deferred re-gather mb" + std::to_string(k) + " c0");
    EXPECT_GT(g[k], last_backward);
    EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(g[k])], kTensor, a[k])) << k;
    EXPECT_DOUBLE_EQ(prog.collectives[tensor.tasks[static_cast<std::size_t>(a[k])].collective].size,
                     2.0 * 16 * 64);  // the head's whole input, b x s x h in bf16
  }
  EXPECT_EQ(g[1], g[0] + 1);
  EXPECT_EQ(g[2], g[1] + 1);
  EXPECT_TRUE(waits_for(tensor.tasks[static_cast<std::size_t>(a[2])], kCompute, g[0]));
  EXPECT_FALSE(waits_for(tensor.tasks[static_cast<std::size_t>(a[1])], kCompute, g[0]));
  // What the deferral keeps (the memory model's deferred_head_wgrad per micro-batch) is allocated
  // by each deferred head backward and freed by its GEMM; the kept micro-batch allocates none.
  in.stages.back().deferred_head_wgrad_per_micro_batch = 77;
  const Program held = build_program(in);
  const auto& held_comp = held.ranks[4].streams[kCompute];
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(find_task(held_comp, "head backward mb" + std::to_string(k) + " c0").alloc, 77) << k;
    EXPECT_EQ(find_task(held_comp, "deferred head weight gradient mb" + std::to_string(k) + " c0").release, 77) << k;
  }
  EXPECT_EQ(find_task(held_comp, "head backward mb3 c0").alloc, 0);
  in.stages.back().deferred_head_wgrad_per_micro_batch = 0;
  // The gradients are reduced (after the flush here) once the last deferred GEMM is done.
  const auto& reduce = r.streams[kDataParallel].tasks.front();
  EXPECT_TRUE(waits_for(reduce, kCompute, g[2]));
  // The first stage has no head, so nothing deferred; limit 0 defers every micro-batch.
  EXPECT_EQ(testing_support::task_named(prog.ranks[0].streams[kCompute], "deferred head weight gradient mb0 c0"), -1);
  in.plan.wgrad_deferral_limit = 0;
  const Program all = build_program(in);
  EXPECT_GE(testing_support::task_named(all.ranks[4].streams[kCompute], "deferred head weight gradient mb3 c0"), 0);
  // Without sequence parallelism the head's input is whole on every TP rank: no gathers.
  in.plan.sequence_parallel = false;
  const Program no_sp = build_program(in);
  validate(no_sp);
  for (const auto& t : no_sp.ranks[4].streams[kTensor].tasks)
    EXPECT_EQ(t.name.str().find("deferred"), std::string::npos) << t.name;
}

// Megatron-core's overlap_param_gather_with_optimizer_step: chunk 0's optimizer steps first, its
// parameters' all-gather (one bucket) follows it beside the other chunks' step, and the next
// step's first forward of chunk 0 no longer dispatches or waits for it.
TEST(PipelineProgram, ChunkZerosParameterGatherRunsBesideTheOtherChunksOptimizerStep) {
  ScheduleInputs in = sharded(plan::Sharding::zero1);
  in.plan.pipeline = plan::PipelineSchedule::interleaved;
  in.plan.virtual_stages = 2;
  in.plan.overlap_grad_reduce = true;
  in.plan.overlap_param_gather = true;
  const Program plain = build_program(in);
  in.plan.overlap_param_gather_with_optimizer_step = true;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[0];  // stage 0, dp 0, tp 0
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel].tasks;
  EXPECT_EQ(dp.front().name, "parameter all-gather c1 bucket 0");
  EXPECT_TRUE(dp.front().deps.empty());
  for (const auto& t : dp) EXPECT_NE(t.name, "parameter all-gather c0 bucket 0");
  for (const auto& t : comp.tasks)
    if (t.name.str().find(" c0") != std::string::npos && t.name.str().find("mb0") != std::string::npos) {
      for (const auto& dep : t.deps) EXPECT_NE(dep.stream, kDataParallel) << t.name;
    }
  const int first = index_of(comp, "optimizer step (shard) c0");
  const int rest = index_of(comp, "optimizer step (shard) c1+");
  EXPECT_EQ(rest, first + 1);
  EXPECT_EQ(rest + 1, static_cast<int>(comp.tasks.size()));
  ASSERT_EQ(dp.back().name, "parameter all-gather c0");
  EXPECT_TRUE(waits_for(dp.back(), kCompute, first));
  EXPECT_FALSE(waits_for(comp.tasks[static_cast<std::size_t>(rest)], kDataParallel, static_cast<int>(dp.size()) - 1));
  // Chunk 0 of stage 0: one layer and the embedding, whole (one bucket), in bf16.
  const double chunk0 = (model::parameters_per_layer(in.model) + model::embedding_parameters(in.model)) / 2;
  EXPECT_DOUBLE_EQ(prog.collectives[dp.back().collective].size, 2 * chunk0);
  EXPECT_EQ(prog.collectives[dp.back().collective].op, collective::Op::all_gather);
  // The two steps cost what the one did.
  EXPECT_NEAR(comp.tasks[static_cast<std::size_t>(first)].duration + comp.tasks[static_cast<std::size_t>(rest)].duration,
              plain.ranks[0].streams[kCompute].tasks.back().duration, 1e-15);
}

TEST(PipelineProgram, MegatronFp16OptimizerAllReducesTwoScalarsOverTheModelParallelGroup) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program fused = build_program(in);
  in.plan.optimizer_implementation = plan::OptimizerImplementation::megatron_fp16;
  const Program prog = build_program(in);
  validate(prog);
  const auto& r = prog.ranks[1];  // stage 0, dp 0, tp 1
  const auto& comp = r.streams[kCompute];
  const auto& dp = r.streams[kDataParallel];
  // Gradient all-reduce, tied embedding, then the inf flag and the norm (one fp32 each) over the
  // model-parallel group of dp index 0: both stages, both TP ranks.
  ASSERT_EQ(dp.tasks.size(), 4u);
  const auto& inf = dp.tasks[2];
  const auto& norm = dp.tasks[3];
  EXPECT_EQ(inf.name, "found-inf all-reduce");
  EXPECT_EQ(norm.name, "gradient-norm all-reduce");
  for (const Task* t : {&inf, &norm}) {
    EXPECT_EQ(prog.collectives[static_cast<std::size_t>(t->collective)].group, (std::vector<int>{0, 1, 4, 5}));
    EXPECT_DOUBLE_EQ(prog.collectives[static_cast<std::size_t>(t->collective)].size, 4.0);
  }
  // fp32 copy -> unscale -> inf all-reduce -> norm -> norm all-reduce -> Adam -> the fp16 copy.
  const int to_fp32 = index_of(comp, "optimizer grad to fp32");
  const int unscale = index_of(comp, "optimizer unscale and inf check");
  const int l2 = index_of(comp, "optimizer gradient norm");
  const int adam = index_of(comp, "optimizer step");
  const int to_fp16 = index_of(comp, "optimizer params to fp16");
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(to_fp32)], kDataParallel, 1));
  EXPECT_EQ(unscale, to_fp32 + 1);
  EXPECT_TRUE(waits_for(inf, kCompute, unscale));
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(l2)], kDataParallel, 2));
  EXPECT_TRUE(waits_for(norm, kCompute, l2));
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(adam)], kDataParallel, 3));
  EXPECT_EQ(to_fp16, adam + 1);
  EXPECT_EQ(to_fp16, static_cast<int>(comp.tasks.size()) - 1);
  // 52 bytes per parameter in five passes against the fused step's 30 in one.
  double seconds = 0;
  for (const int i : {to_fp32, unscale, l2, adam, to_fp16}) seconds += comp.tasks[static_cast<std::size_t>(i)].duration;
  EXPECT_GT(seconds, fused.ranks[1].streams[kCompute].tasks.back().duration * 52.0 / 30.0 * 0.99);
}

TEST(PipelineProgram, MegatronLocalDdpFlattensBeforeAndCopiesBackAfterTheGradientAllReduce) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program generic = build_program(in);
  in.plan.gradient_buffers = plan::GradientBuffers::megatron_local_ddp;
  const Program prog = build_program(in);
  validate(prog);
  const auto& comp = prog.ranks[1].streams[kCompute];
  const auto& dp = prog.ranks[1].streams[kDataParallel];
  const int flatten = index_of(comp, "local DDP flatten and divide");
  const int copy = index_of(comp, "local DDP copy back");
  ASSERT_EQ(dp.tasks.front().name, "gradient all-reduce");
  // flatten -> all-reduce -> copy back -> whatever the step does next.
  EXPECT_TRUE(waits_for(dp.tasks.front(), kCompute, flatten));
  EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(copy)], kDataParallel, 0));
  EXPECT_EQ(copy, flatten + 1);
  EXPECT_TRUE(waits_for(dp.tasks[1], kCompute, copy));
  // Two more compute tasks than the generic buffers' program, nothing else.
  EXPECT_EQ(comp.tasks.size(), generic.ranks[1].streams[kCompute].tasks.size() + 2);
  // Traffic twice the copy's: 8 against 4 bytes per fp16 gradient (same launch cost).
  EXPECT_GT(comp.tasks[static_cast<std::size_t>(flatten)].duration,
            comp.tasks[static_cast<std::size_t>(copy)].duration);
}

// torchtitan's op policy in pipeline stages: each layer's backward is preceded by the forward's
// unsaved ops; the backward is the plain one. Without sequence parallelism the recompute runs the
// pass's two all-reduces again (the policy saves no all-reduce output); with it the reduce-scatter
// outputs are saved and the backward's re-gather stands for the recomputed all-gathers.
TEST(PipelineProgram, SelectiveOpRecomputesTheUnsavedOpsBeforeEachBackward) {
  for (const bool sp : {false, true}) {
    ScheduleInputs none = testing_support::tiny_tp2_pp2_dp2();
    none.plan.flash_attention = true;
    none.plan.sequence_parallel = sp;
    ScheduleInputs selective = none;
    selective.plan.activation_checkpointing = true;
    selective.plan.checkpoint_policy = plan::CheckpointPolicy::selective_op;
    const Program ps = build_program(selective), pn = build_program(none);
    validate(ps);
    const model::LayerShape shape{1, 2, sp, true};
    const auto ops = model::recomputed_forward_ops(selective.model, shape, model::Checkpointing::selective_op);
    const Seconds recompute = model::ops_duration(ops, selective.device);
    for (int rank : {1, 5}) {
      const auto& comp = ps.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
      const auto& plain = pn.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
      long recomputes = 0;
      for (const auto& t : comp.tasks) recomputes += t.name.str().rfind("recompute unsaved ops", 0) == 0 ? 1 : 0;
      EXPECT_EQ(recomputes, selective.plan.accumulation * 2) << sp;
      if (!sp) {
        const std::string tag = " mb1 c0 layer 1";
        const int bwd = index_of(comp, "backward" + tag);
        const Task& before = comp.tasks[static_cast<std::size_t>(bwd - 1)];
        EXPECT_EQ(before.name.str(), "recompute unsaved ops" + tag) << rank;
        EXPECT_DOUBLE_EQ(before.duration, recompute);
        EXPECT_EQ(before.kernels, model::ops_kernels(ops));
        EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(bwd)], kCompute, bwd - 1));
        EXPECT_DOUBLE_EQ(comp.tasks[static_cast<std::size_t>(bwd)].duration, find_task(plain, "backward" + tag).duration);
      }
      // TP calls: two more per layer backward without SP, none with it.
      const auto& tensor = ps.ranks[static_cast<std::size_t>(rank)].streams[kTensor].tasks;
      const auto& plain_tensor = pn.ranks[static_cast<std::size_t>(rank)].streams[kTensor].tasks;
      EXPECT_EQ(tensor.size(), plain_tensor.size() + (sp ? 0 : 2 * 2 * static_cast<std::size_t>(selective.plan.accumulation)))
          << sp << " rank " << rank;
    }
  }
}

// ZB-H1: a split backward is the layer's backward less its weight-gradient GEMMs, and its W runs
// those GEMMs alone later; each stage computes what 1F1B computes, in another order.
TEST(PipelineProgram, ZeroBubbleH1SplitsBackwardsIntoInputAndWeightGradients) {
  ScheduleInputs plain = testing_support::tiny_tp2_pp2_dp2();  // TP 2, PP 2, 4 micro-batches
  ScheduleInputs zb = plain;
  zb.plan.pipeline = plan::PipelineSchedule::zero_bubble_h1;
  const Program pz = build_program(zb), pp = build_program(plain);
  validate(pz);
  const model::LayerShape shape{1, 2, false, false};
  std::vector<model::Operation> wgrad;
  for (const auto& op : model::layer_backward_ops(zb.model, shape))
    if (op.kind == model::OpKind::gemm && op.batch == 1 && op.name.size() > 6 &&
        op.name.substr(op.name.size() - 6) == "_wgrad")
      wgrad.push_back(op);
  ASSERT_FALSE(wgrad.empty());
  const Seconds w = model::ops_duration(wgrad, zb.device);
  auto total = [](const Stream& st) {
    Seconds sum = 0;
    for (const auto& t : st.tasks) sum += t.duration;
    return sum;
  };
  // Stage 0 runs 1F1B; stage 1 (rank 4) splits: b0 (i < stage), b3 (the last iteration), W0, W3.
  EXPECT_EQ(pz.ranks[0].streams[kCompute].tasks.size(), pp.ranks[0].streams[kCompute].tasks.size());
  const auto& comp = pz.ranks[4].streams[kCompute];
  const auto& whole = pp.ranks[4].streams[kCompute];
  for (const std::string tag : {" mb0 c0 layer 1", " mb3 c0 layer 0"}) {
    EXPECT_NEAR(find_task(comp, "backward" + tag).duration, find_task(whole, "backward" + tag).duration - w, 1e-12) << tag;
    EXPECT_DOUBLE_EQ(find_task(comp, "weight gradient" + tag).duration, w) << tag;
  }
  EXPECT_DOUBLE_EQ(find_task(comp, "backward mb1 c0 layer 0").duration, find_task(whole, "backward mb1 c0 layer 0").duration);
  EXPECT_LT(index_of(comp, "backward mb3 c0 layer 0"), index_of(comp, "weight gradient mb0 c0 layer 0"));
  EXPECT_LT(index_of(comp, "weight gradient mb0 c0 layer 0"), index_of(comp, "weight gradient mb3 c0 layer 0"));
  // The last stage's W also holds the output layer's weight gradient, its B not.
  EXPECT_GT(find_task(comp, "head weight gradient mb0 c0").duration, 0);
  EXPECT_NEAR(find_task(comp, "head backward mb0 c0").duration + find_task(comp, "head weight gradient mb0 c0").duration,
              find_task(whole, "head backward mb0 c0").duration, 1e-12);
  EXPECT_NEAR(total(comp), total(whole), 1e-9 * total(whole));
  // Memory: a split backward allocates what its W keeps, which the W frees.
  ScheduleInputs held = zb;
  for (auto& st : held.stages) st.queued_weight_gradients_per_micro_batch = 7;
  const Program ph = build_program(held);
  validate(ph);
  const auto& hc = ph.ranks[4].streams[kCompute];
  Bytes allocated = 0, released = 0;
  for (const auto& t : hc.tasks) {
    if (t.name.str().rfind("backward", 0) == 0) allocated += t.alloc;
    if (t.name.str().rfind("head weight gradient", 0) == 0) released += t.release;
  }
  EXPECT_DOUBLE_EQ(allocated, 2 * 7.0);  // b0 and b3
  EXPECT_DOUBLE_EQ(released, 2 * 7.0);   // W0 and W3 (the head's W ends each)
  // No collective and no exchange of its own.
  EXPECT_EQ(pz.ranks[4].streams[kTensor].tasks.size(), pp.ranks[4].streams[kTensor].tasks.size());
}

// Megatron's selective recomputation: each layer's backward is preceded by the core attention's
// forward again, on the compute stream, with no collective of its own; the backward itself is the
// plain one. Full recompute folds the whole forward into the backward and doubles its TP calls.
TEST(PipelineProgram, SelectiveAttentionRecomputesTheCoreAttentionBeforeEachBackward) {
  // Without sequence parallelism each layer pass is one task named by its layer (with it the
  // pass is cut at its linears, and the recompute comes before the first piece the same way).
  ScheduleInputs none = testing_support::tiny_tp2_pp2_dp2();
  ScheduleInputs selective = none, full = none;
  selective.plan.activation_checkpointing = true;
  selective.plan.checkpoint_policy = plan::CheckpointPolicy::selective_attention;
  full.plan.activation_checkpointing = true;
  const Program ps = build_program(selective), pn = build_program(none), pf = build_program(full);
  validate(ps);
  const model::LayerShape shape{1, 2, true, false};
  const auto core = model::core_attention_forward_ops(selective.model, shape);
  ASSERT_FALSE(core.empty());
  const Seconds recompute = model::ops_duration(core, selective.device);
  for (int rank : {1, 5}) {  // stage 0 and stage 1
    const auto& comp = ps.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
    const auto& plain = pn.ranks[static_cast<std::size_t>(rank)].streams[kCompute];
    for (long b = 0; b < selective.plan.accumulation; ++b)
      for (long l = 0; l < 2; ++l) {
        const std::string tag = " mb" + std::to_string(b) + " c0 layer " + std::to_string(l);
        const int bwd = index_of(comp, "backward" + tag);
        const Task& before = comp.tasks[static_cast<std::size_t>(bwd - 1)];
        EXPECT_EQ(before.name.str(), "recompute core attention" + tag) << rank;
        EXPECT_DOUBLE_EQ(before.duration, recompute);
        EXPECT_EQ(before.kernels, model::ops_kernels(core));
        EXPECT_TRUE(waits_for(comp.tasks[static_cast<std::size_t>(bwd)], kCompute, bwd - 1)) << rank << tag;
        EXPECT_DOUBLE_EQ(comp.tasks[static_cast<std::size_t>(bwd)].duration, find_task(plain, "backward" + tag).duration);
      }
    // One recompute per layer backward, none in forwards.
    const auto recomputes = std::count_if(comp.tasks.begin(), comp.tasks.end(), [](const Task& t) {
      return t.name.str().rfind("recompute core attention", 0) == 0;
    });
    EXPECT_EQ(recomputes, selective.plan.accumulation * 2);
    // The tensor-parallel stream carries what the plain schedule's does; full recompute's more.
    const auto& tensor = ps.ranks[static_cast<std::size_t>(rank)].streams[kTensor].tasks;
    EXPECT_EQ(tensor.size(), pn.ranks[static_cast<std::size_t>(rank)].streams[kTensor].tasks.size());
    EXPECT_GT(pf.ranks[static_cast<std::size_t>(rank)].streams[kTensor].tasks.size(), tensor.size());
    // Compute time per step: none < selective < full.
    auto total = [](const Stream& st) {
      Seconds sum = 0;
      for (const auto& t : st.tasks) sum += t.duration;
      return sum;
    };
    EXPECT_LT(total(plain), total(comp));
    EXPECT_LT(total(comp), total(pf.ranks[static_cast<std::size_t>(rank)].streams[kCompute]));
  }
}

}  // namespace
}  // namespace trainsim::program

// Context parallelism as plain data: a layer pass's attention as ring steps, and the tasks, calls
// and groups the PTD-P schedule makes of it (no SimGrid).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/compute_cost.hpp"
#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/context_parallel.hpp"
#include "support/pipeline_fixture.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::waits_for;
using testing_support::stream_named;
using testing_support::task_named;

/// The tiny model (seq 16) on 4 ranks: CP 2 x DP 2, no TP or PP, fused attention.
ScheduleInputs cp2_dp2() {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.tp = 1;
  in.plan.pp = 1;
  in.plan.cp = 2;
  in.plan.flash_attention = true;
  in.plan.sharding = plan::Sharding::zero1;
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.stages = {{100, 10, 1}};
  return in;
}

model::LayerShape shape_of(const ScheduleInputs& in) {
  model::LayerShape shape{in.plan.micro_batch, in.plan.tp, in.plan.sequence_parallel};
  shape.flash_attention = true;
  return shape;
}

TEST(ContextParallel, LayoutCountsTheContextRanksOutOfDataParallelism) {
  plan::TrainingPlan p;
  p.tp = 2;
  p.pp = 2;
  p.cp = 2;
  p.sharding = plan::Sharding::zero1;
  const plan::Layout l = plan::layout_of(p, 32, 8);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.cp, 2);
  const plan::Layout rank = plan::context_parallel_rank_layout(l);
  EXPECT_EQ(rank.dp, 8);     // gradients reduced over DP x CP
  EXPECT_EQ(rank.shard, 8);  // and the distributed optimizer sharded over it
  p.cp = 3;
  EXPECT_THROW((void)plan::layout_of(p, 32, 8), std::invalid_argument);
}

TEST(ContextParallel, RingStepsShareTheCausalWorkEvenlyAndMoveKvForwardKvAndDkvBackward) {
  ScheduleInputs in = cp2_dp2();
  in.plan.cp = 4;
  in.model.kv_heads = 2;  // GQA: K and V are 2 of the 4 heads
  const ScheduleInputs view = context_parallel_rank_view(in);
  ASSERT_EQ(view.model.seq_len, 4);
  const auto shape = shape_of(in);
  const auto forward = ring_attention_pass(model::layer_forward_ops(view.model, shape), view.model, shape, 4, true);
  const auto backward = ring_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, 4, false);
  ASSERT_EQ(ring_steps(forward), 4u);
  ASSERT_EQ(ring_steps(backward), 4u);
  // K and V of the rank's 4 tokens, 2 heads of 16, bf16.
  const Bytes kv = 2.0 * 4 * 2 * 16 * 2;
  EXPECT_EQ(forward.ring_bytes, (std::vector<Bytes>{kv, kv, kv, 0}));
  EXPECT_EQ(backward.ring_bytes, (std::vector<Bytes>{kv, 2 * kv, 2 * kv, kv}));
  EXPECT_FALSE(forward.transfer_after_previous_step);
  EXPECT_TRUE(backward.transfer_after_previous_step);
  // Step 0 is the rank's own chunks under the causal mask, the others unmasked half blocks; all
  // together 1/cp of the whole sequence's causal attention (the load balance of the 2 x cp chunks).
  ASSERT_EQ(forward.rank_steps.size(), 4u);
  for (std::size_t r = 0; r < 4; ++r) {
    const auto& steps = forward.rank_steps[r];
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_TRUE(steps[0].front().causal);
    double flops = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      EXPECT_EQ(steps[i].front().kind, model::OpKind::fused_attention);
      if (i > 0) { EXPECT_FALSE(steps[i].front().causal); }
      if (i > 1) { EXPECT_DOUBLE_EQ(steps[i].front().flops, steps[1].front().flops); }
      flops += steps[i].front().flops;
    }
    const auto whole = model::make_fused_attention(in.model, shape);
    EXPECT_DOUBLE_EQ(flops, whole.flops / 4) << "rank " << r;
    // Backward: the half blocks first, the causal one last.
    EXPECT_EQ(backward.rank_steps[r][1].front().kind, model::OpKind::fused_attention_backward);
    EXPECT_FALSE(backward.rank_steps[r][0].front().causal);
    EXPECT_TRUE(backward.rank_steps[r][3].front().causal);
  }
  // The ops around the attention are kept, in order.
  // (the forward's set-up packs K and V into the send buffer, one op more before the ring)
  const auto ops = model::layer_forward_ops(view.model, shape);
  EXPECT_EQ(forward.before.size() + 1 + forward.after.size(), ops.size() + 1);
  EXPECT_EQ(forward.before.back().name, "cp_kv_pack");
  EXPECT_EQ(ring_pass_labels(forward).size(), 1 + 3 + 4 + 1u);
}

/// The op of `ops` named `name`, or nullptr.
const model::Operation* op_named(const std::vector<model::Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

TEST(ContextParallel, EachRankAttendsWithItsRealHalfShapeAndTheKernelLoopsOverIt) {
  ScheduleInputs in = cp2_dp2();
  in.model.kv_heads = 2;
  const ScheduleInputs view = context_parallel_rank_view(in);
  const auto shape = shape_of(in);
  const double s = static_cast<double>(view.model.seq_len);  // the rank's 8 tokens
  const auto forward = ring_attention_pass(model::layer_forward_ops(view.model, shape), view.model, shape, 2, true);
  const auto backward = ring_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, 2, false);
  // Forward step 1: rank 0 holds rank 1's KV, so only its second query chunk attends, to both
  // KV chunks; rank 1 holds rank 0's, so both its query chunks attend to the first KV chunk.
  const auto& r0 = forward.rank_steps[0][1].front();
  const auto& r1 = forward.rank_steps[1][1].front();
  EXPECT_DOUBLE_EQ(r0.m, s / 2);
  EXPECT_DOUBLE_EQ(r0.n, s);
  EXPECT_DOUBLE_EQ(r1.m, s);
  EXPECT_DOUBLE_EQ(r1.n, s / 2);
  EXPECT_DOUBLE_EQ(r0.flops, r1.flops);
  // The forward kernel loops over the keys, the backward over the queries.
  EXPECT_DOUBLE_EQ(model::attention_loop_length(r0), s);
  EXPECT_DOUBLE_EQ(model::attention_loop_length(r1), s / 2);
  const auto& b0 = backward.rank_steps[0][0].front();
  const auto& b1 = backward.rank_steps[1][0].front();
  EXPECT_EQ(b0.kind, model::OpKind::fused_attention_backward);
  EXPECT_DOUBLE_EQ(model::attention_loop_length(b0), s / 2);
  EXPECT_DOUBLE_EQ(model::attention_loop_length(b1), s);
  // A square call reads the same either way.
  const auto whole = model::make_fused_attention(view.model, shape);
  EXPECT_DOUBLE_EQ(model::attention_loop_length(whole), whole.m);
}

TEST(ContextParallel, TheSlowerShapeSetsTheGroupsPace) {
  ScheduleInputs in = cp2_dp2();
  const ScheduleInputs view = context_parallel_rank_view(in);
  const auto shape = shape_of(in);
  const auto backward = ring_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, 2, false);
  // An attention kernel whose backward gets faster with a longer query loop: rank 0's half
  // step loops over half the queries, so rank 0 is the slower.
  model::DeviceProfile dev = in.device;
  model::AttentionKernel kernel;
  kernel.name = "k";
  kernel.curves.push_back({false, 16, {{4, 0.5, 0.1}, {8, 0.5, 0.4}}});
  kernel.curves.push_back({true, 16, {{4, 0.5, 0.1}, {8, 0.5, 0.4}}});
  dev.attention_kernels = {kernel};
  dev.attention_kernel = "k";
  dev.peak_bf16 = 1e9;  // attention-bound steps
  EXPECT_EQ(slowest_rank(backward, dev), 0u);
  Seconds r0 = 0, r1 = 0;
  for (const auto& step : backward.rank_steps[0]) r0 += model::ops_duration(step, dev);
  for (const auto& step : backward.rank_steps[1]) r1 += model::ops_duration(step, dev);
  EXPECT_GT(r0, 1.5 * r1);
  // And the schedule times every rank's steps as rank 0's.
  in.device = dev;
  const Program p = build_program(in);
  const Stream* compute = stream_named(p.ranks[1], "compute");
  ASSERT_TRUE(compute);
  const int step0 = task_named(*compute, "backward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(step0, 0);
  EXPECT_NEAR(compute->tasks[static_cast<std::size_t>(step0)].duration,
              model::ops_duration(backward.rank_steps[0][0], dev), 1e-12);
}

TEST(ContextParallel, ForwardStepsPackKvOnceAndCorrectEachStepsRows) {
  ScheduleInputs in = cp2_dp2();
  in.model.kv_heads = 2;  // K and V: 2 of the 4 heads of 16
  const ScheduleInputs view = context_parallel_rank_view(in);
  const auto shape = shape_of(in);
  const auto forward = ring_attention_pass(model::layer_forward_ops(view.model, shape), view.model, shape, 2, true);
  const double q = 2.0 * 8 * 64, kv = 2.0 * 2 * 8 * 2 * 16, rows = 4.0 * 8;  // bf16 Q; K and V; lse rows
  EXPECT_DOUBLE_EQ(forward.before.back().bytes, 2 * kv);  // torch.cat(k, v): read and written
  EXPECT_EQ(forward.before.back().kernel, "chunk_grad_cat");
  for (std::size_t r = 0; r < 2; ++r) {
    const auto& steps = forward.rank_steps[r];
    const auto* zero = op_named(steps[0], "cp_out_zero");
    ASSERT_TRUE(zero);
    EXPECT_DOUBLE_EQ(zero->bytes, q);
    // The step 1 block's rows: rank 0 the second query chunk, rank 1 both.
    const double share = r == 0 ? 0.5 : 1.0;
    const auto* lse = op_named(steps[1], "cp_lse_correction step 1");
    ASSERT_TRUE(lse);
    EXPECT_DOUBLE_EQ(lse->bytes, 20 * share * rows);
    // After the ring: one output correction per step, each over the rows its step covered.
    const auto* out0 = op_named(steps[1], "cp_out_correction step 0");
    const auto* out1 = op_named(steps[1], "cp_out_correction step 1");
    ASSERT_TRUE(out0 && out1);
    EXPECT_DOUBLE_EQ(out0->bytes, 3 * q + 8 * rows);
    EXPECT_DOUBLE_EQ(out1->bytes, share * (3 * q + 8 * rows));
    EXPECT_EQ(op_named(steps[0], "cp_out_correction step 0"), nullptr);
    // sbhd: the half-sequence slices are views, no copy of Q or KV per step.
    for (const auto& op : steps[1]) EXPECT_EQ(op.name.find("copy"), std::string::npos) << op.name;
  }
}

TEST(ContextParallel, BackwardWritesEveryGradientRowOnceByCopyThenAdds) {
  for (long cp : {2L, 4L}) {
    ScheduleInputs in = cp2_dp2();
    in.plan.cp = cp;
    in.model.kv_heads = 2;
    const ScheduleInputs view = context_parallel_rank_view(in);
    const auto shape = shape_of(in);
    const auto backward =
        ring_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, cp, false);
    const double tokens = static_cast<double>(view.model.seq_len);
    const double q = 2.0 * tokens * 64, kv = 2.0 * 2 * tokens * 2 * 16;
    // Set-up: the saved KV copied into the first send buffer.
    EXPECT_TRUE(op_named(backward.before, "cp_kv_to_send_buffer"));
    EXPECT_DOUBLE_EQ(op_named(backward.before, "cp_kv_to_send_buffer")->bytes, 2 * kv);
    for (long r = 0; r < cp; ++r) {
      double dq_copied = 0, dq_added = 0, q_attended = 0;
      for (const auto& step : backward.rank_steps[static_cast<std::size_t>(r)]) {
        const auto& block = step.front();
        q_attended += block.m / tokens;
        for (const auto& op : step) {
          if (op.name.rfind("cp_dq_copy", 0) == 0) dq_copied += op.bytes / 2;
          if (op.name.rfind("cp_dq_add", 0) == 0) {
            dq_added += op.bytes / 3;
            EXPECT_EQ(op.kernel, "residual_add");
          }
          if (op.name.rfind("cp_dkv_cat", 0) == 0) {
            // The step's dK, dV: half the rank's on the half-KV steps.
            EXPECT_DOUBLE_EQ(op.bytes, 2 * kv * block.n / tokens) << "cp " << cp << " rank " << r;
          }
        }
      }
      // Each row of dQ first copied, then every further contribution added.
      EXPECT_DOUBLE_EQ(dq_copied, q) << "cp " << cp << " rank " << r;
      EXPECT_DOUBLE_EQ(dq_copied + dq_added, q * q_attended) << "cp " << cp << " rank " << r;
    }
  }
}

TEST(ContextParallel, EachRingStepOverlapsItsAttentionAndFeedsTheNext) {
  const Program p = build_program(cp2_dp2());
  validate(p);
  EXPECT_EQ(p.samples_per_step, 1 * 4 * 2);  // micro-batch x 4 micro-batches x DP 2: CP shares sequences
  ASSERT_EQ(p.ranks.size(), 4u);
  const RankProgram& r = p.ranks[0];
  int compute_index = -1, ring_index = -1;
  const Stream* compute = stream_named(r, "compute", &compute_index);
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  // Forward, CP 2: one transfer (KV for step 1), issued with step 0's attention, not after it.
  const int sent = task_named(*ring, "forward mb0 c0 layer 0 cp ring step 0");
  const int step0 = task_named(*compute, "forward mb0 c0 layer 0 cp attention step 0");
  const int step1 = task_named(*compute, "forward mb0 c0 layer 0 cp attention step 1");
  ASSERT_GE(sent, 0);
  ASSERT_GE(step0, 0);
  ASSERT_EQ(step1, step0 + 1);
  EXPECT_FALSE(waits_for(ring->tasks[static_cast<std::size_t>(sent)], compute_index, step0));
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(sent)], compute_index, step0 - 1));  // QKV ready
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step1)], ring_index, sent));
  EXPECT_EQ(task_named(*ring, "forward mb0 c0 layer 0 cp ring step 1"), -1);
  // The call: a ring exchange of K and V (2 x 8 tokens x 64 x bf16) between the CP pair.
  const auto& call = p.collectives[static_cast<std::size_t>(ring->tasks[static_cast<std::size_t>(sent)].collective)];
  EXPECT_EQ(call.op, collective::Op::ring_exchange);
  EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(call.size, 2.0 * 8 * 64 * 2);
  // Backward: step 1's transfer returns dK, dV of step 0, so it waits for step 0's attention.
  const int back_sent1 = task_named(*ring, "backward mb0 c0 layer 0 cp ring step 1");
  const int back_step0 = task_named(*compute, "backward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(back_sent1, 0);
  ASSERT_GE(back_step0, 0);
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(back_sent1)], compute_index, back_step0));
  // The layer's remaining backward waits for its dK, dV to come home.
  bool after_waits = false;
  for (std::size_t i = static_cast<std::size_t>(back_step0) + 2; i < compute->tasks.size(); ++i)
    if (std::string(compute->tasks[i].name).find("backward mb0 c0 layer 0 ") == 0) {
      after_waits = waits_for(compute->tasks[i], ring_index, back_sent1);
      break;
    }
  EXPECT_TRUE(after_waits);
}

TEST(ContextParallel, FullRecomputeRunsTheForwardRingAgainBeforeTheBackwardOne) {
  // Megatron-core checkpoints whole layers, TE's attention included: a backward pass first
  // re-runs the layer's forward, whose attention goes around the ring again.
  ScheduleInputs in = cp2_dp2();
  in.plan.activation_checkpointing = true;
  const Program p = build_program(in);
  validate(p);
  const RankProgram& r = p.ranks[0];
  int compute_index = -1, ring_index = -1;
  const Stream* compute = stream_named(r, "compute", &compute_index);
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  const int forward1 = task_named(*compute, "forward mb0 c0 layer 0 cp attention step 1");
  const int recompute0 = task_named(*compute, "recompute mb0 c0 layer 0 cp attention step 0");
  const int recompute1 = task_named(*compute, "recompute mb0 c0 layer 0 cp attention step 1");
  const int backward0 = task_named(*compute, "backward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(forward1, 0);
  ASSERT_GT(recompute0, forward1);
  ASSERT_EQ(recompute1, recompute0 + 1);
  ASSERT_GT(backward0, recompute1);
  // The recomputed attention's step 1 waits for its own KV transfer, issued with its step 0.
  const int resent = task_named(*ring, "recompute mb0 c0 layer 0 cp ring step 0");
  ASSERT_GE(resent, 0);
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(recompute1)], ring_index, resent));
  EXPECT_LT(resent, task_named(*ring, "backward mb0 c0 layer 0 cp ring step 1"));
  // Every layer's backward recomputes as many compute tasks as its forward ran, and nothing is
  // recomputed without checkpointing.
  auto count = [&](const std::string& prefix) {
    long n = 0;
    for (const auto& t : compute->tasks) n += std::string(t.name).rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  };
  const long per_layer = count("forward mb0 c0 layer 0 ");
  EXPECT_GE(per_layer, 3);  // the ops before the attention, its two steps, the ops after
  EXPECT_EQ(count("recompute mb0 c0 layer 0 "), per_layer);
  EXPECT_EQ(count("recompute "), in.plan.accumulation * in.model.layers * per_layer);
  const Program plain = build_program(cp2_dp2());
  for (const auto& t : stream_named(plain.ranks[0], "compute")->tasks)
    EXPECT_NE(std::string(t.name).rfind("recompute ", 0), 0u) << t.name;
}

TEST(ContextParallel, AllToAllTradesSequenceShardsForHeadShardsAroundOneWholeSequenceAttention) {
  // cp_comm_type a2a (TE's AttnFuncWithCPAndQKVOA2A): Q, K, V all-to-all'd in, the attention
  // over all 16 tokens on 2 of the 4 heads, O all-to-all'd back; backward dO in, dQ, dK, dV out.
  ScheduleInputs in = cp2_dp2();
  in.plan.cp_comm = plan::CpCommType::a2a;
  const ScheduleInputs view = context_parallel_rank_view(in);
  const model::LayerShape shape = shape_of(view);
  const auto forward_ops = model::layer_forward_ops(view.model, shape);
  const RingAttentionPass forward = a2a_attention_pass(forward_ops, view.model, shape, 2, true);
  const Bytes q = 2.0 * 1 * 8 * 4 * 16, kv = 2 * q;  // bf16, micro-batch 1 x 8 tokens x 4 heads x 16
  EXPECT_EQ(forward.a2a_before, (std::vector<Bytes>{q, kv / 2, kv / 2}));
  EXPECT_EQ(forward.a2a_after, (std::vector<Bytes>{q}));
  ASSERT_EQ(forward.rank_steps.size(), 2u);
  ASSERT_EQ(forward.rank_steps[0].size(), 1u);
  const auto& step = forward.rank_steps[0][0];
  const auto attention = std::find_if(step.begin(), step.end(), [](const model::Operation& op) {
    return op.kind == model::OpKind::fused_attention;
  });
  ASSERT_NE(attention, step.end());
  const auto rank_block = std::find_if(forward_ops.begin(), forward_ops.end(), [](const model::Operation& op) {
    return op.kind == model::OpKind::fused_attention;
  });
  EXPECT_DOUBLE_EQ(attention->m, 2 * rank_block->m);  // the whole sequence
  EXPECT_DOUBLE_EQ(attention->batch, rank_block->batch / 2);  // half the heads
  EXPECT_DOUBLE_EQ(attention->flops, 2 * rank_block->flops);
  EXPECT_TRUE(attention->causal);
  const RingAttentionPass backward =
      a2a_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, 2, false);
  EXPECT_EQ(backward.a2a_before, (std::vector<Bytes>{q}));
  EXPECT_EQ(backward.a2a_after, (std::vector<Bytes>{q, kv / 2, kv / 2}));
  // The program: the all-to-alls on the CP stream, one after another, the attention after the
  // last of them, the pass's rest after the output's.
  const Program p = build_program(in);
  validate(p);
  int compute_index = -1, ring_index = -1;
  const Stream* compute = stream_named(p.ranks[0], "compute", &compute_index);
  const Stream* ring = stream_named(p.ranks[0], "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  const int in2 = task_named(*ring, "forward mb0 c0 layer 0 cp all-to-all in 2");
  const int out0 = task_named(*ring, "forward mb0 c0 layer 0 cp all-to-all out 0");
  const int step0 = task_named(*compute, "forward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(in2, 0);
  ASSERT_GE(out0, 0);
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step0)], ring_index, in2));
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(out0)], compute_index, step0));
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step0 + 1)], ring_index, out0));
  const auto& call = p.collectives[static_cast<std::size_t>(ring->tasks[static_cast<std::size_t>(in2)].collective)];
  EXPECT_EQ(call.op, collective::Op::alltoall);
  EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(call.size, kv / 2);
  EXPECT_EQ(task_named(*ring, "forward mb0 c0 layer 0 cp ring step 0"), -1);
}

TEST(ContextParallel, AllGatherGathersKvOnceAndEachChunkAttendsToTheKeysUpToItsEnd) {
  // cp_comm_type all_gather (TE's AttnFuncWithCPAndKVAllGather): K and V gathered, exposed; rank r
  // holds chunks r and 2cp-1-r, which attend to r + 1 and 2cp - r chunks of keys: 2cp + 1 chunk
  // pairs of work on every rank. Backward reduce-scatters dK and dV after.
  ScheduleInputs in = cp2_dp2();
  in.plan.cp_comm = plan::CpCommType::all_gather;
  const ScheduleInputs view = context_parallel_rank_view(in);
  const model::LayerShape shape = shape_of(view);
  const auto forward_ops = model::layer_forward_ops(view.model, shape);
  const RingAttentionPass forward = all_gather_attention_pass(forward_ops, view.model, shape, 2, true);
  const Bytes kv = 2 * 2.0 * 1 * 8 * 4 * 16;  // K and V of the rank's 8 tokens, bf16
  EXPECT_EQ(forward.gather_before, (std::vector<Bytes>{kv, kv}));  // cp x each of K, V
  EXPECT_TRUE(forward.scatter_after.empty());
  ASSERT_EQ(forward.rank_steps.size(), 2u);
  auto keys_of = [](const std::vector<model::Operation>& step) {
    std::vector<double> keys;
    for (const auto& op : step)
      if (op.kind == model::OpKind::fused_attention || op.kind == model::OpKind::fused_attention_backward)
        keys.push_back(op.n);
    return keys;
  };
  EXPECT_EQ(keys_of(forward.rank_steps[0][0]), (std::vector<double>{4, 16}));  // chunks 0 and 3 of 4 tokens
  EXPECT_EQ(keys_of(forward.rank_steps[1][0]), (std::vector<double>{8, 12}));  // chunks 1 and 2
  auto flops_of = [](const std::vector<model::Operation>& step) {
    double f = 0;
    for (const auto& op : step) f += op.kind == model::OpKind::fused_attention ? op.flops : 0;
    return f;
  };
  EXPECT_DOUBLE_EQ(flops_of(forward.rank_steps[0][0]), flops_of(forward.rank_steps[1][0]));
  const RingAttentionPass backward =
      all_gather_attention_pass(model::layer_backward_ops(view.model, shape), view.model, shape, 2, false);
  EXPECT_EQ(backward.gather_before, (std::vector<Bytes>{kv, kv}));
  EXPECT_EQ(backward.scatter_after, (std::vector<Bytes>{kv, kv}));
  // The program: the two gathers on the CP stream, then the step, then (backward) the scatters.
  const Program p = build_program(in);
  validate(p);
  int compute_index = -1, ring_index = -1;
  const Stream* compute = stream_named(p.ranks[0], "compute", &compute_index);
  const Stream* ring = stream_named(p.ranks[0], "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  const int gathered = task_named(*ring, "forward mb0 c0 layer 0 cp all-gather 1");
  const int step0 = task_named(*compute, "forward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(gathered, 0);
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step0)], ring_index, gathered));
  const auto& call = p.collectives[static_cast<std::size_t>(ring->tasks[static_cast<std::size_t>(gathered)].collective)];
  EXPECT_EQ(call.op, collective::Op::all_gather);
  EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  const int scattered = task_named(*ring, "backward mb0 c0 layer 0 cp reduce-scatter 1");
  const int back0 = task_named(*compute, "backward mb0 c0 layer 0 cp attention step 0");
  ASSERT_GE(scattered, 0);
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(scattered) - 1], compute_index, back0));
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(back0 + 1)], ring_index, scattered));
}

TEST(ContextParallel, GradientsReduceOverDataTimesContextAndCpGroupsAreTpApart) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.cp = 2;
  in.plan.flash_attention = true;
  in.plan.sharding = plan::Sharding::zero1;
  in.layout = plan::layout_of(in.plan, 16, 8);  // TP 2 x CP 2 x DP 2 x PP 2
  ASSERT_EQ(in.layout.dp, 2);
  const Program p = build_program(in);
  validate(p);
  EXPECT_EQ(p.samples_per_step, 1 * 4 * 2);
  bool saw_cp = false, saw_gradients = false;
  for (const auto& c : p.collectives) {
    if (c.op == collective::Op::ring_exchange && c.group.front() == 0) {
      EXPECT_EQ(c.group, (std::vector<int>{0, 2}));  // tensor, context, data, pipeline
      saw_cp = true;
    }
    if (c.op == collective::Op::reduce_scatter && c.group.size() > 2) {
      if (c.group.front() == 0) { EXPECT_EQ(c.group, (std::vector<int>{0, 2, 4, 6})); }
      saw_gradients = true;
    }
  }
  EXPECT_TRUE(saw_cp);
  EXPECT_TRUE(saw_gradients);
}

TEST(ContextParallel, UnderTpOverlapTheAttentionPieceBecomesTheRingSteps) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.cp = 2;
  in.plan.flash_attention = true;
  in.plan.sequence_parallel = true;
  in.plan.tp_comm_overlap = true;
  in.layout = plan::layout_of(in.plan, 16, 8);
  const Program p = build_program(in);
  validate(p);
  const RankProgram& r = p.ranks[0];
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  const Stream* tp_ring = stream_named(r, "tp ring");
  ASSERT_TRUE(compute && ring && tp_ring);
  // Between the QKV's ring-gathered chunks and the output projection's pipelined chunks.
  const int qkv = task_named(*compute, "forward mb0 c0 qkv chunk 1");
  const int step1 = task_named(*compute, "forward mb0 c0 cp attention step 1");
  const int proj = task_named(*compute, "forward mb0 c0 attn_out chunk 0");
  ASSERT_GE(qkv, 0);
  ASSERT_GT(step1, qkv);
  ASSERT_GT(proj, step1);
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step1)], ring_index,
                        task_named(*ring, "forward mb0 c0 cp ring step 0")));
  EXPECT_FALSE(tp_ring->tasks.empty());
}

TEST(ContextParallel, ActivationsAndBoundariesAreTheRanksShareOfTheSequence) {
  ScheduleInputs with = testing_support::tiny_tp2_pp2_dp2();
  with.plan.flash_attention = true;
  with.plan.cp = 2;
  with.layout = plan::layout_of(with.plan, 16, 8);
  ScheduleInputs without = testing_support::tiny_tp2_pp2_dp2();
  without.plan.flash_attention = true;
  const Program a = build_program(with), b = build_program(without);
  auto boundary = [](const Program& p) {
    for (const auto& c : p.collectives)
      if (c.op == collective::Op::send_recv) return c.size;
    return Bytes{0};
  };
  EXPECT_DOUBLE_EQ(boundary(a) * 2, boundary(b));
}

}  // namespace
}  // namespace trainsim::program

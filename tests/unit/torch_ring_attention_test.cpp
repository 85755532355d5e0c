// torchtitan's context parallelism as plain data: a layer pass's SDPA as PyTorch's ring
// attention (program/torch_ring_attention.hpp), and the tasks, calls and groups FSDP2's sharded
// schedule makes of it (no SimGrid).
#include "program/torch_ring_attention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/context_parallel.hpp"
#include "support/fixtures.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::find_task;
using testing_support::index_of;
using testing_support::stream_named;
using testing_support::task_named;
using testing_support::waits_for;

const model::TransformerSpec kTiny{"tiny", 2, 64, 4, 256, 100, 16, false};

/// The tiny model's layer passes on a CP rank (seq 16 / cp), fused attention, micro-batch 2.
struct RankView {
  model::TransformerSpec model;
  model::LayerShape shape{2, 1, false};
  std::vector<model::Operation> forward, backward;
  explicit RankView(long cp) : model(model::context_parallel_share(kTiny, cp)) {
    shape.flash_attention = true;
    forward = model::layer_forward_ops(model, shape);
    backward = model::layer_backward_ops(model, shape);
  }
};

std::vector<std::string> names_of(const std::vector<model::Operation>& ops) {
  std::vector<std::string> names;
  for (const auto& op : ops) names.push_back(op.name);
  return names;
}

bool has(const std::vector<model::Operation>& ops, const std::string& name) {
  const auto names = names_of(ops);
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(TorchRingAttention, ForwardGathersEveryRanksKvOnceAndMergesEachStepInFp32) {
  const RankView v(2);
  const auto dev = testing_support::round_number_device();
  const TorchRingPass pass = torch_ring_attention_pass(v.forward, v.model, v.shape, 2, true,
                                                       plan::CpRotateMethod::allgather, dev);
  // K and V of the rank's 8 tokens at every query head (repeated), bf16: 2 x 2 B x 2 x 8 x 4 x 16.
  const Bytes kv = 2.0 * 2 * 2 * 8 * 4 * 16;
  EXPECT_DOUBLE_EQ(pass.gathered, 2 * kv);  // nccl-tests S: both ranks' K, V
  EXPECT_TRUE(pass.kv_bytes.empty());
  EXPECT_TRUE(pass.accumulations.empty());
  EXPECT_TRUE(pass.dkv_bytes.empty());
  ASSERT_EQ(pass.steps.size(), 2u);
  EXPECT_TRUE(has(pass.before, "cp_kv_contiguous"));
  EXPECT_TRUE(has(pass.before, "cp_kv_send_buffer"));
  // Step 0: the causal block of the rank's own chunks, its output widened to fp32.
  EXPECT_TRUE(pass.steps[0].front().causal);
  EXPECT_TRUE(has(pass.steps[0], "cp_out_to_fp32 step 0"));
  // Step 1 (the last: no send buffer): the slowest rank's half block (rank 0: the second query
  // chunk on both KV chunks), the merge's nine kernels and the two torch.cat of its partial update.
  EXPECT_FALSE(has(pass.steps[1], "cp_kv_send_buffer step 1"));
  EXPECT_EQ(pass.steps[1].front().name, "flash_attention_cp_half_q step 1");
  EXPECT_TRUE(has(pass.steps[1], "cp_lse_sigmoid step 1"));
  EXPECT_TRUE(has(pass.steps[1], "cp_out_rebuild step 1"));
  EXPECT_EQ(pass.steps[1].size(), 1u + 9 + 2);
  EXPECT_TRUE(has(pass.after, "cp_out_to_bf16"));
  EXPECT_EQ(
      torch_ring_pass_labels(pass),
      (std::vector<std::string>{pass.before.front().name + ".." + pass.before.back().name,
                                "cp kv all-gather", "cp attention step 0", "cp attention step 1",
                                pass.after.front().name + ".." + pass.after.back().name}));
}

TEST(TorchRingAttention, AllToAllRotatesKvEveryStepButTheLast) {
  const RankView v(4);
  const auto dev = testing_support::round_number_device();
  const TorchRingPass pass = torch_ring_attention_pass(v.forward, v.model, v.shape, 4, true,
                                                       plan::CpRotateMethod::alltoall, dev);
  const Bytes kv = 2.0 * 2 * 2 * 4 * 4 * 16;  // 4 tokens a rank
  EXPECT_EQ(pass.gathered, 0);
  EXPECT_EQ(pass.kv_bytes, (std::vector<Bytes>{kv, kv, kv, 0}));
  // Each step but the last concatenates the K, V it received to pass them on.
  EXPECT_TRUE(has(pass.steps[1], "cp_kv_send_buffer step 1"));
  EXPECT_TRUE(has(pass.steps[2], "cp_kv_send_buffer step 2"));
  EXPECT_FALSE(has(pass.steps[3], "cp_kv_send_buffer step 3"));
  const auto labels = torch_ring_pass_labels(pass);
  EXPECT_EQ(
      std::count_if(labels.begin(), labels.end(),
                    [](const std::string& l) { return l.rfind("cp kv rotation step ", 0) == 0; }),
      3);
}

TEST(TorchRingAttention, BackwardSendsFp32DkvEveryStepAfterAddingItsOwn) {
  const RankView v(2);
  const auto dev = testing_support::round_number_device();
  const TorchRingPass pass = torch_ring_attention_pass(v.backward, v.model, v.shape, 2, false,
                                                       plan::CpRotateMethod::allgather, dev);
  const Bytes kv = 2.0 * 2 * 2 * 8 * 4 * 16;
  EXPECT_DOUBLE_EQ(pass.gathered, 2 * kv);
  EXPECT_EQ(pass.dkv_bytes, (std::vector<Bytes>{2 * kv, 2 * kv}));  // fp32, the last one home
  ASSERT_EQ(pass.steps.size(), 2u);
  ASSERT_EQ(pass.accumulations.size(), 2u);
  EXPECT_TRUE(has(pass.before, "cp_dq_zeros"));
  EXPECT_TRUE(has(pass.before, "cp_dkv_zeros"));
  EXPECT_EQ(pass.steps[0].front().kind, model::OpKind::fused_attention_backward);
  EXPECT_TRUE(pass.steps[0].front().causal);  // the causal block first, as the forward
  EXPECT_TRUE(has(pass.accumulations[0], "cp_dkv_add step 0"));
  EXPECT_TRUE(has(pass.accumulations[0], "cp_dkv_send_buffer step 0"));
  EXPECT_TRUE(has(pass.accumulations[0], "cp_dq_add step 0"));
  EXPECT_TRUE(has(pass.after, "cp_dq_to_bf16"));
  EXPECT_TRUE(has(pass.after, "cp_dkv_to_bf16"));
  const auto labels = torch_ring_pass_labels(pass);
  EXPECT_EQ(labels[1], "cp kv all-gather");
  EXPECT_EQ(labels[2], "cp attention step 0");
  EXPECT_EQ(labels[3], "cp dkv step 0");
  EXPECT_EQ(labels[4], "cp dkv rotation step 0");
}

/// The tiny model under FSDP2 on 4 ranks: CP 2 x DP 2, torchtitan's defaults.
ScheduleInputs fsdp2_cp2(bool full_recompute) {
  ScheduleInputs in;
  in.model = kTiny;
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp2;
  in.plan.cp = 2;
  in.plan.flash_attention = true;
  in.plan.micro_batch = 2;
  in.plan.activation_checkpointing = full_recompute;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10}};
  return in;
}

TEST(TorchRingAttention, Fsdp2RunsEachLayersAttentionAroundItsCpPair) {
  ASSERT_EQ(plan::layout_of(fsdp2_cp2(false).plan, 4, 4).dp, 2);
  const Program prog = build_program(fsdp2_cp2(false));
  validate(prog);
  EXPECT_EQ(prog.samples_per_step, 2 * 2);  // micro-batch x DP 2: a CP pair shares its sequences
  const RankProgram& r = prog.ranks[0];
  int compute_index = -1, ring_index = -1;
  const Stream* compute = stream_named(r, "compute", &compute_index);
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  // Forward: the K, V all-gather beside step 0, which step 1 waits for; the pass's last task keeps
  // its name and waits for the last step.
  const int gather = index_of(*ring, "forward layer 0 mb0 cp kv all-gather");
  const int step0 = index_of(*compute, "forward layer 0 mb0 cp attention step 0");
  const int step1 = index_of(*compute, "forward layer 0 mb0 cp attention step 1");
  ASSERT_EQ(step1, step0 + 1);
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(gather)], compute_index, step0 - 1));
  EXPECT_FALSE(waits_for(compute->tasks[static_cast<std::size_t>(step0)], ring_index, gather));
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(step1)], ring_index, gather));
  EXPECT_TRUE(waits_for(find_task(*compute, "forward layer 0 mb0"), compute_index, step1));
  // The call: an all-gather over the CP pair (ranks 0 and 1: TP 1, CP next to it).
  const auto& call = prog.collectives[static_cast<std::size_t>(
      ring->tasks[static_cast<std::size_t>(gather)].collective)];
  EXPECT_EQ(call.op, collective::Op::all_gather);
  EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  // Backward: step i's dK, dV update waits for step i - 1's rotation, its own rotation for it,
  // and the pass's end for the last rotation (the rank's own dK, dV back home).
  const int dkv0 = index_of(*compute, "backward layer 0 mb0 cp dkv step 0");
  const int sent0 = index_of(*ring, "backward layer 0 mb0 cp dkv rotation step 0");
  const int dkv1 = index_of(*compute, "backward layer 0 mb0 cp dkv step 1");
  const int sent1 = index_of(*ring, "backward layer 0 mb0 cp dkv rotation step 1");
  EXPECT_TRUE(waits_for(ring->tasks[static_cast<std::size_t>(sent0)], compute_index, dkv0));
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(dkv1)], ring_index, sent0));
  EXPECT_TRUE(waits_for(find_task(*compute, "backward layer 0 mb0"), ring_index, sent1));
  // FSDP shards over DP x CP: the gradients are reduce-scattered over all four ranks.
  bool saw = false;
  for (const auto& c : prog.collectives)
    if (c.op == collective::Op::reduce_scatter) {
      EXPECT_EQ(c.group.size(), 4u);
      saw = true;
    }
  EXPECT_TRUE(saw);
  // Nothing recomputed without checkpointing.
  EXPECT_EQ(task_named(*compute, "recompute layer 0 mb0 cp attention step 0"), -1);
}

TEST(TorchRingAttention, FullRecomputeRunsTheRingAgainBeforeTheBackwardOne) {
  const Program prog = build_program(fsdp2_cp2(true));
  validate(prog);
  const RankProgram& r = prog.ranks[1];
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  const int recompute1 = index_of(*compute, "recompute layer 1 mb0 cp attention step 1");
  const int backward0 = index_of(*compute, "backward layer 1 mb0 cp attention step 0");
  EXPECT_LT(recompute1, backward0);
  EXPECT_TRUE(waits_for(compute->tasks[static_cast<std::size_t>(recompute1)], ring_index,
                        index_of(*ring, "recompute layer 1 mb0 cp kv all-gather")));
  EXPECT_LT(index_of(*ring, "recompute layer 1 mb0 cp kv all-gather"),
            index_of(*ring, "backward layer 1 mb0 cp kv all-gather"));
}

TEST(TorchRingAttention, HybridShardingShardsOverDpShardTimesCp) {
  // torchtitan's HSDP with CP: FSDP over dp_shard x cp, replicas outermost. 8 ranks: DP 4
  // (2 replicas x shard 2) x CP 2.
  ScheduleInputs in = fsdp2_cp2(false);
  in.plan.shard_degree = 2;
  in.layout = plan::layout_of(in.plan, 8, 8);
  ASSERT_EQ(in.layout.dp, 4);
  ASSERT_EQ(in.layout.shard, 2);
  const plan::Layout view = plan::context_parallel_rank_layout(in.layout);
  EXPECT_EQ(view.dp, 8);
  EXPECT_EQ(view.shard, 4);
  const Program prog = build_program(in);
  validate(prog);
  bool scattered = false, replicated = false;
  for (const auto& c : prog.collectives) {
    if (c.op == collective::Op::reduce_scatter && c.group.front() == 0) {
      EXPECT_EQ(c.group, (std::vector<int>{0, 1, 2, 3}));  // two DP ranks' CP pairs
      scattered = true;
    }
    if (c.op == collective::Op::all_reduce && c.group.front() == 0 && c.group.size() == 2) {
      EXPECT_EQ(c.group, (std::vector<int>{0, 4}));  // the same shard position in the other replica
      replicated = true;
    }
  }
  EXPECT_TRUE(scattered);
  EXPECT_TRUE(replicated);
}

TEST(TorchRingAttention, FsdpInsidePipelineStagesRunsTheSameRingPerLayer) {
  // torchtitan's PP with CP: 8 ranks, CP 2 x DP 2 x PP 2, FSDP2 inside each stage, 1F1B.
  ScheduleInputs in = fsdp2_cp2(false);
  in.plan.pp = 2;
  in.plan.accumulation = 2;
  in.layout = plan::layout_of(in.plan, 8, 8);
  in.stages = {{1000, 100, 10}, {1000, 100, 10}};
  const Program prog = build_program(in);
  validate(prog);
  EXPECT_EQ(prog.samples_per_step, 2 * 2 * 2);  // micro-batch x micro-batches x DP 2
  const RankProgram& r = prog.ranks[0];         // stage 0
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "cp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  const int gather = index_of(*ring, "forward mb1 c0 layer 0 cp kv all-gather");
  EXPECT_TRUE(waits_for(find_task(*compute, "forward mb1 c0 layer 0 cp attention step 1"),
                        ring_index, gather));
  const int sent1 = index_of(*ring, "backward mb1 c0 layer 0 cp dkv rotation step 1");
  EXPECT_GE(sent1, 0);
  // The CP pair is ranks 0 and 1 (TP 1, CP next to it), stage 0.
  const auto& call = prog.collectives[static_cast<std::size_t>(
      ring->tasks[static_cast<std::size_t>(gather)].collective)];
  EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace trainsim::program

// The tensors a sharded schedule's passes ask the caching allocator for, one request each
// (program/activation_allocations.hpp), as plain data: one block with and without activation
// checkpointing, the totals against the memory model's terms, and a sharded program using them.
#include "program/activation_allocations.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "support/fixtures.hpp"

namespace trainsim::program {
namespace {

using Kind = AllocationStep::Kind;

// A small BERT-like block: GELU MLP, LayerNorm, dropout masks; micro-batch 2 x seq 16, hidden 64.
model::TransformerSpec tiny() { return {"tiny", 2, 64, 4, 256, 100, 16, false}; }
model::LayerShape shape() { return {2, 1, false, true, true, false}; }

std::vector<Kind> kinds(const PassAllocations& p) {
  std::vector<Kind> k;
  for (const auto& s : p.sequence.steps) k.push_back(s.kind);
  return k;
}

TEST(ActivationAllocations, ACheckpointedBlockKeepsItsOutputAndRecomputesItsTensorsInItsBackward) {
  const auto s = tiny();
  const auto layer = model::layer_stored_activations(s, shape());
  const Bytes input = model::layer_input_bytes(s, shape());  // 2 B x 2 x 16 x 64 = 4,096 B
  ASSERT_EQ(input, 4096);
  const auto a = activation_allocations(s, shape(), /*checkpointing=*/true, {});
  // Forward: every tensor of the block computed and dropped, its output (the next block's
  // input, the one tensor its checkpoint keeps) allocated while they are live.
  const auto& f = a.layer_forward;
  ASSERT_EQ(f.sequence.steps.size(), 2 * layer.size() + 1);
  for (std::size_t i = 0; i < layer.size(); ++i) {
    EXPECT_EQ(f.sequence.steps[i].kind, Kind::transient);
    EXPECT_EQ(f.sequence.steps[i].bytes, layer[i].bytes) << layer[i].name;
  }
  EXPECT_EQ(f.sequence.steps[layer.size()].kind, Kind::keep);
  EXPECT_EQ(f.sequence.steps[layer.size()].bytes, input);
  EXPECT_EQ(f.kept, input);
  EXPECT_EQ(f.workspace, model::total_bytes(layer));
  EXPECT_EQ(a.last_layer_forward.kept, 0);  // its output is the head's input, which the head keeps
  EXPECT_EQ(a.embedding_forward.kept,
            model::total_bytes(model::embedding_stored_activations(s, shape())) +
                input);  // + layer 0's input
  // Backward: the recompute allocates the block's tensors again one by one, then the gradients
  // in and out (each the largest tensor's size), then the parameters' gradient; the recomputed
  // tensors die in reverse order, then the gradients, then the checkpoint's input.
  const auto& b = a.layer_backward;
  Bytes largest = 0;
  for (const auto& t : layer) largest = std::max(largest, t.bytes);
  const std::size_t n = layer.size();
  ASSERT_EQ(b.sequence.steps.size(), 2 * n + 2 + 1 + 2 + 1);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(b.sequence.steps[i].bytes, layer[i].bytes);
  EXPECT_EQ(b.sequence.steps[n].bytes, largest);
  EXPECT_EQ(b.sequence.steps[n + 1].bytes, largest);
  EXPECT_EQ(b.sequence.steps[n + 2].kind, Kind::task_alloc);
  EXPECT_EQ(b.sequence.steps[n + 3].slot, static_cast<int>(n) - 1);  // the last recomputed first
  EXPECT_EQ(b.sequence.steps.back().kind, Kind::free_kept);
  EXPECT_EQ(b.sequence.steps.back().bytes, input);
  // The memory model's workspace under checkpointing: one recomputed layer + 2 x the largest.
  EXPECT_EQ(b.workspace, model::total_bytes(layer) + 2 * largest);
  EXPECT_EQ(b.release, input);
  EXPECT_EQ(b.kept, 0);
}

TEST(ActivationAllocations,
     WithoutCheckpointingEachSavedTensorIsKeptInForwardAndFreedInReverseInBackward) {
  const auto s = tiny();
  const auto layer = model::layer_stored_activations(s, shape());
  const auto a = activation_allocations(s, shape(), /*checkpointing=*/false, {});
  const auto& f = a.layer_forward;
  ASSERT_EQ(f.sequence.steps.size(), layer.size());
  for (std::size_t i = 0; i < layer.size(); ++i) {
    EXPECT_EQ(f.sequence.steps[i].kind, Kind::keep);
    EXPECT_EQ(f.sequence.steps[i].bytes, layer[i].bytes) << layer[i].name;
  }
  EXPECT_EQ(f.workspace, 0);
  EXPECT_EQ(a.last_layer_forward.kept, f.kept);
  // The embedding keeps its norm's input and dropout mask, and no checkpoint input.
  EXPECT_EQ(a.embedding_forward.kept,
            model::total_bytes(model::embedding_stored_activations(s, shape())));
  const auto& b = a.layer_backward;
  std::vector<Bytes> freed;
  for (const auto& st : b.sequence.steps)
    if (st.kind == Kind::free_kept) freed.push_back(st.bytes);
  ASSERT_EQ(freed.size(), layer.size());
  for (std::size_t i = 0; i < layer.size(); ++i)
    EXPECT_EQ(freed[i], layer[layer.size() - 1 - i].bytes);
  Bytes largest = 0;
  for (const auto& t : layer) largest = std::max(largest, t.bytes);
  EXPECT_EQ(b.workspace, 2 * largest);
  EXPECT_EQ(b.release, model::total_bytes(layer));
  EXPECT_EQ(kinds(b).front(), Kind::transient);
}

TEST(ActivationAllocations, AMicroBatchKeepsTheMemoryModelsActivations) {
  const auto s = tiny();
  const auto sh = shape();
  const Bytes ends = model::total_bytes(model::embedding_stored_activations(s, sh)) +
                     model::total_bytes(model::head_stored_activations(s, sh));
  // memory/rank_memory.cpp: layers x layer input (checkpointed) or x the layer's tensors, plus the
  // ends.
  EXPECT_EQ(activation_allocations(s, sh, true, {}).per_micro_batch(s.layers),
            2 * model::layer_input_bytes(s, sh) + ends);
  EXPECT_EQ(activation_allocations(s, sh, false, {}).per_micro_batch(s.layers),
            2 * model::total_bytes(model::layer_stored_activations(s, sh)) + ends);
}

TEST(ActivationAllocations, TheHeadsBackwardHoldsTheLossGradientsAndTwoGradientsOfItsInput) {
  const auto s = tiny();
  const Bytes logits = 2.0 * 16 * 100;  // tokens x vocabulary
  const auto a = activation_allocations(s, shape(), true, {4 * logits, 2 * logits});
  EXPECT_EQ(a.head_backward.workspace, 6 * logits + 2 * model::layer_input_bytes(s, shape()));
  EXPECT_EQ(a.head_backward.release,
            model::total_bytes(model::head_stored_activations(s, shape())));
  EXPECT_EQ(a.embedding_backward.workspace, model::layer_input_bytes(s, shape()));
}

TEST(ActivationAllocations, ComposerMetricsRequestTheBf16LogProbabilitiesThenTheirFp32Cast) {
  const auto m = composer_metric_allocations(10, 100, 2);
  ASSERT_EQ(m.sequence.steps.size(), 8u);
  EXPECT_EQ(m.sequence.steps[0].bytes, 2000);
  EXPECT_EQ(m.sequence.steps[1].bytes, 4000);
  EXPECT_EQ(m.workspace,
            6000);  // model/composer_metrics.hpp: 6 B per element, one update at a time
  EXPECT_TRUE(totals_of(m.sequence).balanced);
}

ScheduleInputs sharded(bool checkpointing) {
  ScheduleInputs in;
  in.model = tiny();
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.shard_degree = 4;
  in.plan.micro_batch = 2;
  in.plan.accumulation = 2;
  in.plan.flash_attention = true;
  in.plan.fused_cross_entropy = true;
  in.plan.activation_checkpointing = checkpointing;
  in.plan.allocator_tensor_requests = true;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.layout = plan::layout_of(in.plan, 4, 4);
  in.device = testing_support::round_number_device();
  const auto a = activation_allocations(in.model, shape(), checkpointing, {});
  in.stages = {{1000, a.per_micro_batch(in.model.layers), a.layer_backward.workspace}};
  return in;
}

TEST(ActivationAllocations, TheShardedScheduleGivesEachPassItsSequenceAndItsTotals) {
  for (bool ckpt : {true, false}) {
    const ScheduleInputs in = sharded(ckpt);
    const Program prog = build_program(in);
    validate(prog);  // every sequence adds up to its task's alloc, workspace and release
    const auto& comp = prog.ranks[0].streams[0].tasks;
    Bytes kept = 0, released = 0;
    for (const auto& t : comp) {
      if (t.name.str().find("mb0") == std::string::npos) continue;
      if (t.name.str().rfind("forward", 0) == 0) {
        EXPECT_GE(t.allocations, 0) << t.name.str();
        kept += t.alloc;
      }
      if (t.name.str().rfind("backward", 0) == 0) {
        EXPECT_GE(t.allocations, 0) << t.name.str();
        released += t.release;
      }
    }
    EXPECT_DOUBLE_EQ(kept, in.stages[0].activations_per_micro_batch) << "checkpointing " << ckpt;
    EXPECT_DOUBLE_EQ(released, kept);
  }
}

TEST(ActivationAllocations, ValidateRejectsASequenceThatIsNotItsTasksTotals) {
  Program prog = build_program(sharded(true));
  auto& t = prog.ranks[0].streams[0].tasks[1];  // forward layer 0 mb0
  ASSERT_GE(t.allocations, 0);
  t.workspace += 1;
  EXPECT_THROW(validate(prog), InvariantError);
}

}  // namespace
}  // namespace trainsim::program

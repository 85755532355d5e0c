// The verdict and the advice (memory/memory_advice.hpp): smallest fitting sharding degree, and
// source 000's order of changes when nothing fits.
#include <gtest/gtest.h>

#include "memory/memory_advice.hpp"

namespace trainsim::memory {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

model::TransformerSpec llama7b() {
  model::TransformerSpec s{"Llama 2 7B", 32, 4096, 32, 11008, 32000, 4096, false};
  s.mlp = model::MlpKind::swiglu;
  s.norm = model::NormKind::rmsnorm;
  s.bias = s.learned_positions = s.tied_embeddings = s.embedding_norm = s.dropout = false;
  s.final_norm = true;
  return s;
}

MemoryInputs fsdp(long world, long shard, long micro_batch, Bytes capacity) {
  plan::TrainingPlan p;
  p.sharding = plan::Sharding::fsdp;
  p.shard_degree = shard;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", p.precision));
  p.micro_batch = micro_batch;
  p.activation_checkpointing = true;
  p.flash_attention = true;
  return {llama7b(), p, plan::layout_of(p, world, 8), capacity, 1.5 * kGiB};
}

TEST(MemoryAdvice, SmallestShardingDegreeThatFits) {
  // 16 B per parameter sharded: 6.74e9 x 16 / d, plus ~10 GiB of activations and buffers.
  // d = 2 needs ~50 GiB of states, d = 4 ~25 GiB: on 40 GiB the answer is 4.
  const auto v = judge_memory(fsdp(8, 1, 4, 40 * kGiB));
  EXPECT_FALSE(v.fits);
  ASSERT_TRUE(v.smallest_fitting_shard.has_value());
  EXPECT_EQ(*v.smallest_fitting_shard, 4);
  EXPECT_EQ(v.advice, "raise the sharding degree to 4");
  // The answer does not depend on the degree the plan asked for.
  EXPECT_EQ(*judge_memory(fsdp(8, 8, 4, 40 * kGiB)).smallest_fitting_shard, 4);
  EXPECT_TRUE(judge_memory(fsdp(8, 8, 4, 40 * kGiB)).fits);
}

TEST(MemoryAdvice, WhenShardingIsNotEnoughLowerTheBatchFirst) {
  // On a 24 GiB device even full sharding over 8 (12.6 GiB of states) leaves too little for
  // micro-batch 16's checkpoints and logits; a smaller micro-batch fits.
  const auto v = judge_memory(fsdp(8, 8, 16, 24 * kGiB));
  EXPECT_FALSE(v.fits);
  EXPECT_FALSE(v.smallest_fitting_shard.has_value());
  EXPECT_EQ(v.advice.rfind("lower the micro-batch to ", 0), 0u) << v.advice;
}

TEST(MemoryAdvice, ThenRaiseTensorParallelism) {
  // A 32k-token sequence at micro-batch 1: fully sharded states are 6.74e9 x 16 / 8 = 12.6 GiB,
  // but checkpoints, the recomputed layer and the logits of one sequence do not fit beside them
  // in 27 GiB (34 GiB at TP 1, 29 at TP 2, 26 at TP 4). The batch cannot go lower; tensor
  // parallelism divides the activations.
  MemoryInputs in = fsdp(8, 8, 1, 27 * kGiB);
  in.model.seq_len = 32768;
  const auto v = judge_memory(in);
  EXPECT_FALSE(v.fits);
  const std::string prefix = "raise the tensor-parallel degree to ";
  ASSERT_EQ(v.advice.rfind(prefix, 0), 0u) << v.advice;
  const long tp = std::stol(v.advice.substr(prefix.size()));
  // The advised degree fits and half of it does not.
  auto with_tp = [&](long t) {
    MemoryInputs x = in;
    x.plan.tp = t;
    x.plan.shard_degree = 0;
    x.layout = plan::layout_of(x.plan, 8, 8);
    return judge_memory(x).fits;
  };
  EXPECT_TRUE(with_tp(tp));
  EXPECT_FALSE(with_tp(tp / 2));
}

}  // namespace
}  // namespace trainsim::memory

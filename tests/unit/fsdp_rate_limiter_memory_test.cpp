// FSDP1 without its rate limiter (FullyShardedDataParallel(limit_all_gathers=False)) in the
// memory model: nothing bounds the gathers, so every layer is counted gathered at once.
#include <gtest/gtest.h>

#include "memory/rank_memory.hpp"
#include "model/transformer.hpp"
#include "support/fsdp1_fixture.hpp"

namespace trainsim::memory {
namespace {

/// PyTorch FSDP1 over 4 ranks, 6 layers.
MemoryInputs fsdp1(bool limit_all_gathers) {
  const auto job = testing_support::tiny_fsdp1(limit_all_gathers);
  MemoryInputs in;
  in.model = job.model;
  in.plan = job.plan;
  in.layout = job.layout;
  in.capacity = 80e9;
  return in;
}

TEST(FsdpRateLimiterMemory, WithoutItEveryLayerIsCountedGathered) {
  auto gathered = [](bool limit) { return rank_memory(fsdp1(limit)).front().term("gathered_parameters"); };
  const MemoryInputs in = fsdp1(true);
  const double layer = model::parameters_per_layer(in.model) * in.plan.parameter_wire_bytes;
  // Limited: two layers in flight (BACKWARD_POST, no forward prefetch) beside the root;
  // without: all six.
  EXPECT_GT(gathered(true), 0);
  EXPECT_NEAR(gathered(false) - gathered(true), 4 * layer, 1e-6 * layer);
}

}  // namespace
}  // namespace trainsim::memory

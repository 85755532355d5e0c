#pragma once
// PyTorch FSDP1 over 4 ranks of one node on a 6-layer model, with or without its rate limiter
// (FullyShardedDataParallel(limit_all_gathers=...)): the plan the schedule's and the memory
// model's rate-limiter tests share.
#include <gtest/gtest.h>

#include "model/transformer.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::testing_support {

struct Fsdp1Job {
  model::TransformerSpec model;
  plan::TrainingPlan plan;
  plan::Layout layout;
};

inline Fsdp1Job tiny_fsdp1(bool limit_all_gathers) {
  Fsdp1Job j;
  j.model = {"tiny", 6, 64, 4, 256, 100, 16, false};
  j.plan.sharding = plan::Sharding::fsdp;
  j.plan.fsdp_implementation = plan::FsdpImplementation::torch_fsdp1;
  j.plan.fsdp_limit_all_gathers = limit_all_gathers;
  j.plan.shard_degree = 4;
  j.plan.micro_batch = 2;
  EXPECT_TRUE(plan::precision_recipe("fsdp_mixed", j.plan.precision));
  j.layout = plan::layout_of(j.plan, 4, 4);
  return j;
}

}  // namespace trainsim::testing_support

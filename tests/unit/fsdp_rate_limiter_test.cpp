// FSDP1's rate limiter (FullyShardedDataParallel(limit_all_gathers=...), plan::TrainingPlan::
// fsdp_limit_all_gathers) in the sharded schedule, checked as plain data: with it, a gather
// waits for the unit two back and the host waits with it; without it, nothing but the gather
// stream's order holds a gather back (the memory model's side: fsdp_rate_limiter_memory_test).
#include <gtest/gtest.h>

#include <string>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "support/fixtures.hpp"
#include "support/fsdp1_fixture.hpp"

namespace trainsim::program {
namespace {

constexpr int kCompute = 0, kGather = 1;

/// PyTorch FSDP1 over 4 ranks, 6 layers, one micro-batch.
ScheduleInputs fsdp1(bool limit_all_gathers) {
  const auto job = testing_support::tiny_fsdp1(limit_all_gathers);
  ScheduleInputs in;
  in.model = job.model;
  in.plan = job.plan;
  in.layout = job.layout;
  in.device = testing_support::round_number_device();
  in.stages = {{1000, 100, 10, 300}};
  return in;
}

struct GatherWaits {
  int gathers = 0, on_compute = 0, host_syncs = 0;
};

GatherWaits waits_of(const Program& prog) {
  GatherWaits w;
  for (const auto& t : prog.ranks[0].streams[kGather].tasks) {
    if (t.name.str().rfind("all-gather ", 0) != 0) continue;
    ++w.gathers;
    for (const auto& d : t.deps) w.on_compute += d.stream == kCompute;
    w.host_syncs += t.host_sync;
  }
  return w;
}

TEST(FsdpRateLimiter, WithItGathersWaitForTheUnitTwoBackAndTheHostWaitsToo) {
  const GatherWaits w = waits_of(build_program(fsdp1(true)));
  // Root + 6 layers forward, 6 layers backward (the root is kept). The limiter's queue holds
  // two free events: forward units 2..6 (layers 1..5) wait for the forward two back, backward
  // positions 2..6 (layers 4..0; BACKWARD_POST) for the backward two back: 10 of 13.
  EXPECT_EQ(w.gathers, 13);
  EXPECT_EQ(w.on_compute, 10);
  EXPECT_EQ(w.host_syncs, w.on_compute);
}

TEST(FsdpRateLimiter, WithoutItNothingButTheStreamOrderHoldsAGatherBack) {
  const GatherWaits w = waits_of(build_program(fsdp1(false)));
  EXPECT_EQ(w.gathers, 13);
  EXPECT_EQ(w.on_compute, 0);
  EXPECT_EQ(w.host_syncs, 0);
}

}  // namespace
}  // namespace trainsim::program

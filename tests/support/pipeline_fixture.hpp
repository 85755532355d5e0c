#pragma once
// A small PTD-P job shared by the schedule and folding tests: a 4-layer model, TP 2 x PP 2 x DP 2
// on 8 ranks (4 per node), 4 micro-batches of 1, AMP, the round-number device.
#include "program/schedule_inputs.hpp"
#include "support/fixtures.hpp"

namespace trainsim::testing_support {

inline program::ScheduleInputs tiny_tp2_pp2_dp2() {
  program::ScheduleInputs in;
  in.model = {"tiny", 4, 64, 4, 256, 100, 16, false};
  in.plan.tp = 2;
  in.plan.pp = 2;
  in.plan.accumulation = 4;
  in.plan.micro_batch = 1;
  if (!plan::precision_recipe("amp", in.plan.precision)) ADD_FAILURE() << "no amp precision recipe";
  in.layout = plan::layout_of(in.plan, 8, 4);  // dp 2
  in.device = round_number_device();
  in.stages = {{100, 10, 1}, {100, 10, 1}};
  return in;
}

}  // namespace trainsim::testing_support

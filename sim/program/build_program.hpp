#pragma once
// Picks the schedule builder for a plan: data parallelism (DDP, ZeRO-1/2), parameter-sharded
// data parallelism (ZeRO-3, FSDP full or hybrid, optionally with TP), or model parallelism
// (tensor and pipeline, with DDP or ZeRO-1 across replicas).
#include <string>

#include "program/program.hpp"
#include "program/schedule_inputs.hpp"

namespace trainsim::program {

/// Empty when `build_program` can build `in`; otherwise what is missing.
[[nodiscard]] std::string unsupported_plan(const ScheduleInputs& in);

/// Every rank's program for one optimizer step.
[[nodiscard]] Program build_program(const ScheduleInputs& in);

}  // namespace trainsim::program

#include "program/build_program.hpp"

#include "core/error.hpp"
#include "program/data_parallel_schedule.hpp"
#include "program/sharded_schedule.hpp"

namespace trainsim::program {

namespace {

bool parameter_sharded(const plan::TrainingPlan& p) {
  return p.sharding == plan::Sharding::zero3 || p.sharding == plan::Sharding::fsdp;
}

DataParallelConfig data_parallel_config(const ScheduleInputs& in) {
  DataParallelConfig c;
  c.kind = in.plan.sharding == plan::Sharding::none ? DataParallelKind::ddp : DataParallelKind::zero1;
  c.world = static_cast<int>(in.layout.world);
  c.ranks_per_node = static_cast<int>(in.layout.ranks_per_node);
  c.micro_batch = in.plan.micro_batch;
  c.accumulation = in.plan.accumulation;
  c.bucket_elements = in.plan.bucket_elements;
  c.gradient_bytes = in.plan.gradient_wire_bytes;
  c.parameter_bytes = in.plan.parameter_wire_bytes;
  c.resident_memory = in.stages.at(0).resident;
  c.activation_memory = in.stages.at(0).activations_per_micro_batch;
  c.workspace_memory = in.stages.at(0).workspace;
  return c;
}

}  // namespace

std::string unsupported_plan(const ScheduleInputs& in) {
  const auto& p = in.plan;
  if (parameter_sharded(p)) {
    if (p.pp > 1) return "pipeline parallelism with ZeRO-3/FSDP has no time schedule yet";
    return "";
  }
  if (p.tp > 1 || p.pp > 1) return "tensor and pipeline parallelism have no time schedule yet";
  return "";
}

Program build_program(const ScheduleInputs& in) {
  const std::string why = unsupported_plan(in);
  TRAINSIM_CHECK(why.empty(), why);
  if (parameter_sharded(in.plan)) return build_sharded_data_parallel(in);
  return build_data_parallel(in.model, in.device, data_parallel_config(in));
}

}  // namespace trainsim::program

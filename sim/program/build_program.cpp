#include "program/build_program.hpp"

#include "core/error.hpp"
#include "program/data_parallel_schedule.hpp"
#include "program/deepspeed_zero3_schedule.hpp"
#include "program/pipeline_schedule.hpp"
#include "program/sharded_schedule.hpp"

namespace trainsim::program {

namespace {

bool parameter_sharded(const plan::TrainingPlan& p) {
  return p.sharding == plan::Sharding::zero3 || p.sharding == plan::Sharding::fsdp;
}

DataParallelConfig with_memory(const ScheduleInputs& in) {
  DataParallelConfig c = data_parallel_config(in.plan, in.layout);
  c.resident_memory = in.stages.at(0).resident;
  c.activation_memory = in.stages.at(0).activations_per_micro_batch;
  c.workspace_memory = in.stages.at(0).workspace;
  return c;
}

}  // namespace

std::string unsupported_plan(const ScheduleInputs& in) {
  const auto& p = in.plan;
  if (parameter_sharded(p) && !plan::fsdp_inside_pipeline_stages(p)) {
    // The scenario reader rejects these with the reason (DeepSpeed refuses ZeRO-3 under PP;
    // FSDP inside pipeline stages is modelled as FSDP2's); kept for callers that build plans directly.
    if (p.pp > 1) return "pipeline parallelism with ZeRO-3, or FSDP other than FSDP2, has no time schedule";
    if (p.cp > 1 && !(p.sharding == plan::Sharding::fsdp && p.fsdp_implementation == plan::FsdpImplementation::torch_fsdp2))
      return "context parallelism with ZeRO-3, or FSDP other than FSDP2, has no time schedule";
    if (p.zero3_implementation == plan::Zero3Implementation::deepspeed_0_3 &&
        (p.tp > 1 || in.layout.shard != in.layout.dp))
      return "the DeepSpeed 0.3 ZeRO-3 schedule has no tensor parallelism or hybrid sharding";
    return "";
  }
  if (p.tp > 1 || p.pp > 1 || p.cp > 1) {
    if (p.cp > 1 && p.activation_checkpointing && p.checkpoint_policy != plan::CheckpointPolicy::full)
      return "context parallelism with selective recompute has no time schedule";
    if (p.sharding == plan::Sharding::zero2 && p.pp > 1)
      return "pipeline parallelism with ZeRO-2 has no time schedule (DeepSpeed rejects it; use zero1)";
    if (p.partition == plan::PipelinePartition::uniform && in.model.layers % (p.pp * p.virtual_stages) != 0)
      return "the layers do not divide evenly over pipeline x virtual stages";
    if (p.partition != plan::PipelinePartition::uniform && p.virtual_stages > 1 &&
        (in.model.layers + 2) % (p.pp * p.virtual_stages) != 0)
      return "the embedding-and-head partition under interleaving needs layers + 2 divisible by pipeline x virtual stages";
    // Under ZB-V the first stage may hold only the model's two ends (the paper's one layer per
    // chunk: the embedding, then the output layer and the loss).
    for (long stage = 0; stage < p.pp; ++stage)
      if (plan::layers_of_stage(p, in.model.layers, stage) < 1 &&
          !(p.pipeline == plan::PipelineSchedule::zero_bubble_v && stage == 0))
        return "a pipeline stage would hold no transformer layer";
    if (p.pipeline == plan::PipelineSchedule::interleaved && p.virtual_stages > 1 &&
        p.accumulation % p.pp != 0)
      return "interleaved 1F1B needs a number of micro-batches that is a multiple of the stages";
  }
  return "";
}

namespace {

Program build_schedule(const ScheduleInputs& in) {
  if (parameter_sharded(in.plan) && !plan::fsdp_inside_pipeline_stages(in.plan))
    return in.plan.zero3_implementation == plan::Zero3Implementation::deepspeed_0_3 ? build_deepspeed_zero3(in)
                                                                                     : build_sharded_data_parallel(in);
  // Context parallelism runs in Megatron-core's schedule, with or without TP and PP, and so does
  // a data-parallel job with Megatron's overlapped parameter all-gather: its distributed
  // optimizer's buckets and gradient-accumulation fusion are that schedule's, not those of the
  // DDP / DeepSpeed-style data-parallel one (whose per-micro-batch fp32 accumulation pass Megatron
  // folds into the weight-gradient GEMMs).
  // Megatron-LM 2021's per-micro-batch synchronisations (megatron_step_syncs) are the PTD-P
  // schedule's, which also runs Megatron's TP 1, PP 1 jobs.
  if (in.plan.tp > 1 || in.plan.pp > 1 || in.plan.cp > 1 || in.plan.overlap_param_gather || in.plan.megatron_step_syncs)
    return build_pipeline_parallel(in);
  return build_data_parallel(in.model, in.device, with_memory(in));
}

}  // namespace

Program build_program(const ScheduleInputs& in) {
  const std::string why = unsupported_plan(in);
  TRAINSIM_CHECK(why.empty(), why);
  Program prog = build_schedule(in);
  prog.host_per_kernel = in.plan.host_dispatch ? in.device.eager_kernel_issue : 0;
  prog.launch_blocking = in.plan.cuda_launch_blocking && prog.host_per_kernel > 0;
  // A torch.distributed call is one bare PyTorch call to the host: the profile's eager_copy_call
  // (measured for copy_; NCCL's own launch host time is not measured here).
  prog.collective_launch = prog.launch_blocking ? in.device.eager_copy_call : 0;
  return prog;
}

}  // namespace trainsim::program

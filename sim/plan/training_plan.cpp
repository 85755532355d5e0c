#include "plan/training_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::plan {

double optimizer_state_bytes(Optimizer o, double element_bytes) {
  switch (o) {
    case Optimizer::adam: return 2 * element_bytes;  // first and second moments
    case Optimizer::sgd_momentum: return element_bytes;
    case Optimizer::sgd: return 0;
  }
  return 2 * element_bytes;
}

long layers_of_stage(const TrainingPlan& plan, long layers, long stage) {
  const long pp = plan.pp;
  if (plan.partition == PipelinePartition::uniform) return layers / pp + (stage < layers % pp ? 1 : 0);
  long n = 0;
  for (long c = 0; c < std::max(1L, plan.virtual_stages); ++c) n += layers_of_chunk(plan, layers, stage, c);
  return n;
}

long layers_of_chunk(const TrainingPlan& plan, long layers, long stage, long chunk) {
  const long v = std::max(1L, plan.virtual_stages);
  if (plan.partition == PipelinePartition::uniform) return layers_of_stage(plan, layers, stage) / v;
  // Balance layers + 2 units (embedding, head) over the virtual stages, then take the ends'
  // units out.
  const long slots = plan.pp * v, vs = virtual_stage_of(plan, stage, chunk);
  const long units = layers + 2;
  long n = units / slots + (vs < units % slots ? 1 : 0);
  if (vs == 0) --n;
  if (vs == slots - 1) --n;
  return n;
}

long virtual_stage_of(const TrainingPlan& plan, long stage, long chunk) {
  if (plan.pipeline == PipelineSchedule::zero_bubble_v && chunk == 1) return 2 * plan.pp - 1 - stage;
  return chunk * plan.pp + stage;
}

long stage_of_virtual(const TrainingPlan& plan, long virtual_stage) {
  if (plan.pipeline == PipelineSchedule::zero_bubble_v && virtual_stage >= plan.pp)
    return 2 * plan.pp - 1 - virtual_stage;
  return virtual_stage % plan.pp;
}

long head_stage(const TrainingPlan& plan) {
  return plan.pipeline == PipelineSchedule::zero_bubble_v ? 0 : plan.pp - 1;
}

double fp8_weight_copy_bytes(Fp8Implementation f) {
  return f == Fp8Implementation::transformer_engine ? 2.0 : 1.0;
}

bool precision_recipe(const std::string& name, PrecisionRecipe& out) {
  if (name == "amp") {
    out = {name, 2, 2, 4, 4, true};
  } else if (name == "fp32") {
    out = {name, 4, 4, 0, 0, true};
  } else if (name == "fsdp_mixed") {
    out = {name, 0, 0, 4, 4, false};
  } else if (name == "bf16_fp32_grads") {
    out = {name, 2, 0, 4, 4, true};
  } else {
    return false;
  }
  return true;
}

const char* sharding_name(Sharding s) {
  switch (s) {
    case Sharding::none: return "none";
    case Sharding::zero1: return "zero1";
    case Sharding::zero2: return "zero2";
    case Sharding::zero3: return "zero3";
    case Sharding::fsdp: return "fsdp";
  }
  return "none";
}

const char* pipeline_schedule_name(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved: return "interleaved";
    case PipelineSchedule::zero_bubble_h1: return "zb-h1";
    case PipelineSchedule::zero_bubble_v: return "zb-v";
  }
  return "1f1b";
}

const char* checkpoint_policy_name(CheckpointPolicy p) {
  switch (p) {
    case CheckpointPolicy::full: return "full";
    case CheckpointPolicy::selective_op: return "selective_op";
    case CheckpointPolicy::selective_attention: return "selective_attention";
  }
  return "full";
}

Layout layout_of(const TrainingPlan& plan, long world, long ranks_per_node) {
  Layout l;
  l.world = world;
  l.ranks_per_node = ranks_per_node;
  l.cp = plan.cp;
  const long model_parallel = plan.tp * plan.cp * plan.pp;
  if (world % model_parallel != 0)
    throw std::invalid_argument("tensor (" + std::to_string(plan.tp) + ") x " +
                                (plan.cp > 1 ? "context (" + std::to_string(plan.cp) + ") x " : std::string()) +
                                "pipeline (" + std::to_string(plan.pp) + ") degree " +
                                std::to_string(model_parallel) + " does not divide the " +
                                std::to_string(world) + " ranks");
  l.dp = world / model_parallel;
  if (plan.sharding == Sharding::none) {
    l.shard = 1;
  } else {
    l.shard = plan.shard_degree > 0 ? plan.shard_degree : l.dp;
    if (l.dp % l.shard != 0)
      throw std::invalid_argument("sharding degree " + std::to_string(l.shard) +
                                  " does not divide the data-parallel degree " +
                                  std::to_string(l.dp));
  }
  return l;
}

Layout context_parallel_rank_layout(const Layout& layout) {
  Layout l = layout;
  if (layout.cp <= 1) return l;
  // A shard group spans the CP ranks of its data-parallel ranks: the whole DP x CP group, or
  // under FSDP's hybrid sharding (torchtitan's dp_shard x cp mesh) shard x cp of them, the
  // replicas outermost. (The reader rejects hybrid sharding with Megatron's CP.)
  if (l.shard == l.dp || l.shard > 1) l.shard *= l.cp;
  l.dp *= l.cp;
  l.cp = 1;
  return l;
}

}  // namespace trainsim::plan

#pragma once
// What every schedule builder reads: the model, the plan and its layout on the job, the device
// (to cost operations) and, per pipeline stage, the memory the engine should follow.
#include <vector>

#include "core/units.hpp"
#include "model/device_profile.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::program {

/// Device memory of one pipeline stage's ranks, from the memory model.
struct StageMemory {
  Bytes resident = 0;                     ///< model states, buffers, runtime: the whole step
  Bytes activations_per_micro_batch = 0;  ///< allocated by a forward, freed by its backward
  Bytes workspace = 0;                    ///< held during a backward pass
};

struct ScheduleInputs {
  model::TransformerSpec model;
  plan::TrainingPlan plan;
  plan::Layout layout;
  model::DeviceProfile device;
  std::vector<StageMemory> stages;  ///< one per pipeline stage (pp entries)
  /// Ranks whose tasks come out equal to a lower rank's may share that rank's body
  /// (RankProgram::body) instead of holding a copy; schedules that cannot tell ignore it.
  bool share_task_bodies = false;
};

/// The plan's framework module code as the layer op lists take it.
[[nodiscard]] inline model::ModuleKernels module_kernels_of(plan::ModuleKernels k) {
  switch (k) {
    case plan::ModuleKernels::megatron: return model::ModuleKernels::megatron;
    case plan::ModuleKernels::mpt: return model::ModuleKernels::mpt;
    case plan::ModuleKernels::torch_layer: return model::ModuleKernels::torch_layer;
    case plan::ModuleKernels::fused: break;
  }
  return model::ModuleKernels::fused;
}

/// Global rank of (pipeline stage, data-parallel index, tensor-parallel index) in Megatron's
/// order: TP ranks consecutive (inside a node), then data parallelism, then pipeline stages.
[[nodiscard]] inline int rank_of(const ScheduleInputs& in, long stage, long dp, long tp) {
  return static_cast<int>((stage * in.layout.dp + dp) * in.plan.tp + tp);
}

}  // namespace trainsim::program

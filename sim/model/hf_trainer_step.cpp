#include "model/hf_trainer_step.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "model/compute_cost.hpp"

namespace trainsim::model {

namespace {
constexpr double kFloat = 4.0;  // fp32 gradients, weights and Adam moments

/// A scalar kernel (a read-back's isnan, a scale's reciprocal): launch-bound.
Operation scalar(std::string name) { return make_elementwise(std::move(name), 2 * kFloat, 1); }

/// An op run once per parameter tensor: `tensors` kernels moving `bytes_per_param` per element.
Operation per_tensor(std::string name, double params, long tensors, double bytes_per_param, double flops_per_param) {
  Operation op = make_elementwise(std::move(name), bytes_per_param * params, flops_per_param * params);
  op.kernels = static_cast<int>(tensors);
  return op;
}

/// multi_tensor_apply's launches over one list of fp32 tensors (torch 1.11
/// ATen/native/cuda/MultiTensorApply.cuh: a launch when 110 tensors (depth 1) or 320 chunks of
/// 65,536 elements are packed); the chunk count is rounded per tensor.
int multi_tensor_launches(double params, long tensors) {
  const double chunks = params / 65536.0 + static_cast<double>(tensors);
  return static_cast<int>(std::max(std::ceil(static_cast<double>(tensors) / 110.0), std::ceil(chunks / 320.0)));
}

std::vector<TrainerPhase> hf_4_21(double params, long tensors) {
  std::vector<TrainerPhase> phases;
  phases.push_back({"trainer loss nan/inf check", {scalar("isnan"), scalar("isinf"), scalar("tr_loss add")}, false, false});
  Operation unscale = make_elementwise("amp foreach non-finite check and unscale", 2 * kFloat * params, 2 * params);
  unscale.kernels = multi_tensor_launches(params, tensors);
  phases.push_back({"GradScaler unscale_",
                    {scalar("inv_scale double"), scalar("inv_scale reciprocal"), scalar("inv_scale float"),
                     scalar("found_inf fill"), std::move(unscale)},
                    true, false});
  phases.push_back({"clip_grad_norm_ per-parameter norms", {per_tensor("torch.norm per gradient", params, tensors, kFloat, 2)}, false, true});
  phases.push_back({"clip_grad_norm_ total and coefficient",
                    {scalar("stack"), scalar("norm"), scalar("add eps"), scalar("max_norm div"), scalar("clamp")}, false, false});
  phases.push_back({"clip_grad_norm_ per-parameter scale", {per_tensor("grad mul_", params, tensors, 2 * kFloat, 1)}, false, true});
  // After get_scale()'s and found_inf's read-backs.
  phases.push_back({"transformers AdamW per-parameter loop",
                    {per_tensor("exp_avg mul_", params, tensors, 2 * kFloat, 1),
                     per_tensor("exp_avg add_", params, tensors, 3 * kFloat, 2),
                     per_tensor("exp_avg_sq mul_", params, tensors, 2 * kFloat, 1),
                     per_tensor("exp_avg_sq addcmul_", params, tensors, 3 * kFloat, 3),
                     per_tensor("exp_avg_sq sqrt", params, tensors, 2 * kFloat, 1),
                     per_tensor("denom add_ eps", params, tensors, 2 * kFloat, 1),
                     per_tensor("param addcdiv_", params, tensors, 4 * kFloat, 3)},
                    true, true});
  phases.push_back({"GradScaler update", {scalar("amp update scale")}, false, false});
  // After scale_after's read-back.
  phases.push_back({"model.zero_grad", {per_tensor("grad zero_", params, tensors, kFloat, 0)}, true, true});
  return phases;
}

std::vector<TrainerPhase> optimum_habana(double params) {
  std::vector<TrainerPhase> phases;
  phases.push_back({"trainer loss nan/inf check", {scalar("isnan"), scalar("isinf"), scalar("tr_loss add")}, false, false});
  // FusedClipNorm: the gradients' norm (a read) and their scale (read + write), one op each.
  phases.push_back({"FusedClipNorm",
                    {make_elementwise("fused clip norm: norm", kFloat * params, 2 * params),
                     make_elementwise("fused clip norm: scale", 2 * kFloat * params, params)},
                    true, false});
  phases.push_back({"FusedAdamW", {optimizer_step_op(params)}, false, false});
  return phases;
}

}  // namespace

std::vector<TrainerPhase> trainer_step_phases(TrainingLoop loop, double params, long parameter_tensors) {
  switch (loop) {
    case TrainingLoop::hf_trainer_4_21: return hf_4_21(params, parameter_tensors);
    case TrainingLoop::optimum_habana_89e505a: return optimum_habana(params);
  }
  return {};
}

long hf_parameter_tensors(const TransformerSpec& s) {
  const long norm = s.norm == NormKind::layernorm && s.bias ? 2 : 1;  // weight (+ bias)
  const long with_bias = s.bias ? 2 : 1;
  const long matrices = 4 + (gated(s.mlp) ? 3 : 2);  // q, k, v, output; the MLP's
  const long per_layer = matrices * with_bias + 2 * norm;
  long embedding = 1 + (s.learned_positions ? 1 : 0) + (s.mlm_head ? 1 : 0) + (s.embedding_norm ? norm : 0);
  long head = (s.mlm_head ? with_bias + norm + 1 : 0) + (s.final_norm ? norm : 0) + (s.tied_embeddings ? 0 : 1);
  return per_layer * s.layers + embedding + head;
}

Seconds phase_duration(const TrainerPhase& phase, const DeviceProfile& dev) {
  const Seconds launch = op_duration(make_elementwise("launch", 0), dev);
  Seconds t = 0;
  for (const auto& op : phase.ops) t += op_duration(op, dev) + (op.kernels - 1) * launch;
  return t;
}

}  // namespace trainsim::model

#pragma once
// What Hugging Face's Trainer does on the device and the host between a step's last backward and
// the next step's forward (plan::TrainingLoop, scenario key training.trainer), as read:
//
// transformers v4.21.1 trainer.py _inner_training_loop with --fp16 (torch.cuda.amp, PyTorch 1.11):
// - logging_nan_inf_filter (default True): `torch.isnan(tr_loss_step) or torch.isinf(...)` in
//   Python: two kernels, each read back by bool() (.item(): the host waits for the backward,
//   whose stream DDP's finalize made wait for the gradient all-reduces); `tr_loss += ...`;
// - max_grad_norm 1.0: scaler.unscale_(optimizer) (torch 1.11 grad_scaler.py: the inverse scale,
//   .double().reciprocal().float(), a found_inf fill and _amp_foreach_non_finite_check_and_unscale_
//   over the gradients, multi_tensor_apply launches), then nn.utils.clip_grad_norm_ (torch 1.11
//   clip_grad.py: a Python list of torch.norm per parameter, stack, norm, + 1e-6, max_norm / it,
//   clamp, and a Python loop of p.grad.mul_ per parameter; error_if_nonfinite False: no read-back);
// - scale_before = scaler.get_scale() (.item()), scaler.step(optimizer) (found_inf .item() in
//   _maybe_opt_step, then optimizer.step()), scaler.update() (_amp_update_scale_), scale_after =
//   scaler.get_scale() (.item());
// - the optimizer: `optim` defaults to "adamw_hf" at 4.21, transformers.optimization.AdamW: a
//   Python loop over the parameters, each exp_avg.mul_().add_(), exp_avg_sq.mul_().addcmul_(),
//   exp_avg_sq.sqrt().add_(eps), p.addcdiv_(): 7 kernels, 72 bytes per fp32 element (and a
//   weight-decay add_ when weight_decay > 0: the default 0.0 is what run_mlm.py keeps);
// - lr_scheduler.step() (Python only) and model.zero_grad(): torch 1.11 Module.zero_grad's default
//   set_to_none=False, a zero_ kernel per parameter.
// optimum-habana 89e505a (optimum/habana/trainer.py :625-680, lazy mode, Habana/bert-base-uncased's
// Gaudi config: use_fused_adam, use_fused_clip_norm): the same isnan / isinf read-back (in lazy
// mode the host waits for the accumulated forward and backward graph), mark_step,
// FusedClipNorm.clip_norm (one norm over the gradients, one scale), FusedAdamW, lr_scheduler,
// zero_grad(set_to_none=True) (no kernels), mark_step.
//
// The Trainer's DataLoader (dataloader_num_workers 0) collates each micro-batch in the training
// process: for run_mlm.py, DataCollatorForLanguageModeling (the DDP schedule's host task per
// micro-batch, device profile's mlm_collate_token).
//
// Left out: lr_scheduler.step()'s Python; DDP's find_unused_parameters=True traversal of the
// autograd graph after each forward (host time, hidden on the H100 by the device's lead:
// validate/results/h100-hf-bert.json) and the
// reducer's per-gradient copies into and out of the buckets (PyTorch DDP, not the Trainer, and not
// modelled for any DDP scenario); scaler.scale(loss)'s one kernel.
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/device_profile.hpp"
#include "model/operation.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {

enum class TrainingLoop {
  hf_trainer_4_21,         ///< transformers 4.21.1 Trainer, torch.cuda.amp fp16, PyTorch 1.11
  optimum_habana_89e505a,  ///< optimum-habana's GaudiTrainer at 89e505a, lazy mode, fused ops
};

/// One stretch of the loop, in order.
struct TrainerPhase {
  std::string name;
  std::vector<Operation> ops;
  /// The host reads a device value (.item(), bool()) before it issues this phase: it waits for
  /// everything issued before.
  bool host_sync_before = false;
  /// Issued by a Python loop of bare tensor calls (the device profile's eager_copy_call per
  /// kernel: ASSUMPTION, a torch.norm, mul_ or addcdiv_ call costs the host what a Tensor.copy_
  /// call does); false: the framework's usual issue cost per kernel.
  bool python_loop = false;
};

/// The parameter tensors model.parameters() yields for a Hugging Face module of this shape
/// (separate query / key / value Linear as in BertSelfAttention; a tied output weight once): what
/// the loop's per-parameter Python loops iterate over. BERT-base: 16 per layer, 5 in the
/// embeddings (word, position, token type, LayerNorm weight and bias), 5 in the MLM head.
[[nodiscard]] long hf_parameter_tensors(const TransformerSpec& s);

/// The loop's phases after the backward for `params` parameters in `parameter_tensors` tensors.
/// They include the optimizer step (the schedule runs no other).
[[nodiscard]] std::vector<TrainerPhase> trainer_step_phases(TrainingLoop loop, double params,
                                                           long parameter_tensors);

/// Device time of a phase's ops, each op's kernels each paying the device's launch cost.
[[nodiscard]] Seconds phase_duration(const TrainerPhase& phase, const DeviceProfile& dev);

}  // namespace trainsim::model

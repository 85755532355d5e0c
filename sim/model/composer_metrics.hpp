#pragma once
// Composer's training metrics on a causal LM's logits. Composer's trainer updates every train
// metric after each micro-batch's backward, under no_grad and the training precision's autocast,
// on the micro-batch's cached logits (composer/trainer/trainer.py _train_microbatch ->
// _eval_train_metrics: v0.13.4 :2341-2343 and :2071-2095, v0.16.4 :2473-2475 and :2162-2175;
// models/huggingface.py eval_forward reuses `outputs`, v0.13.4 :327-362, v0.16.4 :426-458).
// LanguageCrossEntropy and its subclass LanguagePerplexity (composer/metrics/nlp.py: v0.13.4
// :91 and :95-112, perplexity :264-270; v0.16.4 :100, :104-121, :188-194) each run a
// torch.nn.CrossEntropyLoss(reduction='sum') over the whole logits in update(): perplexity only
// overrides compute(), so it recomputes the loss. Under autocast on CUDA the loss is not cast
// as a whole: PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp) have no
// cross_entropy_loss, whose composite decomposes into log_softmax(x, 1, x.scalar_type()) (an
// explicit dtype, which the fp32_set_opt_dtype policy keeps: bf16 log-probabilities) and
// nll_loss, on the fp32 list, which casts those log-probabilities to fp32 before its gather.
// ASSUMPTION: the CUDA list read is of the 2.x line (it has no cross_entropy_loss; its CPU and
// XLA lists do); 1.13's not read. PyTorch's AMP documentation lists cross_entropy among the
// ops that autocast to fp32, which would be an fp32 copy and an fp32 log_softmax instead
// (14 B per element, 8 B live), not modelled. Without torch autocast (Composer's amp_fp8 enters
// only Transformer Engine's fp8_autocast, core/precision.py v0.16.4 :69-80) nll_loss runs on the
// bf16 log-probabilities: no cast.
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

/// The kernels of `metrics` cross-entropy metric updates on `tokens` x `vocab` bf16 logits,
/// in execution order: per metric log_softmax in bf16 (2 + 2 B per element: ASSUMPTION that
/// its max and sum passes re-read a row from L2, not DRAM: a 50,368 row is 98 KiB and one block
/// per row keeps ~11-13 MiB in flight on 108-132 SMs, under the A100's 40 MiB and the H100's
/// 50 MiB L2), under `autocast` nll_loss's fp32 cast of them (2 + 4 B), and its gather with the
/// count of non-ignored targets (int64 targets, one log-probability per token).
[[nodiscard]] std::vector<Operation> composer_train_metric_ops(double tokens, double vocab, int metrics,
                                                               bool autocast = true);
/// The tensors one update allocates beside the logits, in order: the bf16 log-probabilities,
/// then nll_loss's fp32 cast of them under autocast (0 without; both freed when the update
/// returns).
struct ComposerMetricTensors {
  Bytes log_probabilities = 0;
  Bytes fp32_cast = 0;
};
[[nodiscard]] ComposerMetricTensors composer_train_metric_tensors(double tokens, double vocab, bool autocast = true);
/// What one update holds at its peak: both tensors (6 B per element) under autocast, the
/// log-probabilities (2 B) without. Updates run one after another: the peak is one's.
[[nodiscard]] Bytes composer_train_metric_workspace(double tokens, double vocab, bool autocast = true);

}  // namespace trainsim::model

#pragma once
// Composer's training metrics on a causal LM's logits. Composer's trainer updates every train
// metric after each micro-batch's backward, under no_grad and the training precision's autocast,
// on the micro-batch's cached logits (composer/trainer/trainer.py _train_microbatch ->
// _eval_train_metrics: v0.13.4 :2341-2343 and :2071-2095, v0.16.4 :2473-2475 and :2162-2175;
// models/huggingface.py eval_forward reuses `outputs`, v0.13.4 :327-362, v0.16.4 :426-458).
// LanguageCrossEntropy and its subclass LanguagePerplexity (composer/metrics/nlp.py: v0.13.4
// :91 and :95-112, perplexity :264-270; v0.16.4 :100, :104-121, :188-194) each run a
// torch.nn.CrossEntropyLoss(reduction='sum') over the whole logits in update(): perplexity only
// overrides compute(), so it recomputes the loss. Autocast runs cross_entropy in fp32 (PyTorch's
// AMP documentation, "CUDA Ops that can autocast to float32"), which for bf16 logits is an fp32
// copy, an fp32 log_softmax and nll_loss's gather of one element per token.
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

/// The kernels of `metrics` cross-entropy metric updates on `tokens` x `vocab` bf16 logits,
/// in execution order: per metric the fp32 copy (2 + 4 B per element), log_softmax (4 + 4 B:
/// ASSUMPTION that its max and sum passes re-read the row from L2, not DRAM: one row of a
/// 50,368 vocabulary is 197 KiB fp32 and one block per row keeps ~21 MiB in flight on 108 SMs,
/// under the A100's 40 MiB L2) and the nll gather with the count of non-ignored targets (int64
/// targets and one fp32 log-probability per token).
[[nodiscard]] std::vector<Operation> composer_train_metric_ops(double tokens, double vocab, int metrics);
/// What one update holds beside the logits while log_softmax runs: the fp32 copy and the fp32
/// log-probabilities (8 B per element; the copy is freed when log_softmax returns, the
/// log-probabilities after the gather). Updates run one after another: the peak is one's.
[[nodiscard]] Bytes composer_train_metric_workspace(double tokens, double vocab);

}  // namespace trainsim::model

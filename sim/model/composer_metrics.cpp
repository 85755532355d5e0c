#include "model/composer_metrics.hpp"

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;
constexpr double kInt64 = 8.0;  // the labels
}  // namespace

std::vector<Operation> composer_train_metric_ops(double tokens, double vocab, int metrics, bool autocast) {
  const double n = tokens * vocab;
  const double log_prob = autocast ? kFp32 : kBf16;  // what nll_loss reads
  std::vector<Operation> ops;
  for (int i = 0; i < metrics; ++i) {
    const std::string m = "train_metric_" + std::to_string(i) + "_";
    ops.push_back(make_elementwise(m + "log_softmax_bf16", 2 * kBf16 * n, 4 * n));
    if (autocast) ops.push_back(make_elementwise(m + "log_probs_to_fp32", (kBf16 + kFp32) * n));
    // nll_loss gathers one log-probability per token and sums them; (target != ignore).sum().
    ops.push_back(make_elementwise(m + "nll_loss", (kInt64 + log_prob) * tokens, tokens));
    ops.push_back(make_elementwise(m + "count_targets", kInt64 * tokens, tokens));
  }
  return ops;
}

ComposerMetricTensors composer_train_metric_tensors(double tokens, double vocab, bool autocast) {
  return {kBf16 * tokens * vocab, autocast ? kFp32 * tokens * vocab : 0.0};
}

Bytes composer_train_metric_workspace(double tokens, double vocab, bool autocast) {
  const ComposerMetricTensors t = composer_train_metric_tensors(tokens, vocab, autocast);
  return t.log_probabilities + t.fp32_cast;
}

}  // namespace trainsim::model

// Composer's training-metric updates on the logits (model/composer_metrics.hpp): the traffic of
// each cross-entropy update and what it holds while it runs.
#include <gtest/gtest.h>

#include "model/composer_metrics.hpp"

namespace trainsim::model {
namespace {

TEST(ComposerTrainMetrics, EachUpdateLogSoftmaxesInBf16AndCastsTheLogProbabilitiesToFp32) {
  const double tokens = 4 * 2048, vocab = 50368, n = tokens * vocab;
  const auto one = composer_train_metric_ops(tokens, vocab, 1);
  ASSERT_EQ(one.size(), 4u);
  EXPECT_EQ(one[0].name, "train_metric_0_log_softmax_bf16");
  EXPECT_DOUBLE_EQ(one[0].bytes, 4 * n);  // bf16 read, bf16 written
  EXPECT_EQ(one[1].name, "train_metric_0_log_probs_to_fp32");
  EXPECT_DOUBLE_EQ(one[1].bytes, 6 * n);  // bf16 read, fp32 written
  // The gather and the target count touch one element per token, not per logit.
  EXPECT_DOUBLE_EQ(one[2].bytes, 12 * tokens);
  EXPECT_DOUBLE_EQ(one[3].bytes, 8 * tokens);
  for (const auto& op : one) EXPECT_EQ(op.kind, OpKind::elementwise);
  // LanguagePerplexity recomputes the loss: two metrics, twice the kernels.
  const auto two = composer_train_metric_ops(tokens, vocab, 2);
  ASSERT_EQ(two.size(), 8u);
  EXPECT_EQ(two[4].name, "train_metric_1_log_softmax_bf16");
  EXPECT_TRUE(composer_train_metric_ops(tokens, vocab, 0).empty());
  EXPECT_DOUBLE_EQ(composer_train_metric_workspace(tokens, vocab), 6 * n);
}

}  // namespace
}  // namespace trainsim::model

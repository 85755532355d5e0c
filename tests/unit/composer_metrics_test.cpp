// Composer's training-metric updates on the logits (model/composer_metrics.hpp): the traffic of
// each cross-entropy update and what it holds while it runs.
#include <gtest/gtest.h>

#include "model/composer_metric_sync.hpp"
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

TEST(ComposerTrainMetrics, WithoutAutocastNllLossReadsTheBf16LogProbabilities) {
  const double tokens = 4 * 2048, vocab = 50368, n = tokens * vocab;
  const auto one = composer_train_metric_ops(tokens, vocab, 1, false);
  ASSERT_EQ(one.size(), 3u);  // no fp32 cast
  EXPECT_EQ(one[0].name, "train_metric_0_log_softmax_bf16");
  EXPECT_DOUBLE_EQ(one[0].bytes, 4 * n);
  EXPECT_EQ(one[1].name, "train_metric_0_nll_loss");
  EXPECT_DOUBLE_EQ(one[1].bytes, (8 + 2) * tokens);  // int64 target, bf16 log-probability
  // Per metric 4 B per logit instead of 10: the update's traffic falls by 60%, what it holds
  // from 6 B to the log-probabilities' 2 B.
  EXPECT_DOUBLE_EQ(composer_train_metric_workspace(tokens, vocab, false), 2 * n);
  EXPECT_DOUBLE_EQ(composer_train_metric_tensors(tokens, vocab, false).fp32_cast, 0);
}

TEST(ComposerMetricSync, EachStateGathersWithAFillAndACopyPerRank) {
  // LanguageCrossEntropy + LanguagePerplexity: 2 states each (sum_loss, total_items); per state
  // gather_all_tensors makes world zeros_like and ProcessGroupNCCL copies world entries out.
  const auto s = composer_metric_sync(2, 512);
  EXPECT_EQ(s.fills, 2 * 2 * 512);
  EXPECT_EQ(s.copies, 2 * 2 * 512);
  EXPECT_EQ(s.calls(), 4096);
  EXPECT_EQ(s.host_syncs, 2 + 4);  // the loss and time reads, a barrier per state
  // 4,096 calls at 13 us: 53.2 ms per step on 512 GPUs; linear in the world.
  EXPECT_NEAR(composer_metric_sync_host_time(2, 512, 13e-6), 4096 * 13e-6, 1e-12);
  EXPECT_NEAR(composer_metric_sync_host_time(2, 128, 13e-6) * 4, composer_metric_sync_host_time(2, 512, 13e-6), 1e-12);
  EXPECT_NEAR(composer_metric_sync_host_time(1, 8, 13e-6), 2 * 2 * 8 * 13e-6, 1e-12);
  EXPECT_EQ(composer_metric_sync(0, 512).calls(), 0);
  EXPECT_EQ(composer_metric_sync(0, 512).host_syncs, 0);
}

}  // namespace
}  // namespace trainsim::model

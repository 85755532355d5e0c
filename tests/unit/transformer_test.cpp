// Transformer accounting (model/transformer.hpp): parameter counts of the two BERT models the
// scenarios use, GEMM FLOPs and bytes, the backward rule and the paper-style FLOPs per sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

TransformerSpec bert_large() {
  return {"BERT-Large", 24, 1024, 16, 4096, 30522, 128, true};
}

TransformerSpec bert_1_5b() {
  return {"BERT 1.5B", 48, 1600, 25, 6400, 30522, 128, true};
}

Flops gemm_flops(const std::vector<Operation>& ops) {
  Flops f = 0;
  for (const auto& op : ops)
    if (op.kind == OpKind::gemm) f += op.flops;
  return f;
}

TEST(BackwardOps, OnlyTheLinearsWgradGemmsAreWeightGradients) {
  // Unfused attention: its batched matmuls' "_wgrad" are the gradients of K and V.
  const TransformerSpec gpt{"gpt", 2, 256, 4, 1024, 1000, 128, false};
  std::vector<std::string> weights;
  for (const auto& op : layer_backward_ops(gpt, LayerShape{2, 1, false, false}))
    if (is_weight_gradient(op)) weights.push_back(op.name);
  std::sort(weights.begin(), weights.end());
  EXPECT_EQ(weights, (std::vector<std::string>{"attn_out_wgrad", "ffn_in_wgrad", "ffn_out_wgrad", "qkv_wgrad"}));
}

TEST(ParameterCount, BertLarge) {
  const double h = 1024, f = 4096;
  const double per_layer = 4 * h * h + 4 * h     // Q, K, V and output projections with biases
                           + 2 * h * f + f + h   // the two MLP matrices with biases
                           + 4 * h;              // two layer norms
  EXPECT_DOUBLE_EQ(parameters_per_layer(bert_large()), per_layer);  // 12,596,224
  const double expected = 24 * per_layer              // 302,309,376
                          + (30522 + 128) * h         // token + position embeddings
                          + 2 * h                     // embedding layer norm
                          + h * h + h + 2 * h + 30522;  // MLM transform, its norm, decoder bias
  EXPECT_DOUBLE_EQ(parameter_count(bert_large()), expected);  // 334,779,194
  // The published "340M" also counts the pooler, NSP head, token-type and 512 position
  // embeddings, which phase-1 training with seq 128 does not use: within 2%.
  EXPECT_NEAR(parameter_count(bert_large()), 340e6, 0.02 * 340e6);
}

TEST(ParameterCount, Bert1_5B) {
  const double h = 1600, f = 6400;
  const double per_layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;  // 30,740,800
  const double expected = 48 * per_layer + (30522 + 128) * h + 2 * h + h * h + h + 2 * h + 30522;
  EXPECT_DOUBLE_EQ(parameter_count(bert_1_5b()), expected);  // 1,527,196,922
  EXPECT_NEAR(parameter_count(bert_1_5b()), 1.5e9, 0.03 * 1.5e9);
}

TEST(ParameterCount, NoMlmHeadDropsTheTransform) {
  TransformerSpec s = bert_large();
  s.mlm_head = false;
  const double h = 1024;
  EXPECT_DOUBLE_EQ(parameter_count(bert_large()) - parameter_count(s), h * h + h + 2 * h + 30522);
}

TEST(MakeGemm, FlopsAndBytes) {
  const Operation g = make_gemm("g", 64, 32, 16, 3, Dtype::bf16);
  EXPECT_EQ(g.kind, OpKind::gemm);
  EXPECT_DOUBLE_EQ(g.flops, 2.0 * 64 * 32 * 16 * 3);                  // 2mnk x batch
  EXPECT_DOUBLE_EQ(g.bytes, 2.0 * 3 * (64 * 16 + 16 * 32 + 64 * 32));  // A, B and C in bf16
}

TEST(MakeElementwise, KeepsBytesAndFlops) {
  const Operation e = make_elementwise("e", 1e6, 5e5);
  EXPECT_EQ(e.kind, OpKind::elementwise);
  EXPECT_DOUBLE_EQ(e.bytes, 1e6);
  EXPECT_DOUBLE_EQ(e.flops, 5e5);
}

TEST(LayerForward, GemmFlopsOfOneLayer) {
  const TransformerSpec s = bert_large();
  const double b = 4, sq = 128, h = 1024, f = 4096, t = b * sq;
  const Flops projections = 2 * t * (3 * h * h + h * h + 2 * h * f);  // QKV, out, FFN in and out
  const Flops attention = 2 * (2 * b * sq * sq * h);                  // scores and context
  EXPECT_DOUBLE_EQ(gemm_flops(layer_forward_ops(s, 4)), projections + attention);
}

TEST(Backward, EachGemmBecomesTwoOfTheSameFlops) {
  const auto fwd = layer_forward_ops(bert_large(), 2);
  const auto bwd = backward_of(fwd);
  EXPECT_DOUBLE_EQ(gemm_flops(bwd), 2 * gemm_flops(fwd));
  std::size_t gemms = 0;
  for (const auto& op : fwd) gemms += op.kind == OpKind::gemm ? 1 : 0;
  EXPECT_EQ(bwd.size(), fwd.size() + gemms);
  EXPECT_EQ(layer_backward_ops(bert_large(), 2).size(), bwd.size());
}

TEST(Backward, RunsInReverseOrder) {
  const std::vector<Operation> fwd = {make_gemm("first", 8, 8, 8, 1, Dtype::bf16),
                                      make_elementwise("second", 100, 10)};
  const auto bwd = backward_of(fwd);
  ASSERT_EQ(bwd.size(), 3u);
  EXPECT_EQ(bwd[0].name, "second_bwd");
  EXPECT_DOUBLE_EQ(bwd[0].bytes, 1.5 * 100);  // saved input + incoming gradient, outgoing gradient
  EXPECT_DOUBLE_EQ(bwd[0].flops, 2 * 10);
  EXPECT_EQ(bwd[1].name, "first_dgrad");
  EXPECT_EQ(bwd[2].name, "first_wgrad");
}

TEST(Backward, DgradAndWgradShapes) {
  const auto bwd = backward_of({make_gemm("g", 10, 20, 30, 2, Dtype::bf16)});  // (10x30) x (30x20)
  ASSERT_EQ(bwd.size(), 2u);
  // dX (10x30) = dY (10x20) x W^T (20x30); dW (30x20) = X^T (30x10) x dY (10x20).
  EXPECT_DOUBLE_EQ(bwd[0].m, 10);
  EXPECT_DOUBLE_EQ(bwd[0].n, 30);
  EXPECT_DOUBLE_EQ(bwd[0].k, 20);
  EXPECT_DOUBLE_EQ(bwd[1].m, 30);
  EXPECT_DOUBLE_EQ(bwd[1].n, 20);
  EXPECT_DOUBLE_EQ(bwd[1].k, 10);
  EXPECT_DOUBLE_EQ(bwd[0].batch, 2);
}

TEST(ModelFlops, SixTimesDenseParametersPerTokenPlusAttention) {
  const TransformerSpec s = bert_large();
  const double sq = 128, h = 1024, l = 24;
  const double dense = parameter_count(s) - sq * h;  // position embeddings do no arithmetic
  EXPECT_DOUBLE_EQ(model_flops_per_sequence(s), 6 * dense * sq + 12 * l * h * sq * sq);
  // Attention adds 12lhs^2 / (6 P s) ~ 2% at seq 128.
  EXPECT_NEAR(model_flops_per_sequence(s), 6 * parameter_count(s) * sq,
              0.03 * 6 * parameter_count(s) * sq);
}

TEST(ModelFlops, MatchesTheLayerGemmsForwardAndBackward) {
  // Per layer and sequence, forward + backward GEMMs are 3x the forward: 6 x (weights) x tokens
  // plus 12 h s^2 of attention, the per-layer terms of model_flops_per_sequence.
  const TransformerSpec s = bert_large();
  const double sq = 128, h = 1024, f = 4096;
  const Flops layer = gemm_flops(layer_forward_ops(s, 1)) + gemm_flops(layer_backward_ops(s, 1));
  EXPECT_DOUBLE_EQ(layer, 6 * (4 * h * h + 2 * h * f) * sq + 12 * h * sq * sq);
}

TEST(HeadAndEmbedding, Shapes) {
  const TransformerSpec s = bert_large();
  const double t = 2 * 128, h = 1024, v = 30522;
  const auto head = head_forward_ops(s, 2);
  ASSERT_EQ(head.size(), 4u);  // MLM transform, its GELU + norm, vocabulary projection, loss
  EXPECT_DOUBLE_EQ(head[2].flops, 2 * t * v * h);
  EXPECT_DOUBLE_EQ(head[3].bytes, 3 * t * v * 4.0);  // fp32 logits: read, softmax write, read
  const auto emb = embedding_forward_ops(s, 2);
  ASSERT_EQ(emb.size(), 1u);
  EXPECT_EQ(emb[0].kind, OpKind::elementwise);
  EXPECT_DOUBLE_EQ(emb[0].bytes, 8 * t * h * 2.0);
}

TEST(SequenceParallelism, NormsAndResidualsRunOnOneTpthOfTheSequence) {
  // Korthikanti et al. 2022: with SP the work TP alone replicates (norms, dropout, residual adds)
  // is split along the sequence; the GEMMs and the TP-split activation functions are unchanged.
  TransformerSpec s = bert_large();
  const LayerShape tp4{8, 4, false, false, false};
  LayerShape sp4 = tp4;
  sp4.sequence_parallel = true;
  const auto plain = layer_forward_ops(s, tp4);
  const auto split = layer_forward_ops(s, sp4);
  ASSERT_EQ(plain.size(), split.size());
  int divided = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const std::string& n = plain[i].name;
    if (n.rfind("layernorm", 0) == 0 || n.rfind("residual", 0) == 0) {
      EXPECT_DOUBLE_EQ(split[i].bytes, plain[i].bytes / 4) << n;
      ++divided;
    } else {
      EXPECT_DOUBLE_EQ(split[i].bytes, plain[i].bytes) << n;
      EXPECT_DOUBLE_EQ(split[i].flops, plain[i].flops) << n;
    }
  }
  EXPECT_EQ(divided, 4);  // two norms, two residual adds
}

TEST(FusedAttention, ReplacesTheScoreMatricesByOneKernel) {
  TransformerSpec gpt{"GPT", 24, 2048, 16, 8192, 50000, 2048};
  const LayerShape flash{4, 2, false, true};
  std::vector<std::string> names;
  for (const auto& op : layer_forward_ops(gpt, flash)) names.push_back(op.name);
  for (const char* gone : {"attn_scores", "softmax", "attn_dropout", "attn_context"})
    EXPECT_EQ(std::count(names.begin(), names.end(), gone), 0) << gone;
  const Operation f = make_fused_attention(gpt, flash);
  EXPECT_EQ(f.kind, OpKind::fused_attention);
  // 8 heads per TP rank, d = 128, causal: 2 s^2 d per head and sequence.
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 2048 * 2048 * 128 * 8 * 4);
  // Q, K, V, O of 4 x 2048 tokens x 1024 columns in bf16, plus an fp32 log-sum-exp per row.
  EXPECT_DOUBLE_EQ(f.bytes, 2.0 * 4 * 2048 * 4 * 1024 + 4.0 * 4 * 8 * 2048);
  const auto back = backward_of({f});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].kind, OpKind::fused_attention_backward);
  EXPECT_DOUBLE_EQ(back[0].flops, 2.5 * f.flops);  // five matmuls to the forward's two
}

TEST(FusedAttention, BidirectionalAttentionComputesEveryBlock) {
  TransformerSpec bert = bert_large();
  bert.causal = false;
  const LayerShape flash{8, 1, false, true};
  EXPECT_DOUBLE_EQ(make_fused_attention(bert, flash).flops, 4.0 * 128 * 128 * 64 * 16 * 8);
}

}  // namespace
}  // namespace trainsim::model

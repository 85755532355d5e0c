// An encoder-decoder (model/encoder_decoder.hpp, architecture "t5"): T5-11B's parameter count
// against the published 11.3B, its FLOPs against its own op lists, and a decoder block's
// cross-attention ops and stored tensors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/encoder_decoder.hpp"
#include "model/published_models.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

const Operation* find(const std::vector<Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

Bytes stored(const std::vector<StoredTensor>& tensors, const std::string& name) {
  for (const auto& t : tensors)
    if (t.name == name) return t.bytes;
  return -1;
}

TEST(EncoderDecoder, T5_11bHasItsPublishedParameterCount) {
  const TransformerSpec s = t5_11b();
  const auto groups = block_groups(s);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "encoder");
  EXPECT_EQ(groups[1].name, "decoder");
  // Encoder block: q, k, v, o 4 x 1024 x 16384 = 67,108,864; wi, wo 2 x 1024 x 65536 =
  // 134,217,728; two RMS norms 2 x 1024.
  EXPECT_DOUBLE_EQ(parameters_per_layer(groups[0].block), 67108864.0 + 134217728.0 + 2048.0);
  // Decoder block: the same and a cross-attention (67,108,864) with its norm (1024).
  EXPECT_DOUBLE_EQ(parameters_per_layer(groups[1].block), 201328640.0 + 67108864.0 + 1024.0);
  EXPECT_DOUBLE_EQ(largest_block_parameters(s), 268438528.0);
  // Shared table 32128 x 1024 and two relative-bias tables 32 x 128; the head: two final norms
  // (encoder, decoder), tied projection.
  EXPECT_DOUBLE_EQ(embedding_parameters(s), 32899072.0 + 8192.0);
  EXPECT_DOUBLE_EQ(head_parameters(s), 2048.0);
  // 24 x 201,328,640 + 24 x 268,438,528 + 32,907,264 + 2,048 = 11,307,321,344: "11B" in the
  // paper's Table 14, 11.3B in Hugging Face's model card.
  EXPECT_DOUBLE_EQ(parameter_count(s), 11307321344.0);
  // Untied (v1.1 style): one more vocab x d_model.
  TransformerSpec untied = s;
  untied.tied_embeddings = false;
  EXPECT_DOUBLE_EQ(parameter_count(untied) - parameter_count(s), 32128.0 * 1024.0);
}

TEST(EncoderDecoder, BlocksGetTheirOwnTokensMaskAndKeys) {
  const auto groups = block_groups(t5_11b(128));
  const TransformerSpec& enc = groups[0].block;
  const TransformerSpec& dec = groups[1].block;
  EXPECT_EQ(groups[0].count, 24);
  EXPECT_EQ(groups[1].count, 24);
  EXPECT_FALSE(enc.causal);
  EXPECT_EQ(enc.seq_len, 512);
  EXPECT_EQ(enc.cross_seq_len, 0);
  EXPECT_TRUE(dec.causal);
  EXPECT_EQ(dec.seq_len, 128);
  EXPECT_EQ(dec.cross_seq_len, 512);
  // A single stack is one group of itself.
  TransformerSpec gpt = t5_11b();
  gpt.decoder_layers = 0;
  ASSERT_EQ(block_groups(gpt).size(), 1u);
  EXPECT_EQ(block_groups(gpt)[0].count, 24);
  EXPECT_EQ(decoder_tokens(gpt), 512);
}

TEST(EncoderDecoder, DecoderBlockOpsHaveTheCrossAttentionOnTheEncodersTokens) {
  const TransformerSpec s = t5_11b(128);
  const auto groups = block_groups(s);
  const LayerShape shape{2};  // two sequences: 1024 encoder tokens, 256 decoder tokens
  const auto enc = layer_forward_ops(groups[0].block, shape);
  const auto dec = layer_forward_ops(groups[1].block, shape);
  EXPECT_EQ(find(enc, "cross_q"), nullptr);
  // Self-attention: q, k, v fused into one GEMM over the 16384 inner columns each.
  const Operation* qkv = find(enc, "qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_DOUBLE_EQ(qkv->m, 1024.0);
  EXPECT_DOUBLE_EQ(qkv->n, 3 * 16384.0);
  EXPECT_DOUBLE_EQ(qkv->k, 1024.0);
  const Operation* q = find(dec, "cross_q");
  const Operation* k = find(dec, "cross_k");
  const Operation* scores = find(dec, "cross_attn_scores");
  const Operation* out = find(dec, "cross_attn_out");
  ASSERT_TRUE(q && k && scores && out);
  EXPECT_DOUBLE_EQ(q->m, 256.0);   // decoder tokens
  EXPECT_DOUBLE_EQ(k->m, 1024.0);  // encoder tokens
  EXPECT_DOUBLE_EQ(k->n, 16384.0);
  // Scores: 128 decoder queries x 512 encoder keys x 128 channels, per head and sequence.
  EXPECT_DOUBLE_EQ(scores->m, 128.0);
  EXPECT_DOUBLE_EQ(scores->n, 512.0);
  EXPECT_DOUBLE_EQ(scores->k, 128.0);
  EXPECT_DOUBLE_EQ(scores->batch, 2 * 128.0);
  EXPECT_DOUBLE_EQ(out->k, 16384.0);
  EXPECT_DOUBLE_EQ(out->n, 1024.0);
  // T5's attention: the position bias added, softmax in fp32 between two casts; ReLU FFN with
  // dropout; no 1/sqrt(d) scale.
  for (const char* name : {"position_bias_add", "softmax_upcast", "softmax_downcast", "cross_position_bias_add",
                           "cross_softmax_upcast", "relu", "ffn_dropout"})
    EXPECT_NE(find(dec, name), nullptr) << name;
  const Operation* bias = find(dec, "cross_position_bias_add");
  EXPECT_DOUBLE_EQ(bias->bytes, 3 * 2.0 * 2 * 128 * 128 * 512);  // read scores and bias, write: bf16
  EXPECT_EQ(find(dec, "attn_scale"), nullptr);
}

TEST(EncoderDecoder, EagerT5HasSeparateProjectionsAndNoRotaryEmbedding) {
  // Hugging Face's module code: q, k, v as three nn.Linear; the positions enter as the bias on
  // the scores, not as rotary embeddings (no position table either).
  LayerShape eager{2};
  eager.eager = true;
  const auto ops = layer_forward_ops(block_groups(t5_11b())[0].block, eager);
  for (const char* name : {"q", "k", "v", "position_bias_add"}) EXPECT_NE(find(ops, name), nullptr) << name;
  for (const auto& op : ops) EXPECT_EQ(op.name.find("rope"), std::string::npos) << op.name;
}

TEST(EncoderDecoder, ModelFlopsAreThreeTimesTheOpListsGemms) {
  // An independent count: 3 x (the blocks' GEMM FLOPs from their op lists + the projection on
  // the decoder's tokens), against the closed form of blocks_forward_flops_per_sequence.
  const TransformerSpec s = t5_11b(128);
  double gemm = 0;
  for (const auto& g : block_groups(s))
    for (const auto& op : layer_forward_ops(g.block, LayerShape{1}))
      if (op.kind == OpKind::gemm) gemm += static_cast<double>(g.count) * op.flops;
  // The papers' 2 x parameters x tokens also counts the norms' weights, which no GEMM has:
  // 2 x 2048 x 512 per encoder block, 2 x 3072 x 128 per decoder block.
  gemm += 24 * 2.0 * 2048 * 512 + 24 * 2.0 * 3072 * 128;
  const auto head = head_forward_ops(s, LayerShape{1});  // find() points into it
  const Operation* projection = find(head, "vocab_projection");
  ASSERT_NE(projection, nullptr);
  EXPECT_DOUBLE_EQ(projection->m, 128.0);
  EXPECT_NEAR(model_flops_per_sequence(s), 3 * (gemm + projection->flops), 1e-9 * model_flops_per_sequence(s));
  EXPECT_NEAR(blocks_forward_flops_per_sequence(s), gemm, 1e-9 * gemm);
  // About 6 x 11.3e9 x 512 encoder tokens' worth, less the decoder's shorter input: 2.5e13.
  EXPECT_GT(model_flops_per_sequence(s), 2.0e13);
  EXPECT_LT(model_flops_per_sequence(s), 3.0e13);
}

TEST(EncoderDecoder, StoredTensorsCountTheCrossAttentionAndTheSharedEncoderOutput) {
  const TransformerSpec s = t5_11b(128);
  const auto groups = block_groups(s);
  const LayerShape shape{2};
  const auto enc = layer_stored_activations(groups[0].block, shape);
  const auto dec = layer_stored_activations(groups[1].block, shape);
  // fp32 probabilities: 4 B x 2 sequences x 128 heads x 512 x 512.
  EXPECT_DOUBLE_EQ(stored(enc, "softmax_output"), 4.0 * 2 * 128 * 512 * 512);
  EXPECT_DOUBLE_EQ(stored(dec, "cross_softmax_output"), 4.0 * 2 * 128 * 128 * 512);
  EXPECT_DOUBLE_EQ(stored(dec, "cross_k_v"), 2.0 * 1024 * 2 * 16384);
  EXPECT_LT(stored(enc, "cross_k_v"), 0);
  const auto head = head_stored_activations(s, shape);
  EXPECT_DOUBLE_EQ(stored(head, "encoder_output"), 2.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(stored(head, "cross_position_bias"), 2.0 * 2 * 128 * 128 * 512);
  // The loss on the decoder's 256 tokens.
  EXPECT_DOUBLE_EQ(stored(head, "loss_log_probs_fp32"), 4.0 * 256 * 32128);
  // The embedding looks up both stacks' tokens.
  EXPECT_DOUBLE_EQ(embedding_forward_ops(s, shape).front().bytes, 8 * (1024.0 + 256.0) * 1024 * 2);
}

}  // namespace
}  // namespace trainsim::model

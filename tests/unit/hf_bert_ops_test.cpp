// Hugging Face's eager BERT under torch.cuda.amp (model/hf_bert_ops.hpp, ModuleKernels::hf_bert):
// one BertLayer's forward kernels checked one by one against modeling_bert.py's calls, the bytes
// per attention-score element that autocast's dtypes make, and the MLM head's bytes per logit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/hf_bert_ops.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {
namespace {

// BERT-base as run_mlm.py builds it: 12 layers, h 768, 12 heads, f 3072, vocab 32,000, seq 512.
TransformerSpec bert_base() {
  TransformerSpec s{"BERT-base", 12, 768, 12, 3072, 32000, 512, true};
  s.causal = false;
  return s;
}

std::vector<std::string> names(const std::vector<Operation>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.push_back(op.name);
  return out;
}
double bytes_named(const std::vector<Operation>& ops, const std::vector<std::string>& wanted) {
  double b = 0;
  for (const auto& op : ops)
    for (const auto& w : wanted)
      if (op.name == w) b += op.bytes;
  return b;
}
double gemm_flops(const std::vector<Operation>& ops) {
  double f = 0;
  for (const auto& op : ops)
    if (op.kind == OpKind::gemm) f += op.flops;
  return f;
}

TEST(HfBertOps, LayerForwardFollowsBertLayerCallByCall) {
  // nn.Linear under autocast on an fp32 input: the input's cast, the weight's and the bias's
  // (cached once per forward), the GEMM, the bias written into the output.
  auto linear = [](const std::string& n, bool fp32_input) {
    std::vector<std::string> v;
    if (fp32_input) v.push_back(n + "_input_cast");
    for (const char* s : {"_weight_cast", "_bias_cast", "", "_bias"}) v.push_back(n + s);
    return v;
  };
  std::vector<std::string> expected;
  auto append = [&](const std::vector<std::string>& v) { expected.insert(expected.end(), v.begin(), v.end()); };
  append(linear("query", true));  // self.query(hidden_states): LayerNorm's fp32 output
  append(linear("key", true));
  append(linear("value", true));
  append({"query_matmul_copy", "key_matmul_copy", "attention_scores",  // torch.matmul(q, k^T)
          "attention_scale_div", "attention_mask_add", "softmax", "attention_dropout",
          "attention_probs_cast", "value_matmul_copy", "attention_context",  // torch.matmul(probs, v)
          "context_contiguous"});  // permute(0, 2, 1, 3).contiguous()
  append(linear("attention_output_dense", false));  // BertSelfOutput.dense on the fp16 context
  append({"attention_output_dropout", "attention_residual_add", "attention_layernorm"});
  append(linear("intermediate_dense", true));  // BertIntermediate on LayerNorm's fp32 output
  append({"gelu"});
  append(linear("output_dense", false));  // BertOutput.dense on GELU's fp16 output
  append({"output_dropout", "output_residual_add", "output_layernorm"});
  const auto ops = hf_bert_layer_forward(bert_base(), 2);
  EXPECT_EQ(names(ops), expected);
  // 4 fp32-input Linear x 5 + 2 fp16-input x 4 + 2 batched GEMMs + 3 copies around them + 5
  // score-sized ops + 6 after the two denses + GELU = 46 kernels.
  EXPECT_EQ(ops_kernels(ops), 4 * 5 + 2 * 4 + 2 + 3 + 5 + 6 + 1 + 1);
}

TEST(HfBertOps, AutocastDtypesOfTheAttentionScores) {
  const auto s = bert_base();
  const double e = 2.0 * 12 * 512 * 512;  // score elements of two sequences
  const auto f = hf_bert_layer_forward(s, 2);
  // fp16 / sqrt(d): 2 + 2; + fp32 mask -> fp32: 2 + 4; fp32 softmax: 4 + 4; fp32 dropout with its
  // bool mask: 4 + 4 + 1; the cast for the second matmul: 4 + 2. 33 bytes per element.
  EXPECT_DOUBLE_EQ(bytes_named(f, {"attention_scale_div", "attention_mask_add", "softmax", "attention_dropout",
                                   "attention_probs_cast"}),
                   33 * e);
  // Backward: the cast's (2 + 4), dropout's (4 + 1 + 4), softmax's (4 + 4 + 4), the mask add's
  // gradient cast to the fp16 scores (4 + 2), the division's (2 + 2): 37 bytes per element.
  const auto b = hf_bert_layer_backward(s, 2);
  EXPECT_DOUBLE_EQ(bytes_named(b, {"attention_probs_grad_cast", "attention_dropout_bwd", "softmax_bwd",
                                   "attention_mask_add_grad_cast", "attention_scale_div_bwd"}),
                   37 * e);
}

TEST(HfBertOps, SameGemmWorkAsTheFusedLayer) {
  // Separate query / key / value Linear and the unfused attention do the fused layer's FLOPs.
  const auto s = bert_base();
  LayerShape fused{4};
  LayerShape hf{4};
  hf.module_kernels = ModuleKernels::hf_bert;
  EXPECT_DOUBLE_EQ(gemm_flops(layer_forward_ops(s, hf)), gemm_flops(layer_forward_ops(s, fused)));
  EXPECT_DOUBLE_EQ(gemm_flops(layer_backward_ops(s, hf)), gemm_flops(layer_backward_ops(s, fused)));
  EXPECT_EQ(names(layer_forward_ops(s, hf)), names(hf_bert_layer_forward(s, 4)));
  EXPECT_EQ(names(head_backward_ops(s, hf)), names(hf_bert_head_backward(s, 4)));
  EXPECT_EQ(names(embedding_backward_ops(s, hf)), names(hf_bert_embedding_backward(s, 4)));
}

TEST(HfBertOps, LayoutCopiesAndWeightGradients) {
  const auto s = bert_base();
  const auto b = hf_bert_layer_backward(s, 1);
  int copies = 0, weight_casts = 0, accumulates = 0;
  for (const auto& op : b) {
    copies += op.kernel == "permute_copy" ? 1 : 0;
    weight_casts += op.name.find("_weight_grad_cast") != std::string::npos ? 1 : 0;
    accumulates += op.name.find("_grad_accumulate") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(copies, 4);        // the reshape gradients of the context, value, query and key
  EXPECT_EQ(weight_casts, 6);  // each Linear's fp16 weight gradient to fp32
  EXPECT_EQ(accumulates, 16);  // AccumulateGrad for each of the layer's 16 parameter tensors
}

TEST(HfBertOps, LossBytesPerLogit) {
  const auto s = bert_base();
  const double tv = 512.0 * 32000;  // logits of one sequence
  const auto f = hf_bert_head_forward(s, 1);
  // The decoder's bias (2 + 2), the fp16 logits cast to fp32 (2 + 4), fp32 log_softmax (4 + 4).
  EXPECT_DOUBLE_EQ(bytes_named(f, {"decoder_bias", "logits_cast", "log_softmax"}), 18 * tv);
  const auto b = hf_bert_head_backward(s, 1);
  // nll_loss_backward's zeroed gradient (4), log_softmax_backward (4 + 4 + 4), the cast back
  // (4 + 2); the bias gradient's reduction reads the fp16 gradient (2, + one row).
  EXPECT_DOUBLE_EQ(bytes_named(b, {"nll_loss_bwd_zeros", "log_softmax_bwd", "logits_grad_cast"}), 22 * tv);
  EXPECT_DOUBLE_EQ(bytes_named(b, {"decoder_bias_grad"}), 2 * (tv + 32000));
}

double saved_named(const std::vector<StoredTensor>& saved, const std::string& name) {
  for (const auto& t : saved)
    if (t.name == name) return t.bytes;
  ADD_FAILURE() << "no saved tensor " << name;
  return 0;
}

TEST(HfBertOps, OneLayerSavesWhatAutogradKeepsUnderAutocast) {
  // One sequence of BERT-base: t = 512 tokens, th = t x 768, e = 12 x 512 x 512 scores.
  const auto s = bert_base();
  const double t = 512, th = t * 768, tf = t * 3072, e = 12.0 * 512 * 512;
  const auto saved = hf_bert_layer_saved(s, 1);
  // Each Linear keeps its fp16 input (q, k, v and the intermediate dense their own cast of the
  // fp32 LayerNorm output) and the fp16 cast of its weight.
  for (const char* n : {"query", "key", "value", "attention_output_dense", "intermediate_dense"})
    EXPECT_DOUBLE_EQ(saved_named(saved, std::string(n) + "_input_fp16"), 2 * th) << n;
  EXPECT_DOUBLE_EQ(saved_named(saved, "output_dense_input_fp16"), 2 * tf);  // GELU's output
  EXPECT_DOUBLE_EQ(saved_named(saved, "query_weight_fp16"), 2 * 768.0 * 768);
  EXPECT_DOUBLE_EQ(saved_named(saved, "intermediate_dense_weight_fp16"), 2 * 768.0 * 3072);
  // torch.matmul's copies of the permuted q, k and v, which bmm keeps.
  for (const char* n : {"query_matmul_copy", "key_matmul_copy", "value_matmul_copy"})
    EXPECT_DOUBLE_EQ(saved_named(saved, n), 2 * th) << n;
  // The scores path: fp32 softmax output, the dropout's bool mask, the fp16 cast for bmm.
  EXPECT_DOUBLE_EQ(saved_named(saved, "softmax_output_fp32"), 4 * e);
  EXPECT_DOUBLE_EQ(saved_named(saved, "attention_dropout_mask"), e);
  EXPECT_DOUBLE_EQ(saved_named(saved, "attention_probs_fp16"), 2 * e);
  EXPECT_DOUBLE_EQ(saved_named(saved, "gelu_input"), 2 * tf);
  // LayerNorm keeps its fp32 input (the residual sum) and a mean and rstd per row.
  for (const char* n : {"attention_layernorm", "output_layernorm"}) {
    EXPECT_DOUBLE_EQ(saved_named(saved, std::string(n) + "_input_fp32"), 4 * th) << n;
    EXPECT_DOUBLE_EQ(saved_named(saved, std::string(n) + "_mean_rstd"), 8 * t) << n;
  }
  EXPECT_DOUBLE_EQ(saved_named(saved, "attention_output_dropout_mask"), th);
  EXPECT_DOUBLE_EQ(saved_named(saved, "output_dropout_mask"), th);
  // In all: 42 B per token and hidden unit, 7 B per score, 16 B per token, 2 B per weight,
  // against the fused bf16 layer's 34 sbh + 5 as^2b (Korthikanti et al. 2022).
  const double weights = 4 * 768.0 * 768 + 2 * 768.0 * 3072;
  EXPECT_DOUBLE_EQ(total_bytes(saved), 42 * th + 7 * e + 16 * t + 2 * weights);
  LayerShape hf{1};
  hf.module_kernels = ModuleKernels::hf_bert;
  EXPECT_DOUBLE_EQ(total_bytes(layer_stored_activations(s, hf)), total_bytes(saved));
  EXPECT_DOUBLE_EQ(total_bytes(layer_stored_activations(s, LayerShape{1})), 34 * th + 5 * e);
  EXPECT_DOUBLE_EQ(layer_input_bytes(s, hf), 4 * th);  // the fp32 residual stream
}

TEST(HfBertOps, EmbeddingAndHeadSaves) {
  const auto s = bert_base();
  const double t = 512, th = t * 768, tv = t * 32000;
  // Embeddings: the fp32 LayerNorm input and statistics, the dropout mask (indices are the
  // batch's own tensors).
  EXPECT_DOUBLE_EQ(total_bytes(hf_bert_embedding_saved(s, 1)), 4 * th + 8 * t + th);
  const auto head = hf_bert_head_saved(s, 1);
  // The loss keeps only the fp32 log-probabilities (the fp16 logits and their fp32 cast die).
  EXPECT_DOUBLE_EQ(saved_named(head, "log_softmax_output_fp32"), 4 * tv);
  EXPECT_DOUBLE_EQ(saved_named(head, "decoder_weight_fp16"), 2 * 768.0 * 32000);
  // Transform dense input and weight, GELU input, LayerNorm's fp32 input and statistics, the
  // decoder's fp16 input.
  EXPECT_DOUBLE_EQ(total_bytes(head), 2 * th + 2 * 768.0 * 768 + 2 * th + 4 * th + 8 * t + 2 * th +
                                          2 * 768.0 * 32000 + 4 * tv);
}

}  // namespace
}  // namespace trainsim::model

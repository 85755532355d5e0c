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

}  // namespace
}  // namespace trainsim::model

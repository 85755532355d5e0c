#include "model/hf_bert_ops.hpp"

#include "model/module_kernels.hpp"

#include <utility>

namespace trainsim::model {

namespace {
constexpr double kHalf = 2.0;   // fp16 activations, the GEMMs' operands and outputs
constexpr double kFloat = 4.0;  // fp32 weights, gradients, residual stream, softmax, LayerNorm
constexpr double kMask = 1.0;   // dropout's bool mask

/// An autocast dtype conversion of `elements` elements (or the conversion's backward).
Operation cast(std::string name, double elements, double from_bytes, double to_bytes) {
  return make_elementwise(std::move(name), elements * (from_bytes + to_bytes), 0, "autocast_cast");
}

/// AccumulateGrad's in-place add of an fp32 gradient into a zeroed .grad (read both, write one).
Operation accumulate(std::string name, double elements) {
  return make_elementwise(std::move(name), 3 * kFloat * elements, elements);
}

/// The kernels of one nn.Linear(k -> n) with a bias on `t` tokens under autocast. The input is
/// cast when it arrives in fp32; the weight and the bias are cast once per forward (cached).
struct Linear {
  std::string name;
  double t, k, n;
  bool fp32_input;

  void forward(std::vector<Operation>& ops) const {
    if (fp32_input) ops.push_back(cast(name + "_input_cast", t * k, kFloat, kHalf));
    ops.push_back(cast(name + "_weight_cast", k * n, kFloat, kHalf));
    ops.push_back(cast(name + "_bias_cast", n, kFloat, kHalf));
    ops.push_back(make_gemm(name, t, n, k, 1, Dtype::fp16));
    ops.push_back(make_elementwise(name + "_bias", 2 * kHalf * t * n, t * n));
  }
  void backward(std::vector<Operation>& ops) const {
    ops.push_back(bias_grad_reduction(name + "_bias_grad", t, n));
    ops.push_back(make_gemm(name + "_dgrad", t, k, n, 1, Dtype::fp16));
    ops.push_back(make_gemm(name + "_wgrad", k, n, t, 1, Dtype::fp16));
    ops.push_back(cast(name + "_weight_grad_cast", k * n, kHalf, kFloat));
    ops.push_back(accumulate(name + "_weight_grad_accumulate", k * n));
    ops.push_back(cast(name + "_bias_grad_cast", n, kHalf, kFloat));
    ops.push_back(accumulate(name + "_bias_grad_accumulate", n));
    if (fp32_input) ops.push_back(cast(name + "_input_grad_cast", t * k, kHalf, kFloat));
  }
};

/// nn.LayerNorm(h) on `rows` fp32 rows: forward one kernel; backward the input gradient, the
/// weight and bias gradients (2 kernels, as the fused default counts a norm's backward) and
/// their two AccumulateGrad adds.
void layer_norm_forward(std::vector<Operation>& ops, const std::string& name, double rows, double h) {
  ops.push_back(make_elementwise(name, 2 * kFloat * rows * h, 8 * rows * h, "layer_norm"));
}
void layer_norm_backward(std::vector<Operation>& ops, const std::string& name, double rows, double h) {
  Operation b = make_elementwise(name + "_bwd", 3 * kFloat * rows * h, 16 * rows * h, "layer_norm_bwd");
  b.kernels = 2;
  ops.push_back(std::move(b));
  ops.push_back(accumulate(name + "_weight_grad_accumulate", h));
  ops.push_back(accumulate(name + "_bias_grad_accumulate", h));
}

/// Shapes of one micro-batch.
struct Shape {
  double t, sq, h, f, a, d, b, scores, v;
};

Shape shape_of(const TransformerSpec& s, long micro_batch) {
  Shape x{};
  x.b = static_cast<double>(micro_batch);
  x.sq = static_cast<double>(s.seq_len);
  x.t = x.b * x.sq;
  x.h = static_cast<double>(s.hidden);
  x.f = static_cast<double>(s.ffn_hidden);
  x.a = static_cast<double>(s.heads);
  x.d = x.h / x.a;
  x.scores = x.b * x.a * x.sq * x.sq;
  x.v = static_cast<double>(s.vocab);
  return x;
}

/// The layer's Linear modules. q, k, v and the intermediate dense read LayerNorm's fp32 output
/// (the previous layer's, or the embeddings'); the attention and output denses read fp16.
struct LayerLinears {
  Linear q, k, v, attn_out, ffn_in, ffn_out;
};

LayerLinears linears_of(const Shape& x) {
  return {{"query", x.t, x.h, x.h, true},          {"key", x.t, x.h, x.h, true},
          {"value", x.t, x.h, x.h, true},          {"attention_output_dense", x.t, x.h, x.h, false},
          {"intermediate_dense", x.t, x.h, x.f, true}, {"output_dense", x.t, x.f, x.h, false}};
}

}  // namespace

std::vector<Operation> hf_bert_layer_forward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const LayerLinears l = linears_of(x);
  const double th = x.t * x.h, e = x.scores;
  std::vector<Operation> ops;
  // BertSelfAttention.
  l.q.forward(ops);
  l.k.forward(ops);
  l.v.forward(ops);
  // matmul(query_layer, key_layer.transpose(-1, -2)): both permuted views copied into batches.
  ops.push_back(permute_copy("query_matmul_copy", th));
  ops.push_back(permute_copy("key_matmul_copy", th));
  Operation scores = make_gemm("attention_scores", x.sq, x.sq, x.d, x.b * x.a, Dtype::fp16);
  ops.push_back(std::move(scores));
  ops.push_back(make_elementwise("attention_scale_div", 2 * kHalf * e, e));           // fp16 / sqrt(d)
  ops.push_back(make_elementwise("attention_mask_add", (kHalf + kFloat) * e, e));     // fp16 + fp32 mask -> fp32
  ops.push_back(make_elementwise("softmax", 2 * kFloat * e, 5 * e, "softmax"));      // fp32
  ops.push_back(make_elementwise("attention_dropout", (2 * kFloat + kMask) * e, 0, "dropout"));  // fp32
  ops.push_back(cast("attention_probs_cast", e, kFloat, kHalf));  // matmul's fp16 operand
  ops.push_back(permute_copy("value_matmul_copy", th));
  ops.push_back(make_gemm("attention_context", x.sq, x.d, x.sq, x.b * x.a, Dtype::fp16));
  ops.push_back(permute_copy("context_contiguous", th));
  // BertSelfOutput: dense, dropout (fp16), + input_tensor (fp32: the sum is fp32), LayerNorm.
  l.attn_out.forward(ops);
  ops.push_back(make_elementwise("attention_output_dropout", (2 * kHalf + kMask) * th, 0, "dropout"));
  ops.push_back(make_elementwise("attention_residual_add", (kHalf + 2 * kFloat) * th, th));
  layer_norm_forward(ops, "attention_layernorm", x.t, x.h);
  // BertIntermediate: dense on the fp32 LayerNorm output, GELU in fp16.
  l.ffn_in.forward(ops);
  ops.push_back(make_elementwise("gelu", 2 * kHalf * x.t * x.f, 8 * x.t * x.f, "gelu"));
  // BertOutput.
  l.ffn_out.forward(ops);
  ops.push_back(make_elementwise("output_dropout", (2 * kHalf + kMask) * th, 0, "dropout"));
  ops.push_back(make_elementwise("output_residual_add", (kHalf + 2 * kFloat) * th, th));
  layer_norm_forward(ops, "output_layernorm", x.t, x.h);
  return ops;
}

std::vector<Operation> hf_bert_layer_backward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const LayerLinears l = linears_of(x);
  const double th = x.t * x.h, e = x.scores;
  std::vector<Operation> ops;
  // BertOutput: LayerNorm, the add's gradient cast to the fp16 branch (the residual branch's
  // fp32 gradient passes as is), dropout, dense.
  layer_norm_backward(ops, "output_layernorm", x.t, x.h);
  ops.push_back(cast("output_residual_grad_cast", th, kFloat, kHalf));
  ops.push_back(make_elementwise("output_dropout_bwd", (2 * kHalf + kMask) * th, 0, "dropout_bwd"));
  l.ffn_out.backward(ops);
  ops.push_back(make_elementwise("gelu_bwd", 3 * kHalf * x.t * x.f, 16 * x.t * x.f, "gelu_bwd"));
  l.ffn_in.backward(ops);
  // The attention LayerNorm's output fed the intermediate dense and the residual add: autograd
  // sums the two fp32 gradients.
  ops.push_back(make_elementwise("attention_layernorm_grad_add", 3 * kFloat * th, th));
  layer_norm_backward(ops, "attention_layernorm", x.t, x.h);
  ops.push_back(cast("attention_residual_grad_cast", th, kFloat, kHalf));
  ops.push_back(make_elementwise("attention_output_dropout_bwd", (2 * kHalf + kMask) * th, 0, "dropout_bwd"));
  l.attn_out.backward(ops);
  // The context's contiguous() and the batched matmul's reshape: the gradient copied back into
  // batches, then the two GEMMs, the value gradient copied back to the projection's layout.
  ops.push_back(permute_copy("context_grad_copy", th));
  ops.push_back(make_gemm("attention_context_dgrad", x.sq, x.sq, x.d, x.b * x.a, Dtype::fp16));
  ops.push_back(make_gemm("attention_context_wgrad", x.sq, x.d, x.sq, x.b * x.a, Dtype::fp16));
  ops.push_back(permute_copy("value_grad_copy", th));
  ops.push_back(cast("attention_probs_grad_cast", e, kHalf, kFloat));
  ops.push_back(make_elementwise("attention_dropout_bwd", (2 * kFloat + kMask) * e, 0, "dropout_bwd"));
  ops.push_back(make_elementwise("softmax_bwd", 3 * kFloat * e, 3 * e, "softmax_bwd"));
  // The mask add's gradient reaches the fp16 scores as fp16 (autograd casts it to the input's
  // dtype), then the division's.
  ops.push_back(cast("attention_mask_add_grad_cast", e, kFloat, kHalf));
  ops.push_back(make_elementwise("attention_scale_div_bwd", 2 * kHalf * e, e));
  ops.push_back(make_gemm("attention_scores_dgrad_query", x.sq, x.d, x.sq, x.b * x.a, Dtype::fp16));
  ops.push_back(make_gemm("attention_scores_dgrad_key", x.sq, x.d, x.sq, x.b * x.a, Dtype::fp16));
  ops.push_back(permute_copy("query_grad_copy", th));
  ops.push_back(permute_copy("key_grad_copy", th));
  l.v.backward(ops);
  l.k.backward(ops);
  l.q.backward(ops);
  // The layer's input fed query, key, value and the residual add: three adds of fp32 gradients.
  for (const char* name : {"input_grad_add_key", "input_grad_add_value", "input_grad_add_residual"})
    ops.push_back(make_elementwise(name, 3 * kFloat * th, th));
  return ops;
}

std::vector<Operation> hf_bert_embedding_forward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h;
  std::vector<Operation> ops;
  // get_extended_attention_mask: mask[:, None, None, :], .to(self.dtype), (1.0 - m) * min.
  ops.push_back(make_elementwise("extended_mask_cast", x.t * (8 + kFloat), 0));
  ops.push_back(make_elementwise("extended_mask_rsub", 2 * kFloat * x.t, x.t));
  ops.push_back(make_elementwise("extended_mask_mul", 2 * kFloat * x.t, x.t));
  // Lookups read a row and write it (fp32 tables); adds read two and write one.
  ops.push_back(make_elementwise("word_embeddings", 2 * kFloat * th, 0));
  ops.push_back(make_elementwise("token_type_embeddings", 2 * kFloat * th, 0));
  ops.push_back(make_elementwise("embeddings_add_token_type", 3 * kFloat * th, th));
  ops.push_back(make_elementwise("position_embeddings", 2 * kFloat * th, 0));
  ops.push_back(make_elementwise("embeddings_add_position", 3 * kFloat * th, th));
  layer_norm_forward(ops, "embeddings_layernorm", x.t, x.h);
  ops.push_back(make_elementwise("embeddings_dropout", (2 * kFloat + kMask) * th, 0, "dropout"));
  return ops;
}

std::vector<Operation> hf_bert_embedding_backward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h;
  std::vector<Operation> ops;
  ops.push_back(make_elementwise("embeddings_dropout_bwd", (2 * kFloat + kMask) * th, 0, "dropout_bwd"));
  layer_norm_backward(ops, "embeddings_layernorm", x.t, x.h);
  // embedding_dense_backward per table: a zeroed fp32 table, the tokens' gradient rows added in,
  // then AccumulateGrad (the word table's .grad already holds the tied decoder's gradient).
  for (const auto& [name, rows] : {std::pair{"position_embeddings", x.sq}, std::pair{"token_type_embeddings", 2.0},
                                   std::pair{"word_embeddings", x.v}}) {
    ops.push_back(make_elementwise(std::string(name) + "_grad_zeros", kFloat * rows * x.h, 0));
    ops.push_back(make_elementwise(std::string(name) + "_grad_scatter", 2 * kFloat * th, th));
    ops.push_back(accumulate(std::string(name) + "_grad_accumulate", rows * x.h));
  }
  return ops;
}

std::vector<Operation> hf_bert_head_forward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h, tv = x.t * x.v;
  std::vector<Operation> ops;
  // BertPredictionHeadTransform: dense on the last LayerNorm's fp32 output, GELU (fp16),
  // LayerNorm (autocast casts its fp16 input to fp32).
  Linear{"head_transform_dense", x.t, x.h, x.h, true}.forward(ops);
  ops.push_back(make_elementwise("head_gelu", 2 * kHalf * th, 8 * th, "gelu"));
  ops.push_back(cast("head_layernorm_input_cast", th, kHalf, kFloat));
  layer_norm_forward(ops, "head_layernorm", x.t, x.h);
  // BertLMPredictionHead.decoder (tied to the word embeddings, with its own bias) on every token.
  Linear{"decoder", x.t, x.h, x.v, true}.forward(ops);
  // CrossEntropyLoss (autocast fp32): the fp16 logits cast, log_softmax, nll_loss's gather and
  // mean over the labels that are not ignore_index.
  ops.push_back(cast("logits_cast", tv, kHalf, kFloat));
  ops.push_back(make_elementwise("log_softmax", 2 * kFloat * tv, 5 * tv, "softmax"));
  ops.push_back(make_elementwise("nll_loss", x.t * (8 + kFloat), x.t));
  return ops;
}

std::vector<Operation> hf_bert_head_backward(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h, tv = x.t * x.v;
  std::vector<Operation> ops;
  // nll_loss_backward: a zeroed fp32 gradient of the logits' size, one entry written per label.
  ops.push_back(make_elementwise("nll_loss_bwd_zeros", kFloat * tv, 0));
  ops.push_back(make_elementwise("nll_loss_bwd", x.t * (8 + kFloat), x.t));
  ops.push_back(make_elementwise("log_softmax_bwd", 3 * kFloat * tv, 3 * tv, "softmax_bwd"));
  ops.push_back(cast("logits_grad_cast", tv, kFloat, kHalf));
  Linear{"decoder", x.t, x.h, x.v, true}.backward(ops);
  layer_norm_backward(ops, "head_layernorm", x.t, x.h);
  ops.push_back(cast("head_layernorm_input_grad_cast", th, kFloat, kHalf));
  ops.push_back(make_elementwise("head_gelu_bwd", 3 * kHalf * th, 16 * th, "gelu_bwd"));
  Linear{"head_transform_dense", x.t, x.h, x.h, true}.backward(ops);
  return ops;
}

}  // namespace trainsim::model

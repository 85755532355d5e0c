#include "model/hf_bert_ops.hpp"

#include "model/module_kernels.hpp"

#include <utility>

namespace trainsim::model {

namespace {
constexpr double kHalf = 2.0;   // fp16 activations, the GEMMs' operands and outputs
constexpr double kFloat = 4.0;  // fp32 weights, gradients, residual stream, softmax, LayerNorm
constexpr double kMask = 1.0;   // dropout's bool mask

/// One forward pass's kernels and what autograd keeps of them for the backward, built side by
/// side so that the memory model (hf_bert_*_saved) and the op lists cannot drift. Each op that
/// saves a tensor says so right after it runs, with the derivatives.yaml formula (PyTorch 1.11,
/// tools/autograd/derivatives.yaml, by entry) that reads it.
struct Pass {
  std::vector<Operation> ops;
  std::vector<StoredTensor> saved;
  void run(Operation op) { ops.push_back(std::move(op)); }
  void keep(std::string name, double bytes) { saved.push_back({std::move(name), bytes}); }
};

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

  void forward(Pass& p) const {
    if (fp32_input) p.run(cast(name + "_input_cast", t * k, kFloat, kHalf));
    p.run(cast(name + "_weight_cast", k * n, kFloat, kHalf));
    p.run(cast(name + "_bias_cast", n, kFloat, kHalf));
    p.run(make_gemm(name, t, n, k, 1, Dtype::fp16));
    p.run(make_elementwise(name + "_bias", 2 * kHalf * t * n, t * n));
    // addmm (or mm) keeps both GEMM operands for the other's gradient (addmm: mat1 reads mat2,
    // mat2 reads mat1): the fp16 input (the cast when it came in fp32: a new tensor per Linear,
    // as only leaves are cached) and the fp16 weight, the autocast cache's cast, which the saved
    // reference keeps past the cache's clearing at autocast's exit until this backward. The
    // bias's cast is not read by any gradient.
    p.keep(name + "_input_fp16", kHalf * t * k);
    p.keep(name + "_weight_fp16", kHalf * k * n);
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
void layer_norm_forward(Pass& p, const std::string& name, double rows, double h) {
  p.run(make_elementwise(name, 2 * kFloat * rows * h, 8 * rows * h, "layer_norm"));
  // native_layer_norm: the backward reads input, weight, bias, result1 (mean) and result2
  // (rstd), fp32 per row: the fp32 input is kept, not the output.
  p.keep(name + "_input_fp32", kFloat * rows * h);
  p.keep(name + "_mean_rstd", 2 * kFloat * rows);
}

/// nn.Dropout in training: native_dropout's backward reads result1, its bool mask.
void dropout_forward(Pass& p, const std::string& name, double elements, double dtype_bytes) {
  p.run(make_elementwise(name, (2 * dtype_bytes + kMask) * elements, 0, "dropout"));
  p.keep(name + "_mask", kMask * elements);
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

namespace {

Pass layer_pass(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const LayerLinears l = linears_of(x);
  const double th = x.t * x.h, e = x.scores;
  Pass p;
  // BertSelfAttention. Not kept: the layer's fp32 input (the casts and the residual add read
  // it, none of their gradients does) and the projections' outputs (only their copies are).
  l.q.forward(p);
  l.k.forward(p);
  l.v.forward(p);
  // matmul(query_layer, key_layer.transpose(-1, -2)): both permuted views copied into batches;
  // bmm keeps both operands (self: grad.bmm(mat2^T), mat2: self^T.bmm(grad)), the copies.
  p.run(permute_copy("query_matmul_copy", th));
  p.run(permute_copy("key_matmul_copy", th));
  p.run(make_gemm("attention_scores", x.sq, x.sq, x.d, x.b * x.a, Dtype::fp16));
  p.keep("query_matmul_copy", kHalf * th);
  p.keep("key_matmul_copy", kHalf * th);
  // The division by a Python float and the add of the mask keep nothing of size (div.Tensor
  // keeps the 0-dim divisor; add's gradients read no tensor).
  p.run(make_elementwise("attention_scale_div", 2 * kHalf * e, e));           // fp16 / sqrt(d)
  p.run(make_elementwise("attention_mask_add", (kHalf + kFloat) * e, e));     // fp16 + fp32 mask -> fp32
  p.run(make_elementwise("softmax", 2 * kFloat * e, 5 * e, "softmax"));      // fp32
  p.keep("softmax_output_fp32", kFloat * e);  // _softmax: _softmax_backward_data(grad, result)
  dropout_forward(p, "attention_dropout", e, kFloat);
  // The cast's backward reads no tensor, so the fp32 dropout output dies here; the second bmm
  // keeps its fp16 cast and the copy of v.
  p.run(cast("attention_probs_cast", e, kFloat, kHalf));  // matmul's fp16 operand
  p.run(permute_copy("value_matmul_copy", th));
  p.run(make_gemm("attention_context", x.sq, x.d, x.sq, x.b * x.a, Dtype::fp16));
  p.keep("attention_probs_fp16", kHalf * e);
  p.keep("value_matmul_copy", kHalf * th);
  p.run(permute_copy("context_contiguous", th));
  // BertSelfOutput: dense, dropout (fp16), + input_tensor (fp32: the sum is fp32), LayerNorm.
  l.attn_out.forward(p);
  dropout_forward(p, "attention_output_dropout", th, kHalf);
  p.run(make_elementwise("attention_residual_add", (kHalf + 2 * kFloat) * th, th));
  layer_norm_forward(p, "attention_layernorm", x.t, x.h);
  // BertIntermediate: dense on the fp32 LayerNorm output, GELU in fp16 (gelu: gelu_backward(grad,
  // self) reads its input; its output is the next dense's kept input).
  l.ffn_in.forward(p);
  p.run(make_elementwise("gelu", 2 * kHalf * x.t * x.f, 8 * x.t * x.f, "gelu"));
  p.keep("gelu_input", kHalf * x.t * x.f);
  // BertOutput.
  l.ffn_out.forward(p);
  dropout_forward(p, "output_dropout", th, kHalf);
  p.run(make_elementwise("output_residual_add", (kHalf + 2 * kFloat) * th, th));
  layer_norm_forward(p, "output_layernorm", x.t, x.h);
  return p;
}

}  // namespace

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

namespace {

Pass embedding_pass(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h;
  Pass p;
  // get_extended_attention_mask: mask[:, None, None, :], .to(self.dtype), (1.0 - m) * min.
  p.run(make_elementwise("extended_mask_cast", x.t * (8 + kFloat), 0));
  p.run(make_elementwise("extended_mask_rsub", 2 * kFloat * x.t, x.t));
  p.run(make_elementwise("extended_mask_mul", 2 * kFloat * x.t, x.t));
  // Lookups read a row and write it (fp32 tables); adds read two and write one. embedding's
  // backward reads its indices: the batch's input_ids and token_type_ids and a view of the
  // position_ids buffer, no new memory.
  p.run(make_elementwise("word_embeddings", 2 * kFloat * th, 0));
  p.run(make_elementwise("token_type_embeddings", 2 * kFloat * th, 0));
  p.run(make_elementwise("embeddings_add_token_type", 3 * kFloat * th, th));
  p.run(make_elementwise("position_embeddings", 2 * kFloat * th, 0));
  p.run(make_elementwise("embeddings_add_position", 3 * kFloat * th, th));
  layer_norm_forward(p, "embeddings_layernorm", x.t, x.h);
  dropout_forward(p, "embeddings_dropout", th, kFloat);
  return p;
}

}  // namespace

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

namespace {

Pass head_pass(const TransformerSpec& s, long micro_batch) {
  const Shape x = shape_of(s, micro_batch);
  const double th = x.t * x.h, tv = x.t * x.v;
  Pass p;
  // BertPredictionHeadTransform: dense on the last LayerNorm's fp32 output, GELU (fp16),
  // LayerNorm (autocast casts its fp16 input to fp32: the kept input is that cast).
  Linear{"head_transform_dense", x.t, x.h, x.h, true}.forward(p);
  p.run(make_elementwise("head_gelu", 2 * kHalf * th, 8 * th, "gelu"));
  p.keep("head_gelu_input", kHalf * th);
  p.run(cast("head_layernorm_input_cast", th, kHalf, kFloat));
  layer_norm_forward(p, "head_layernorm", x.t, x.h);
  // BertLMPredictionHead.decoder (tied to the word embeddings, with its own bias) on every token;
  // its fp16 weight is the cast of the whole fp32 table.
  Linear{"decoder", x.t, x.h, x.v, true}.forward(p);
  // CrossEntropyLoss (autocast fp32): the fp16 logits cast, log_softmax, nll_loss's gather and
  // mean over the labels that are not ignore_index. _log_softmax keeps its fp32 result
  // (_log_softmax_backward_data(grad, result)), which nll_loss keeps too (self: the same
  // tensor) with the labels (the batch's) and a 0-dim total_weight. Not kept: the fp16 logits,
  // which BertForMaskedLM returns but Trainer.compute_loss drops with the outputs before the
  // backward, and their fp32 cast (the cast's backward reads no tensor).
  p.run(cast("logits_cast", tv, kHalf, kFloat));
  p.run(make_elementwise("log_softmax", 2 * kFloat * tv, 5 * tv, "softmax"));
  p.keep("log_softmax_output_fp32", kFloat * tv);
  p.run(make_elementwise("nll_loss", x.t * (8 + kFloat), x.t));
  return p;
}

}  // namespace

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

std::vector<Operation> hf_bert_layer_forward(const TransformerSpec& s, long micro_batch) {
  return layer_pass(s, micro_batch).ops;
}
std::vector<Operation> hf_bert_embedding_forward(const TransformerSpec& s, long micro_batch) {
  return embedding_pass(s, micro_batch).ops;
}
std::vector<Operation> hf_bert_head_forward(const TransformerSpec& s, long micro_batch) {
  return head_pass(s, micro_batch).ops;
}
std::vector<StoredTensor> hf_bert_layer_saved(const TransformerSpec& s, long micro_batch) {
  return layer_pass(s, micro_batch).saved;
}
std::vector<StoredTensor> hf_bert_embedding_saved(const TransformerSpec& s, long micro_batch) {
  return embedding_pass(s, micro_batch).saved;
}
std::vector<StoredTensor> hf_bert_head_saved(const TransformerSpec& s, long micro_batch) {
  return head_pass(s, micro_batch).saved;
}

}  // namespace trainsim::model

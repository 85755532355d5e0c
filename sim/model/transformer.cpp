#include "model/transformer.hpp"

#include <utility>

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;  // bytes per element of activations and weights in the kernels
}

Operation make_gemm(std::string name, double m, double n, double k, double batch, Dtype dtype) {
  const double elem = dtype_bytes(dtype);
  Operation op;
  op.name = std::move(name);
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.dtype = dtype;
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = elem * batch * (m * k + k * n + m * n);
  return op;
}

Operation make_elementwise(std::string name, Bytes bytes, Flops flops) {
  Operation op;
  op.name = std::move(name);
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  op.flops = flops;
  return op;
}

double parameters_per_layer(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn_hidden);
  // QKV + output projection (weights and biases), two MLP matrices, two layer norms.
  return 4.0 * h * h + 4.0 * h + 2.0 * h * f + f + h + 4.0 * h;
}

double parameter_count(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  double p = static_cast<double>(s.layers) * parameters_per_layer(s);
  p += static_cast<double>(s.vocab + s.seq_len) * h;  // token + position embeddings
  p += 2.0 * h;                                        // embedding layer norm
  if (s.mlm_head) p += h * h + h + 2.0 * h + static_cast<double>(s.vocab);  // transform + bias
  return p;
}

std::vector<Operation> layer_forward_ops(const TransformerSpec& s, long micro_batch) {
  const double b = static_cast<double>(micro_batch);
  const double sq = static_cast<double>(s.seq_len);
  const double h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn_hidden);
  const double a = static_cast<double>(s.heads);
  const double t = b * sq;   // tokens in the micro-batch
  const double d = h / a;    // head dimension
  const double act = t * h * kBf16;
  const double scores = b * a * sq * sq * kBf16;
  std::vector<Operation> ops;
  ops.push_back(make_gemm("qkv", t, 3 * h, h, 1, Dtype::bf16));
  ops.push_back(make_gemm("attn_scores", sq, sq, d, b * a, Dtype::bf16));
  // softmax reads and writes the scores; dropout on the probabilities reads/writes them again.
  ops.push_back(make_elementwise("softmax", 2 * scores, 5 * scores / kBf16));
  ops.push_back(make_elementwise("attn_dropout", 2.5 * scores));
  ops.push_back(make_gemm("attn_context", sq, d, sq, b * a, Dtype::bf16));
  ops.push_back(make_gemm("attn_out", t, h, h, 1, Dtype::bf16));
  // bias + dropout + residual add, then layer norm.
  ops.push_back(make_elementwise("residual_dropout_1", 4 * act));
  ops.push_back(make_elementwise("layernorm_1", 2 * act, 8 * t * h));
  ops.push_back(make_gemm("ffn_in", t, f, h, 1, Dtype::bf16));
  ops.push_back(make_elementwise("gelu", 2 * t * f * kBf16, 8 * t * f));
  ops.push_back(make_gemm("ffn_out", t, h, f, 1, Dtype::bf16));
  ops.push_back(make_elementwise("residual_dropout_2", 4 * act));
  ops.push_back(make_elementwise("layernorm_2", 2 * act, 8 * t * h));
  return ops;
}

std::vector<Operation> backward_of(const std::vector<Operation>& forward) {
  std::vector<Operation> ops;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Operation& f = *it;
    if (f.kind == OpKind::gemm) {
      // dX = dY * W^T  (m x k from m x n and n x k) and dW = X^T * dY (k x n from k x m, m x n).
      Operation dgrad = make_gemm(f.name + "_dgrad", f.m, f.k, f.n, f.batch, Dtype::bf16);
      Operation wgrad = make_gemm(f.name + "_wgrad", f.k, f.n, f.m, f.batch, Dtype::bf16);
      ops.push_back(std::move(dgrad));
      ops.push_back(std::move(wgrad));
    } else {
      // Reads the saved input and the incoming gradient, writes the outgoing gradient.
      ops.push_back(make_elementwise(f.name + "_bwd", 1.5 * f.bytes, 2 * f.flops));
    }
  }
  return ops;
}

std::vector<Operation> layer_backward_ops(const TransformerSpec& s, long micro_batch) {
  return backward_of(layer_forward_ops(s, micro_batch));
}

std::vector<Operation> embedding_forward_ops(const TransformerSpec& s, long micro_batch) {
  const double t = static_cast<double>(micro_batch * s.seq_len);
  const double h = static_cast<double>(s.hidden);
  // Gather token and position rows, add, layer norm, dropout.
  return {make_elementwise("embedding", 8 * t * h * kBf16, 10 * t * h)};
}

std::vector<Operation> head_forward_ops(const TransformerSpec& s, long micro_batch) {
  const double t = static_cast<double>(micro_batch * s.seq_len);
  const double h = static_cast<double>(s.hidden);
  const double v = static_cast<double>(s.vocab);
  std::vector<Operation> ops;
  if (s.mlm_head) {
    ops.push_back(make_gemm("mlm_transform", t, h, h, 1, Dtype::bf16));
    ops.push_back(make_elementwise("mlm_gelu_layernorm", 4 * t * h * kBf16, 16 * t * h));
  }
  ops.push_back(make_gemm("vocab_projection", t, v, h, 1, Dtype::bf16));
  // Cross-entropy over the logits: softmax read + write in fp32.
  ops.push_back(make_elementwise("cross_entropy", 3 * t * v * 4.0, 5 * t * v));
  return ops;
}

double model_flops_per_sequence(const TransformerSpec& s) {
  const double sq = static_cast<double>(s.seq_len);
  const double h = static_cast<double>(s.hidden);
  const double l = static_cast<double>(s.layers);
  const double dense = parameter_count(s) - static_cast<double>(s.seq_len) * h;
  return 6.0 * dense * sq + 12.0 * l * h * sq * sq;
}

}  // namespace trainsim::model

#include "layer_reference.hpp"

#include <cmath>

#include "reference/pattern.hpp"
#include "reference/reference.hpp"

namespace trainsim::validate {

namespace {

using kernels::reference::round_to_bf16;

/// y[r][o] = bf16(sum_i x[r][i] * w[o][i]) for `rows` rows, `in` inputs, `out` outputs.
std::vector<float> linear(const std::vector<float>& x, const std::vector<float>& w, long rows,
                          long in, long out) {
  std::vector<float> y(static_cast<std::size_t>(rows * out));
  for (long r = 0; r < rows; ++r)
    for (long o = 0; o < out; ++o) {
      double sum = 0;
      for (long i = 0; i < in; ++i) sum += static_cast<double>(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = round_to_bf16(static_cast<float>(sum));
    }
  return y;
}

/// residual + dropout(x + bias), rounded (the bias_dropout_residual kernel).
std::vector<float> bias_dropout_residual(const std::vector<float>& x,
                                         const std::vector<float>& bias,
                                         const std::vector<float>& residual, long cols,
                                         std::uint64_t seed) {
  const float p = LayerConstants::dropout;
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v =
        kernels::dropout_keeps(seed, i, p) ? (x[i] + bias[i % cols]) / (1.0f - p) : 0.0f;
    y[i] = round_to_bf16(residual[i] + v);
  }
  return y;
}

std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, long rows, long cols) {
  std::vector<float> y, mean, rstd;
  kernels::reference::layer_norm(x, gamma, beta, rows, cols, LayerConstants::eps, y, mean, rstd);
  return kernels::reference::round_to_bf16(std::move(y));
}

}  // namespace

std::vector<float> layer_forward_reference(const model::TransformerSpec& spec, long micro_batch,
                                           const LayerInputs& in) {
  const long b = micro_batch, s = spec.seq_len, h = spec.hidden, f = spec.ffn_hidden;
  const long t = b * s, a = spec.heads, d = h / a, pairs = b * a;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const float p = LayerConstants::dropout;

  const auto qkv = linear(in.x, in.w_qkv, t, h, 3 * h);
  // Pair j = batch * heads + head; Q/K/V of position i at qkv[(i * b + batch) * 3h + head * 3d +
  // {0, d, 2d}].
  auto at = [&](long j, long pos, long part, long e) {
    const long batch = j / a, head = j % a;
    return qkv[(pos * b + batch) * 3 * h + head * 3 * d + part * d + e];
  };
  std::vector<float> scores(static_cast<std::size_t>(pairs * s * s));
  for (long j = 0; j < pairs; ++j)
    for (long q = 0; q < s; ++q)
      for (long key = 0; key < s; ++key) {
        double sum = 0;
        for (long e = 0; e < d; ++e) sum += static_cast<double>(at(j, q, 0, e)) * at(j, key, 1, e);
        scores[(j * s + q) * s + key] = round_to_bf16(static_cast<float>(sum));
      }
  auto probs =
      kernels::reference::round_to_bf16(kernels::reference::softmax(scores, pairs * s, s, scale));
  probs = kernels::reference::round_to_bf16(
      kernels::reference::dropout(probs, p, LayerConstants::attn_dropout_seed));
  std::vector<float> context(static_cast<std::size_t>(t * h));
  for (long j = 0; j < pairs; ++j)
    for (long q = 0; q < s; ++q)
      for (long e = 0; e < d; ++e) {
        double sum = 0;
        for (long key = 0; key < s; ++key)
          sum += static_cast<double>(probs[(j * s + q) * s + key]) * at(j, key, 2, e);
        const long batch = j / a, head = j % a;
        context[(q * b + batch) * h + head * d + e] = round_to_bf16(static_cast<float>(sum));
      }
  const auto attn = linear(context, in.w_o, t, h, h);
  const auto residual1 =
      bias_dropout_residual(attn, in.bias_o, in.x, h, LayerConstants::residual1_seed);
  const auto ln1 = layer_norm(residual1, in.gamma1, in.beta1, t, h);
  auto act = linear(ln1, in.w_1, t, h, f);
  for (auto& v : act) v = round_to_bf16(kernels::reference::gelu(v));
  const auto proj = linear(act, in.w_2, t, f, h);
  const auto residual2 =
      bias_dropout_residual(proj, in.bias_2, ln1, h, LayerConstants::residual2_seed);
  return layer_norm(residual2, in.gamma2, in.beta2, t, h);
}

}  // namespace trainsim::validate

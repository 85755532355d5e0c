#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "pattern.hpp"

namespace trainsim::kernels::reference {

std::vector<float> gemm_tn(const std::vector<float>& a, const std::vector<float>& b, long m, long n,
                           long k, long batch) {
  std::vector<float> c(static_cast<std::size_t>(m * n * batch));
  for (long bt = 0; bt < batch; ++bt)
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i) {
        double sum = 0;
        for (long l = 0; l < k; ++l)
          sum += static_cast<double>(a[bt * m * k + i * k + l]) * b[bt * n * k + j * k + l];
        c[bt * m * n + j * m + i] = static_cast<float>(sum);
      }
  return c;
}

double gemm_tn_pattern_element(std::uint64_t seed_a, std::uint64_t seed_b, long m, long n, long k,
                               long batch_index, long i, long j) {
  double sum = 0;
  const auto a0 = static_cast<std::uint64_t>(batch_index * m * k + i * k);
  const auto b0 = static_cast<std::uint64_t>(batch_index * n * k + j * k);
  for (long l = 0; l < k; ++l)
    sum += static_cast<double>(gemm_pattern(seed_a, a0 + l)) * gemm_pattern(seed_b, b0 + l);
  return sum;
}

void layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                const std::vector<float>& beta, long rows, long cols, float eps,
                std::vector<float>& y, std::vector<float>& mean, std::vector<float>& rstd) {
  y.assign(x.size(), 0.0f);
  mean.assign(static_cast<std::size_t>(rows), 0.0f);
  rstd.assign(static_cast<std::size_t>(rows), 0.0f);
  for (long r = 0; r < rows; ++r) {
    const float* row = &x[r * cols];
    const double n = static_cast<double>(cols);
    double sum = 0, sq = 0;
    for (long c = 0; c < cols; ++c) sum += row[c];
    const double mu = sum / n;
    for (long c = 0; c < cols; ++c) sq += (row[c] - mu) * (row[c] - mu);
    const double rs = 1.0 / std::sqrt(sq / n + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    for (long c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>((row[c] - mu) * rs * gamma[c] + beta[c]);
  }
}

float gelu(float x) {
  const float k = 0.7978845608f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

float gelu_grad(float x) {
  const float k = 0.7978845608f;
  const float t = std::tanh(k * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}

std::vector<float> softmax(const std::vector<float>& x, long rows, long cols, float scale) {
  std::vector<float> y(x.size());
  for (long r = 0; r < rows; ++r) {
    const float* row = &x[r * cols];
    float mx = -INFINITY;
    for (long c = 0; c < cols; ++c) mx = std::max(mx, scale * row[c]);
    double sum = 0;
    for (long c = 0; c < cols; ++c) sum += std::exp(scale * row[c] - mx);
    for (long c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(std::exp(scale * row[c] - mx) / sum);
  }
  return y;
}

std::vector<float> softmax_backward(const std::vector<float>& y, const std::vector<float>& dy,
                                    long rows, long cols, float scale) {
  std::vector<float> dx(y.size());
  for (long r = 0; r < rows; ++r) {
    double dot = 0;
    for (long c = 0; c < cols; ++c) dot += static_cast<double>(dy[r * cols + c]) * y[r * cols + c];
    for (long c = 0; c < cols; ++c) {
      const long i = r * cols + c;
      dx[i] = static_cast<float>(scale * y[i] * (dy[i] - dot));
    }
  }
  return dx;
}

std::vector<float> dropout(const std::vector<float>& x, float p, std::uint64_t seed) {
  std::vector<float> y(x.size());
  const float keep_scale = 1.0f / (1.0f - p);
  for (std::size_t i = 0; i < x.size(); ++i)
    y[i] = dropout_keeps(seed, i, p) ? x[i] * keep_scale : 0.0f;
  return y;
}

void adamw_step(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
                std::vector<float>& v, const AdamParams& p) {
  const double c1 = 1.0 - std::pow(p.beta1, p.step);
  const double c2 = 1.0 - std::pow(p.beta2, p.step);
  for (std::size_t i = 0; i < w.size(); ++i) {
    m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * g[i];
    v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * g[i] * g[i];
    const double update = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.eps) + p.weight_decay * w[i];
    w[i] = static_cast<float>(w[i] - p.lr * update);
  }
}

std::vector<float> embedding(const std::vector<float>& table, const std::vector<float>& position,
                             const std::vector<int>& tokens, long seq, long hidden) {
  std::vector<float> out(tokens.size() * static_cast<std::size_t>(hidden));
  for (std::size_t t = 0; t < tokens.size(); ++t)
    for (long c = 0; c < hidden; ++c)
      out[t * hidden + c] = table[static_cast<long>(tokens[t]) * hidden + c] +
                            position[(static_cast<long>(t) % seq) * hidden + c];
  return out;
}

float round_to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // inf and nan stay as they are
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

std::vector<float> round_to_bf16(std::vector<float> x) {
  for (auto& v : x) v = round_to_bf16(v);
  return x;
}

double worst_mismatch(const std::vector<float>& a, const std::vector<float>& b, double rtol,
                      double atol) {
  if (a.size() != b.size()) throw std::invalid_argument("worst_mismatch: sizes differ");
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!std::isfinite(a[i])) return INFINITY;
    worst = std::max(worst, d / (atol + rtol * std::fabs(static_cast<double>(b[i]))));
  }
  return worst;
}

}  // namespace trainsim::kernels::reference

#pragma once
// CPU references of the calibration kernels (kernels/*.cu), in fp32, one plain loop each. A GPU
// kernel is timed only after its output on a small input matches these (verify.hpp has the
// tolerance rule). Tensors are row-major unless a comment says otherwise.
#include <cstdint>
#include <vector>

namespace trainsim::kernels::reference {

/// The "TN" GEMM the sweep times, per batch entry: C(i,j) = sum_l A(i,l) * B(l,j), with A stored
/// m x k row-major (A(i,l) at i*k + l), B stored n x k row-major (B(l,j) at j*k + l) and C stored
/// column-major (C(i,j) at j*m + i), i.e. cuBLAS op(A)=T, op(B)=N; batch entries are contiguous.
[[nodiscard]] std::vector<float> gemm_tn(const std::vector<float>& a, const std::vector<float>& b,
                                         long m, long n, long k, long batch);

/// One element of gemm_tn when A and B are pattern.hpp's gemm_pattern with seeds `seed_a`, `seed_b`
/// (checks a large GEMM's output at a few points without copying its operands back).
[[nodiscard]] double gemm_tn_pattern_element(std::uint64_t seed_a, std::uint64_t seed_b, long m,
                                             long n, long k, long batch_index, long i, long j);

/// Layer norm over the last dimension: y = (x - mean) / sqrt(var + eps) * gamma + beta, with the
/// biased variance; `mean` and `rstd` (1/sqrt(var + eps)) per row are outputs too.
void layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                const std::vector<float>& beta, long rows, long cols, float eps,
                std::vector<float>& y, std::vector<float>& mean, std::vector<float>& rstd);

/// GELU, tanh approximation (what Megatron and BERT use): 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715
/// x^3))).
[[nodiscard]] float gelu(float x);
/// d gelu(x) / dx.
[[nodiscard]] float gelu_grad(float x);

/// Row-wise softmax of scale * x over `cols` columns.
[[nodiscard]] std::vector<float> softmax(const std::vector<float>& x, long rows, long cols,
                                         float scale);
/// Softmax backward: dx = scale * y * (dy - sum_j(dy_j * y_j)) per row.
[[nodiscard]] std::vector<float> softmax_backward(const std::vector<float>& y,
                                                  const std::vector<float>& dy, long rows,
                                                  long cols, float scale);

/// Inverted dropout: y = x / (1 - p) where pattern.hpp's dropout_keeps(seed, i, p), else 0.
[[nodiscard]] std::vector<float> dropout(const std::vector<float>& x, float p, std::uint64_t seed);

/// The AdamW hyper-parameters of one step.
struct AdamParams {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
  int step = 1;  ///< 1-based, for the bias corrections
};
/// One AdamW step in place on fp32 master weights and moments (decoupled weight decay).
void adamw_step(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
                std::vector<float>& v, const AdamParams& p);

/// Embedding lookup: out(t, :) = table(token[t], :) + position(t % seq, :) for `hidden` columns.
[[nodiscard]] std::vector<float> embedding(const std::vector<float>& table,
                                           const std::vector<float>& position,
                                           const std::vector<int>& tokens, long seq, long hidden);

/// Rounds an fp32 value to the nearest bf16 (ties to even), as the GPU stores it; the references
/// compute from the same rounded inputs the GPU reads.
[[nodiscard]] float round_to_bf16(float x);
/// round_to_bf16 of every element.
[[nodiscard]] std::vector<float> round_to_bf16(std::vector<float> x);

/// Largest |a - b| / (atol + rtol * |b|) over two equally long vectors; <= 1 means they agree.
[[nodiscard]] double worst_mismatch(const std::vector<float>& a, const std::vector<float>& b,
                                    double rtol, double atol);

}  // namespace trainsim::kernels::reference

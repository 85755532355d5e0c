// The CPU references the CUDA kernels are checked against (kernels/reference/): each is checked
// here against hand arithmetic or a finite difference, so a wrong reference cannot bless a wrong
// kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/bf16.hpp"
#include "reference/pattern.hpp"
#include "reference/reference.hpp"

using namespace trainsim::kernels;
using namespace trainsim::kernels::reference;

TEST(KernelReference, GemmTnMatchesHandArithmetic) {
  // A (2x3) row-major, B stored n x k (2x3): C(i,j) = sum_l A(i,l) B(l,j), C column-major.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {1, 0, 1, 2, 1, 0};  // B(:,0) = (1,0,1), B(:,1) = (2,1,0)
  const auto c = gemm_tn(a, b, 2, 2, 3, 1);
  EXPECT_FLOAT_EQ(c[0], 1 + 3);          // C(0,0)
  EXPECT_FLOAT_EQ(c[1], 4 + 6);          // C(1,0)
  EXPECT_FLOAT_EQ(c[2], 2 * 1 + 2 * 1);  // C(0,1) = 1*2 + 2*1
  EXPECT_FLOAT_EQ(c[3], 4 * 2 + 5);      // C(1,1)
}

TEST(KernelReference, PatternElementEqualsFullGemmOnPatternInputs) {
  const long m = 5, n = 4, k = 7, batch = 2;
  std::vector<float> a(m * k * batch), b(n * k * batch);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = gemm_pattern(11, i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = gemm_pattern(12, i);
  const auto c = gemm_tn(a, b, m, n, k, batch);
  for (long bt = 0; bt < batch; ++bt)
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i)
        EXPECT_DOUBLE_EQ(gemm_tn_pattern_element(11, 12, m, n, k, bt, i, j),
                         c[bt * m * n + j * m + i]);
}

TEST(KernelReference, GemmPatternIsExactInBf16AndSixteenthSteps) {
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float v = gemm_pattern(3, i);
    EXPECT_EQ(round_to_bf16(v), v);
    EXPECT_EQ(std::fmod(v * 16.0f, 1.0f), 0.0f);
    EXPECT_LE(std::fabs(v), 0.5f);
  }
}

TEST(KernelReference, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1).
  EXPECT_EQ(round_to_bf16(1.0f + 1.0f / 256), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 (even): rounds up.
  EXPECT_EQ(round_to_bf16(1.0f + 3.0f / 256), 1.0f + 1.0f / 64);
  EXPECT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3F80);
}

TEST(KernelReference, LayerNormOfOneRow) {
  // x = (1, 2, 3, 4): mean 2.5, biased variance 1.25, rstd = 1/sqrt(1.25 + eps).
  std::vector<float> y, mean, rstd;
  layer_norm({1, 2, 3, 4}, {1, 1, 2, 1}, {0, 0, 0, 1}, 1, 4, 0.0f, y, mean, rstd);
  const double rs = 1.0 / std::sqrt(1.25);
  EXPECT_FLOAT_EQ(mean[0], 2.5f);
  EXPECT_FLOAT_EQ(rstd[0], static_cast<float>(rs));
  EXPECT_FLOAT_EQ(y[0], static_cast<float>(-1.5 * rs));
  EXPECT_FLOAT_EQ(y[2], static_cast<float>(2 * 0.5 * rs));
  EXPECT_FLOAT_EQ(y[3], static_cast<float>(1.5 * rs + 1));
}

TEST(KernelReference, GeluValuesAndDerivative) {
  EXPECT_FLOAT_EQ(gelu(0), 0);
  // 0.5 * 1 * (1 + tanh(0.7978845608 * 1.044715)) = 0.841192
  EXPECT_NEAR(gelu(1), 0.841192, 1e-6);
  for (float x : {-3.0f, -0.7f, 0.0f, 0.4f, 2.5f}) {
    const double h = 1e-3;
    const double numeric =
        (gelu(static_cast<float>(x + h)) - gelu(static_cast<float>(x - h))) / (2 * h);
    EXPECT_NEAR(gelu_grad(x), numeric, 1e-3) << "x = " << x;
  }
}

TEST(KernelReference, SoftmaxRowsAndBackwardFiniteDifference) {
  const std::vector<float> x = {0, std::log(3.0f), 1, 2, 3, 4};
  const auto y = softmax(x, 2, 3, 1.0f);
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0, 1e-6);
  EXPECT_NEAR(y[3] + y[4] + y[5], 1.0, 1e-6);
  // d/dx_c of L = sum_j dy_j softmax(scale x)_j, by central differences, scale 0.5.
  const std::vector<float> dy = {0.3f, -1.0f, 0.5f};
  const std::vector<float> row = {0.2f, -0.4f, 1.1f};
  const auto yr = softmax(row, 1, 3, 0.5f);
  const auto dx = softmax_backward(yr, dy, 1, 3, 0.5f);
  for (int c = 0; c < 3; ++c) {
    auto plus = row, minus = row;
    plus[c] += 1e-3f;
    minus[c] -= 1e-3f;
    const auto yp = softmax(plus, 1, 3, 0.5f), ym = softmax(minus, 1, 3, 0.5f);
    double lp = 0, lm = 0;
    for (int j = 0; j < 3; ++j) lp += dy[j] * yp[j], lm += dy[j] * ym[j];
    EXPECT_NEAR(dx[c], (lp - lm) / 2e-3, 1e-4);
  }
}

TEST(KernelReference, SoftmaxFirstRowByHand) {
  // Row 0 = (0, ln 3, 1): exp = (1, 3, e); sum = 4 + e.
  const auto y = softmax({0, std::log(3.0f), 1}, 1, 3, 1.0f);
  const double sum = 4 + std::exp(1.0);
  EXPECT_NEAR(y[0], 1 / sum, 1e-7);
  EXPECT_NEAR(y[1], 3 / sum, 1e-7);
}

TEST(KernelReference, DropoutKeepsAboutOneMinusPAndScales) {
  const std::vector<float> x(100000, 1.0f);
  const auto y = dropout(x, 0.1f, 42);
  std::size_t kept = 0;
  for (float v : y) {
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1.0f / 0.9f);
    }
  }
  // 90,000 expected; binomial sd = sqrt(1e5 * 0.1 * 0.9) = 95, so +-600 is > 6 sd.
  EXPECT_NEAR(static_cast<double>(kept), 90000, 600);
  EXPECT_EQ(dropout(x, 0.1f, 42), y);  // same seed, same mask
}

TEST(KernelReference, AdamwFirstStepMovesBySignOfGradient) {
  // Step 1 from zero moments: m_hat = g, v_hat = g^2, so the update is g/(|g| + eps) ~ sign(g),
  // plus decoupled decay: w - lr * (sign(g) + wd * w).
  std::vector<float> w = {1.0f, -2.0f}, m = {0, 0}, v = {0, 0};
  AdamParams p;
  p.lr = 0.1f;
  p.weight_decay = 0.5f;
  adamw_step(w, {0.3f, -4.0f}, m, v, p);
  EXPECT_NEAR(w[0], 1.0 - 0.1 * (1 + 0.5 * 1.0), 1e-6);
  EXPECT_NEAR(w[1], -2.0 - 0.1 * (-1 + 0.5 * -2.0), 1e-6);
  EXPECT_NEAR(m[0], 0.1 * 0.3, 1e-7);     // (1 - beta1) g
  EXPECT_NEAR(v[1], 0.001 * 16.0, 1e-6);  // (1 - beta2) g^2; 1 - 0.999f is 0.00099999 in fp32
}

TEST(KernelReference, EmbeddingAddsTokenAndPositionRows) {
  // vocab 3, hidden 2, seq 2; tokens (2, 0, 1): positions 0, 1, 0.
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};
  const std::vector<float> position = {100, 200, 300, 400};
  const auto out = embedding(table, position, {2, 0, 1}, 2, 2);
  EXPECT_EQ(out, (std::vector<float>{120, 221, 300, 401, 110, 211}));
}

TEST(KernelReference, WorstMismatchIsRelativeToTolerance) {
  // |1.01 - 1| / (0 + 0.01 * 1) = 1 (passes at the edge); |2.1 - 2| / 0.02 = 5.
  EXPECT_NEAR(worst_mismatch({1.01f}, {1.0f}, 0.01, 0), 1.0, 1e-4);
  EXPECT_NEAR(worst_mismatch({1.0f, 2.1f}, {1.0f, 2.0f}, 0.01, 0), 5.0, 1e-4);
  EXPECT_TRUE(std::isinf(worst_mismatch({NAN}, {1.0f}, 0.01, 0)));
}

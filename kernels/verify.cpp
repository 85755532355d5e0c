#include "verify.hpp"

#include <algorithm>
#include <cmath>

#include "adam.hpp"
#include "device_buffer.hpp"
#include "dropout.hpp"
#include "embedding.hpp"
#include "fill.hpp"
#include "gelu.hpp"
#include "layer_norm.hpp"
#include "reference/pattern.hpp"
#include "reference/reference.hpp"
#include "softmax.hpp"
#include "stream_copy.hpp"

namespace trainsim::kernels {

namespace {

constexpr double kBf16Rtol = 1.0 / 128, kBf16Atol = 1e-3;
constexpr std::uint64_t kSeed = 20261122;

double rtol_of(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return 1.0 / 128;
    case GemmPrecision::fp16:
      return 1.0 / 1024;
    default:
      return 1e-5;
  }
}

/// Reads `count` elements of `type` at `data` back as fp32.
std::vector<float> download_as_float(const void* data, ElementType type, std::size_t count) {
  std::vector<float> out(count);
  if (type == ElementType::fp32) {
    TRAINSIM_CUDA(cudaMemcpy(out.data(), data, count * 4, cudaMemcpyDeviceToHost));
    return out;
  }
  std::vector<std::uint16_t> bits(count);
  TRAINSIM_CUDA(cudaMemcpy(bits.data(), data, count * 2, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; ++i) {
    if (type == ElementType::bf16) {
      out[i] = from_bf16(Bf16{bits[i]});
    } else {  // IEEE half -> float
      const std::uint32_t h = bits[i], sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
      float v = exp == 0 ? std::ldexp(static_cast<float>(man), -24)
                : exp == 31
                    ? INFINITY
                    : std::ldexp(static_cast<float>(man | 1024), static_cast<int>(exp) - 25);
      out[i] = sign ? -v : v;
    }
  }
  return out;
}

std::vector<float> host_pattern(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = gemm_pattern(seed, i);
  return v;
}

std::vector<float> host_uniform(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = reference::round_to_bf16(lo + (hi - lo) * uniform01(seed, i));
  return v;
}

Verification compare(const std::string& name, const std::vector<float>& got,
                     const std::vector<float>& ref, double rtol = kBf16Rtol,
                     double atol = kBf16Atol) {
  return {name, reference::worst_mismatch(got, ref, rtol, atol)};
}

}  // namespace

Verification verify_gemm(const CublasLt& lt, GemmPrecision precision, cudaStream_t stream) {
  GemmProblem p;
  p.m = 72, p.n = 40, p.k = 56, p.batch = 3;
  GemmPlan plan(lt, p, precision);
  const ElementType type = gemm_storage(precision);
  const std::size_t na = a_elements(p), nb = b_elements(p), nc = c_elements(p);
  DeviceBuffer<std::uint8_t> a(na * 4), b(nb * 4), c(nc * 4);
  fill_gemm_pattern(a.get(), type, na, kSeed, stream);
  fill_gemm_pattern(b.get(), type, nb, kSeed + 1, stream);
  plan.run(a.get(), b.get(), c.get(), stream);
  TRAINSIM_CUDA(cudaStreamSynchronize(stream));
  const auto ref = reference::gemm_tn(host_pattern(na, kSeed), host_pattern(nb, kSeed + 1), p.m,
                                      p.n, p.k, p.batch);
  return compare(std::string("gemm ") + precision_name(precision),
                 download_as_float(c.get(), type, nc), ref, rtol_of(precision), 1e-6);
}

Verification verify_gemm_points(const GemmPlan& plan, const void* c, std::uint64_t seed_a,
                                std::uint64_t seed_b) {
  const GemmProblem& p = plan.problem();
  const ElementType type = gemm_storage(plan.precision());
  std::vector<float> got, ref;
  for (std::uint64_t s = 0; s < 8; ++s) {
    const long bt =
        static_cast<long>(mix64(seed_a ^ seed_b, 3 * s) % static_cast<std::uint64_t>(p.batch));
    const long i =
        static_cast<long>(mix64(seed_a ^ seed_b, 3 * s + 1) % static_cast<std::uint64_t>(p.m));
    const long j =
        static_cast<long>(mix64(seed_a ^ seed_b, 3 * s + 2) % static_cast<std::uint64_t>(p.n));
    const std::size_t offset =
        static_cast<std::size_t>(bt * p.stride_c + static_cast<long long>(j) * p.ldc + i);
    const auto* base = static_cast<const std::uint8_t*>(c) + offset * element_bytes(type);
    got.push_back(download_as_float(base, type, 1)[0]);
    ref.push_back(static_cast<float>(
        reference::gemm_tn_pattern_element(seed_a, seed_b, p.m, p.n, p.k, bt, i, j)));
  }
  return compare(std::string("gemm ") + precision_name(plan.precision()) + " at timed shape", got,
                 ref, rtol_of(plan.precision()), 1e-6);
}

std::vector<Verification> verify_memory_bound_kernels(cudaStream_t stream) {
  std::vector<Verification> out;
  const long rows = 37, cols = 300, n = rows * cols;
  const auto x = host_uniform(static_cast<std::size_t>(n), kSeed, -2, 2);
  const auto dy = host_uniform(static_cast<std::size_t>(n), kSeed + 7, -1, 1);
  DeviceBuffer<Bf16> dx_in(to_bf16(x)), d_dy(to_bf16(dy)), y(static_cast<std::size_t>(n)),
      dx(static_cast<std::size_t>(n));

  {  // layer norm, forward and the input gradient
    const auto gamma = host_uniform(cols, kSeed + 1, 0.5f, 1.5f);
    const auto beta = host_uniform(cols, kSeed + 2, -0.5f, 0.5f);
    DeviceBuffer<float> g(gamma), b(beta), mean(rows), rstd(rows), dg(cols), db(cols);
    TRAINSIM_CUDA(cudaMemsetAsync(dg.get(), 0, dg.bytes(), stream));
    TRAINSIM_CUDA(cudaMemsetAsync(db.get(), 0, db.bytes(), stream));
    layer_norm_forward(dx_in.get(), g.get(), b.get(), y.get(), mean.get(), rstd.get(), rows, cols,
                       1e-5f, stream);
    layer_norm_backward(d_dy.get(), dx_in.get(), g.get(), mean.get(), rstd.get(), dx.get(),
                        dg.get(), db.get(), rows, cols, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> ref, ref_mean, ref_rstd;
    reference::layer_norm(x, gamma, beta, rows, cols, 1e-5f, ref, ref_mean, ref_rstd);
    out.push_back(compare("layer_norm forward", from_bf16(y.download()), ref));
    // dx reference: rstd * (g - mean(g) - xhat mean(g xhat)), g = dy * gamma.
    std::vector<float> ref_dx(static_cast<std::size_t>(n));
    for (long r = 0; r < rows; ++r) {
      double sg = 0, sgx = 0;
      for (long c = 0; c < cols; ++c) {
        const double xhat = (x[r * cols + c] - ref_mean[r]) * ref_rstd[r];
        sg += dy[r * cols + c] * gamma[c];
        sgx += dy[r * cols + c] * gamma[c] * xhat;
      }
      for (long c = 0; c < cols; ++c) {
        const double xhat = (x[r * cols + c] - ref_mean[r]) * ref_rstd[r];
        ref_dx[r * cols + c] = static_cast<float>(
            ref_rstd[r] * (dy[r * cols + c] * gamma[c] - sg / cols - xhat * sgx / cols));
      }
    }
    out.push_back(
        compare("layer_norm backward", from_bf16(dx.download()), ref_dx, kBf16Rtol, 1e-2));
  }
  {  // GELU
    gelu_forward(dx_in.get(), y.get(), n, stream);
    gelu_backward(dx_in.get(), d_dy.get(), dx.get(), n, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> ref(x.size()), ref_dx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      ref[i] = reference::gelu(x[i]);
      ref_dx[i] = dy[i] * reference::gelu_grad(x[i]);
    }
    out.push_back(compare("gelu forward", from_bf16(y.download()), ref));
    out.push_back(compare("gelu backward", from_bf16(dx.download()), ref_dx));
  }
  {  // softmax with the attention scale 1/sqrt(64)
    const float scale = 0.125f;
    softmax_forward(dx_in.get(), y.get(), rows, cols, scale, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    const auto probs = from_bf16(y.download());
    softmax_backward(y.get(), d_dy.get(), dx.get(), rows, cols, scale, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    out.push_back(compare("softmax forward", probs, reference::softmax(x, rows, cols, scale),
                          kBf16Rtol, 1e-5));
    out.push_back(compare("softmax backward", from_bf16(dx.download()),
                          reference::softmax_backward(probs, dy, rows, cols, scale), kBf16Rtol,
                          1e-5));
  }
  {  // dropout and bias + dropout + residual
    const float p = 0.1f;
    DeviceBuffer<std::uint8_t> mask(static_cast<std::size_t>(n));
    dropout_forward(dx_in.get(), y.get(), mask.get(), n, p, kSeed + 3, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    out.push_back(
        compare("dropout forward", from_bf16(y.download()), reference::dropout(x, p, kSeed + 3)));
    dropout_backward(d_dy.get(), mask.get(), dx.get(), n, p, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    out.push_back(compare("dropout backward", from_bf16(dx.download()),
                          reference::dropout(dy, p, kSeed + 3)));
    const auto bias = host_uniform(cols, kSeed + 4, -1, 1);
    DeviceBuffer<Bf16> d_bias(to_bf16(bias));
    bias_dropout_residual(dx_in.get(), d_bias.get(), d_dy.get(), y.get(), mask.get(), n, cols, p,
                          kSeed + 5, stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> biased(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      biased[i] = reference::round_to_bf16(x[i]) + bias[i % cols];
    auto ref = reference::dropout(biased, p, kSeed + 5);
    for (std::size_t i = 0; i < x.size(); ++i) ref[i] += dy[i];
    out.push_back(compare("bias_dropout_residual", from_bf16(y.download()), ref, kBf16Rtol, 1e-2));
  }
  {  // AdamW, step 3 so the bias corrections matter
    const std::size_t np = 1000;
    auto w = host_uniform(np, kSeed + 10, -1, 1), g = host_uniform(np, kSeed + 11, -1, 1),
         m = host_uniform(np, kSeed + 12, -0.1f, 0.1f), v = host_uniform(np, kSeed + 13, 0, 0.01f);
    DeviceBuffer<float> dw(w), dg(g), dm(m), dv(v);
    DeviceBuffer<Bf16> working(np);
    reference::AdamParams params;
    params.step = 3;
    adamw_step(dw.get(), dg.get(), dm.get(), dv.get(), working.get(), static_cast<long>(np), params,
               stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    reference::adamw_step(w, g, m, v, params);
    out.push_back(compare("adamw weights", dw.download(), w, 1e-5, 1e-6));
    out.push_back(compare("adamw moments", dv.download(), v, 1e-5, 1e-9));
    out.push_back(compare("adamw bf16 copy", from_bf16(working.download()), w));
  }
  {  // embedding lookup
    const long vocab = 50, seq = 8, hidden = 96, tokens = 24;
    const auto table = host_uniform(static_cast<std::size_t>(vocab * hidden), kSeed + 20, -1, 1);
    const auto position = host_uniform(static_cast<std::size_t>(seq * hidden), kSeed + 21, -1, 1);
    std::vector<int> ids(static_cast<std::size_t>(tokens));
    for (std::size_t t = 0; t < ids.size(); ++t) ids[t] = static_cast<int>(mix64(kSeed, t) % vocab);
    DeviceBuffer<Bf16> d_table(to_bf16(table)), d_pos(to_bf16(position)),
        d_out(static_cast<std::size_t>(tokens * hidden));
    DeviceBuffer<int> d_ids(ids);
    embedding_forward(d_table.get(), d_pos.get(), d_ids.get(), d_out.get(), tokens, seq, hidden,
                      stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    out.push_back(compare("embedding", from_bf16(d_out.download()),
                          reference::embedding(table, position, ids, seq, hidden)));
  }
  {  // streaming copy: exact
    const auto src = host_uniform(4096, kSeed + 30, -1, 1);
    DeviceBuffer<float> s(src), d(src.size());
    stream_copy(s.get(), d.get(), s.bytes(), stream);
    TRAINSIM_CUDA(cudaStreamSynchronize(stream));
    out.push_back(compare("stream_copy", d.download(), src, 0, 1e-30));
  }
  return out;
}

}  // namespace trainsim::kernels

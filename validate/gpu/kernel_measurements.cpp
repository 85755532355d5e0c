#include "kernel_measurements.hpp"

#include <cstdio>
#include <ostream>

#include "adam.hpp"
#include "calibration_output.hpp"
#include "cuda_stream.hpp"
#include "device_buffer.hpp"
#include "dropout.hpp"
#include "embedding.hpp"
#include "fill.hpp"
#include "gelu.hpp"
#include "gemm_cublaslt.hpp"
#include "gemm_sweep.hpp"
#include "layer_norm.hpp"
#include "reference/pattern.hpp"
#include "softmax.hpp"
#include "stream_copy.hpp"
#include "timing.hpp"
#include "verify.hpp"

namespace trainsim::validate {

namespace {

using kernels::Bf16;
using kernels::DeviceBuffer;

constexpr std::uint64_t kSeedA = 1, kSeedB = 2;

kernels::GemmPrecision precision_of(model::Dtype d) {
  switch (d) {
    case model::Dtype::bf16:
      return kernels::GemmPrecision::bf16;
    case model::Dtype::fp16:
      return kernels::GemmPrecision::fp16;
    case model::Dtype::tf32:
      return kernels::GemmPrecision::tf32;
    default:
      return kernels::GemmPrecision::fp32;
  }
}

void require(const kernels::Verification& v) {
  if (!v.ok())
    throw VerificationError(v.kernel + " does not match its CPU reference (worst mismatch " +
                            std::to_string(v.worst) + " x tolerance); nothing was timed");
}

std::string describe(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " batch " +
         std::to_string(s.batch);
}

/// Verifies the GEMM at the timed shape, then times it.
model::GemmSample time_gemm(const kernels::CublasLt& lt, model::Dtype dtype, const GemmShape& shape,
                            cudaStream_t stream) {
  kernels::GemmProblem p;
  p.m = shape.m, p.n = shape.n, p.k = shape.k, p.batch = shape.batch;
  const auto precision = precision_of(dtype);
  kernels::GemmPlan plan(lt, p, precision);
  const auto type = kernels::gemm_storage(precision);
  const std::size_t elem = kernels::element_bytes(type);
  DeviceBuffer<std::uint8_t> a(kernels::a_elements(p) * elem), b(kernels::b_elements(p) * elem),
      c(kernels::c_elements(p) * elem);
  kernels::fill_gemm_pattern(a.get(), type, kernels::a_elements(p), kSeedA, stream);
  kernels::fill_gemm_pattern(b.get(), type, kernels::b_elements(p), kSeedB, stream);
  plan.run(a.get(), b.get(), c.get(), stream);
  TRAINSIM_CUDA(cudaStreamSynchronize(stream));
  require(kernels::verify_gemm_points(plan, c.get(), kSeedA, kSeedB));
  const double t =
      kernels::time_per_call([&] { plan.run(a.get(), b.get(), c.get(), stream); }, stream);
  return gemm_sample(dtype, shape, t);
}

model::ElementwiseSample time_elementwise(const char* name, Bytes bytes,
                                          const std::function<void()>& launch, cudaStream_t stream,
                                          std::ostream& log) {
  const double t = kernels::time_per_call(launch, stream);
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %10.1f MB %10.2f us %8.1f GB/s\n", name, bytes / 1e6,
                t * 1e6, bytes / t / 1e9);
  log << line;
  return {name, bytes, t};
}

/// The memory-bound kernels at a size well past the L2 cache (64 Mi elements of bf16 = 128 MiB).
/// Bytes are each kernel's own device-memory traffic (reads + writes).
std::vector<model::ElementwiseSample> time_memory_bound(cudaStream_t stream, std::ostream& log) {
  const long n = 64L << 20, cols = 4096, rows = n / cols;
  DeviceBuffer<Bf16> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  kernels::fill_uniform(x.get(), kernels::ElementType::bf16, x.size(), 3, -2, 2, stream);
  DeviceBuffer<float> gamma(cols), beta(cols), mean(rows), rstd(rows);
  kernels::fill_uniform(gamma.get(), kernels::ElementType::fp32, cols, 4, 0.5f, 1.5f, stream);
  kernels::fill_uniform(beta.get(), kernels::ElementType::fp32, cols, 5, -0.5f, 0.5f, stream);
  DeviceBuffer<std::uint8_t> mask(static_cast<std::size_t>(n));
  std::vector<model::ElementwiseSample> out;
  const double b = static_cast<double>(n);
  out.push_back(time_elementwise(
      "layer_norm", 4 * b,
      [&] {
        kernels::layer_norm_forward(x.get(), gamma.get(), beta.get(), y.get(), mean.get(),
                                    rstd.get(), rows, cols, 1e-5f, stream);
      },
      stream, log));
  out.push_back(time_elementwise(
      "gelu", 4 * b, [&] { kernels::gelu_forward(x.get(), y.get(), n, stream); }, stream, log));
  out.push_back(time_elementwise(
      "softmax", 4 * b,
      [&] { kernels::softmax_forward(x.get(), y.get(), n / 1024, 1024, 0.125f, stream); }, stream,
      log));
  out.push_back(time_elementwise(
      "dropout", 5 * b,
      [&] { kernels::dropout_forward(x.get(), y.get(), mask.get(), n, 0.1f, 6, stream); }, stream,
      log));
  {
    // Backward kernels, their bytes counted as the simulator counts a backward memory-bound op
    // (1.5x its forward's: sim/model/transformer.cpp), so bytes / time is the rate the cost
    // model applies to that op. The layer norm's statistics come from its forward above.
    DeviceBuffer<Bf16> dy(static_cast<std::size_t>(n)), dx(static_cast<std::size_t>(n));
    kernels::fill_uniform(dy.get(), kernels::ElementType::bf16, dy.size(), 10, -1, 1, stream);
    DeviceBuffer<float> dgamma(cols), dbeta(cols);
    out.push_back(time_elementwise(
        "layer_norm_bwd", 6 * b,
        [&] {
          kernels::layer_norm_backward(dy.get(), x.get(), gamma.get(), mean.get(), rstd.get(),
                                       dx.get(), dgamma.get(), dbeta.get(), rows, cols, stream);
        },
        stream, log));
    out.push_back(time_elementwise(
        "gelu_bwd", 6 * b, [&] { kernels::gelu_backward(x.get(), dy.get(), dx.get(), n, stream); },
        stream, log));
    out.push_back(time_elementwise(
        "softmax_bwd", 6 * b,
        [&] { kernels::softmax_backward(y.get(), dy.get(), dx.get(), n / 1024, 1024, 0.125f, stream); },
        stream, log));
    out.push_back(time_elementwise(
        "dropout_bwd", 7.5 * b,
        [&] { kernels::dropout_backward(dy.get(), mask.get(), dx.get(), n, 0.1f, stream); }, stream,
        log));
  }
  {  // embedding: 64 Mi output elements gathered from a 50,304 x 4096 table (GPT-2's padded
     // vocabulary)
    const long vocab = 50304, hidden = cols, tokens = n / hidden, seq = 2048;
    DeviceBuffer<Bf16> table(static_cast<std::size_t>(vocab * hidden)),
        position(static_cast<std::size_t>(seq * hidden));
    std::vector<int> ids(static_cast<std::size_t>(tokens));
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = static_cast<int>(kernels::mix64(9, i) % vocab);
    DeviceBuffer<int> d_ids(ids);
    // Per output element: read a table and a position element, write one (2 bytes each).
    out.push_back(time_elementwise(
        "embedding", 6 * b,
        [&] {
          kernels::embedding_forward(table.get(), position.get(), d_ids.get(), y.get(), tokens, seq,
                                     hidden, stream);
        },
        stream, log));
  }
  {
    const long params = 32L << 20;  // fp32 master, grad, two moments, bf16 copy: 30 bytes each
    DeviceBuffer<float> w(params), g(params), m(params), v(params);
    DeviceBuffer<Bf16> working(params);
    for (auto* buf : {&w, &g, &m})
      kernels::fill_uniform(buf->get(), kernels::ElementType::fp32, params, 7, -1, 1, stream);
    kernels::fill_uniform(v.get(), kernels::ElementType::fp32, params, 8, 0, 0.01f, stream);
    out.push_back(time_elementwise(
        "adamw", 30.0 * params,
        [&] {
          kernels::adamw_step(w.get(), g.get(), m.get(), v.get(), working.get(), params, {},
                              stream);
        },
        stream, log));
  }
  return out;
}

}  // namespace

model::KernelCalibration measure_kernels(const KernelsOptions& options, const DeviceInfo& info,
                                         std::ostream& log) {
  kernels::CudaStream stream;
  kernels::CublasLt lt;
  model::KernelCalibration cal;
  cal.provenance = measured_provenance(info, "trainsim-validate kernels");
  if (options.quick)
    cal.provenance.note = "--quick: a smoke test of the harness, not a calibration";

  log << "verifying kernels against the CPU references\n";
  for (auto d : gemm_sweep_dtypes())
    require(kernels::verify_gemm(lt, precision_of(d), stream.get()));
  for (const auto& v : kernels::verify_memory_bound_kernels(stream.get())) require(v);

  const auto shapes = gemm_sweep_shapes(options.quick);
  for (auto d : gemm_sweep_dtypes())
    for (const auto& s : shapes) {
      cal.gemm.push_back(time_gemm(lt, d, s, stream.get()));
      char line[160];
      std::snprintf(line, sizeof line, "gemm %-5s %-28s %9.1f TFLOP/s\n", model::dtype_name(d),
                    describe(s).c_str(), cal.gemm.back().achieved / 1e12);
      log << line;
    }

  {  // streaming copy of 1 GiB
    const std::size_t bytes = std::size_t{1} << 30;
    DeviceBuffer<std::uint8_t> src(bytes), dst(bytes);
    TRAINSIM_CUDA(cudaMemsetAsync(src.get(), 1, bytes, stream.get()));
    const double t = kernels::time_per_call(
        [&] { kernels::stream_copy(src.get(), dst.get(), bytes, stream.get()); }, stream.get());
    cal.memory_bandwidth = copy_bandwidth(static_cast<double>(bytes), t);
    log << "stream copy: " << *cal.memory_bandwidth / 1e9 << " GB/s\n";
  }
  cal.launch_overhead =
      kernels::time_per_call([&] { kernels::empty_kernel(stream.get()); }, stream.get());
  log << "empty kernel, back to back: " << *cal.launch_overhead * 1e6 << " us\n";
  cal.elementwise = time_memory_bound(stream.get(), log);
  return cal;
}

}  // namespace trainsim::validate

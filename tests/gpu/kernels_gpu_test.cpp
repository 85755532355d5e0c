// Each CUDA kernel against its CPU reference (kernels/verify.hpp), on the GPU. Without a CUDA
// device every test skips with the reason: a skip never reads as a pass.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "support/cuda_device.hpp"

#include <string>

#include "cuda_stream.hpp"
#include "gemm_cublaslt.hpp"
#include "verify.hpp"

using namespace trainsim::kernels;

namespace {

}  // namespace

TEST(KernelsGpu, GemmMatchesReferenceInEveryPrecision) {
  REQUIRE_CUDA_DEVICE();
  CudaStream stream;
  CublasLt lt;
  for (auto p :
       {GemmPrecision::bf16, GemmPrecision::fp16, GemmPrecision::tf32, GemmPrecision::fp32}) {
    const auto v = verify_gemm(lt, p, stream.get());
    EXPECT_TRUE(v.ok()) << v.kernel << ": worst mismatch " << v.worst << " x tolerance";
  }
}

TEST(KernelsGpu, MemoryBoundKernelsMatchReferences) {
  REQUIRE_CUDA_DEVICE();
  CudaStream stream;
  const auto results = verify_memory_bound_kernels(stream.get());
  EXPECT_GE(results.size(), 14u);
  for (const auto& v : results)
    EXPECT_TRUE(v.ok()) << v.kernel << ": worst mismatch " << v.worst << " x tolerance";
}

TEST(KernelsGpu, TimedGemmIsCheckedAtSampledPoints) {
  REQUIRE_CUDA_DEVICE();
  CudaStream stream;
  CublasLt lt;
  GemmProblem p;
  p.m = 384, p.n = 256, p.k = 1000, p.batch = 2;
  GemmPlan plan(lt, p, GemmPrecision::bf16);
  DeviceBuffer<std::uint8_t> a(a_elements(p) * 2), b(b_elements(p) * 2), c(c_elements(p) * 2);
  fill_gemm_pattern(a.get(), ElementType::bf16, a_elements(p), 5, stream.get());
  fill_gemm_pattern(b.get(), ElementType::bf16, b_elements(p), 6, stream.get());
  plan.run(a.get(), b.get(), c.get(), stream.get());
  stream.synchronize();
  EXPECT_TRUE(verify_gemm_points(plan, c.get(), 5, 6).ok());
  // The same output checked against the wrong inputs must fail: the check can fail.
  EXPECT_FALSE(verify_gemm_points(plan, c.get(), 5, 7).ok());
}

#pragma once
// GEMMs through cuBLASLt, in the four precisions the simulator's dtypes name:
//   bf16: bf16 operands and result, fp32 accumulate (CUBLAS_COMPUTE_32F)
//   fp16: fp16 operands and result, fp32 accumulate
//   tf32: fp32 operands and result, tensor cores on tf32-rounded inputs
//   (CUBLAS_COMPUTE_32F_FAST_TF32) fp32: fp32 throughout on the CUDA cores (CUBLAS_COMPUTE_32F)
// Matrices are column-major, as in cuBLAS: C (m x n) = alpha op(A) op(B) + beta C, with op(A)
// m x k and op(B) k x n, `batch` times at fixed strides. The algorithm is cuBLASLt's first
// heuristic choice for the problem, with a 32 MiB workspace (what PyTorch gives cuBLASLt on sm_90).
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "device_buffer.hpp"
#include "fill.hpp"

namespace trainsim::kernels {

enum class GemmPrecision { bf16, fp16, tf32, fp32 };
[[nodiscard]] const char* precision_name(GemmPrecision p);
/// How A, B and C are stored for `p` (tf32 is stored as fp32).
[[nodiscard]] ElementType gemm_storage(GemmPrecision p);

struct GemmProblem {
  long m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = true;   ///< A stored k x m (op(A) = A^T); with trans_b false: the sweep's "TN"
  bool trans_b = false;  ///< B stored k x n
  long lda = 0, ldb = 0, ldc = 0;                      ///< leading dimensions; 0 = packed
  long long stride_a = 0, stride_b = 0, stride_c = 0;  ///< between batch entries; 0 = packed
  float alpha = 1, beta = 0;
};
/// `p` with every 0 leading dimension and stride replaced by the packed value.
[[nodiscard]] GemmProblem packed(GemmProblem p);
/// Elements a buffer needs to hold A, B or C of `p` (packed(p)'s layout).
[[nodiscard]] std::size_t a_elements(const GemmProblem& p);
[[nodiscard]] std::size_t b_elements(const GemmProblem& p);
[[nodiscard]] std::size_t c_elements(const GemmProblem& p);

/// A cuBLASLt handle (one per device and thread).
class CublasLt {
 public:
  CublasLt();
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;
  [[nodiscard]] cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_{};
};

/// One GEMM problem planned once: descriptors, the heuristic's algorithm and its workspace.
/// Throws CudaError when cuBLASLt has no algorithm for it.
class GemmPlan {
 public:
  GemmPlan(const CublasLt& lt, const GemmProblem& problem, GemmPrecision precision);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  /// Enqueues C = alpha op(A) op(B) + beta C on `stream`.
  void run(const void* a, const void* b, void* c, cudaStream_t stream) const;
  [[nodiscard]] const GemmProblem& problem() const { return problem_; }
  [[nodiscard]] GemmPrecision precision() const { return precision_; }

 private:
  struct Descriptors;
  cublasLtHandle_t handle_;
  GemmProblem problem_;
  GemmPrecision precision_;
  std::unique_ptr<Descriptors> d_;
  DeviceBuffer<std::uint8_t> workspace_;
};

/// cublasLtGetVersion(): major*10000 + minor*100 + patch.
[[nodiscard]] long cublaslt_version();

}  // namespace trainsim::kernels

#pragma once
// Correctness before timing: each kernel runs on a small input (fixed seed) and its output is
// compared with the CPU reference (reference/reference.hpp). A GEMM being timed is also checked at
// a few output elements of the timed problem itself, which pattern.hpp makes exact on the CPU.
//
// Tolerance rule: |gpu - ref| <= atol + rtol |ref|, with rtol the output's storage precision
// (bf16 2^-7, fp16 2^-10, fp32 1e-5: a little over one rounding) and atol 1e-3 for bf16 outputs
// near zero. worst_mismatch <= 1 passes.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gemm_cublaslt.hpp"

namespace trainsim::kernels {

struct Verification {
  std::string kernel;
  double worst = 0;  ///< reference::worst_mismatch; <= 1 passes
  [[nodiscard]] bool ok() const { return worst <= 1.0; }
};

/// A small batched TN GEMM (m 72, n 40, k 56, batch 3) in `precision` against reference::gemm_tn.
[[nodiscard]] Verification verify_gemm(const CublasLt& lt, GemmPrecision precision,
                                       cudaStream_t stream);

/// Eight output elements of `plan`'s problem (TN, packed), whose A and B were filled with
/// fill_gemm_pattern(seed_a / seed_b), against reference::gemm_tn_pattern_element.
[[nodiscard]] Verification verify_gemm_points(const GemmPlan& plan, const void* c,
                                              std::uint64_t seed_a, std::uint64_t seed_b);

/// Layer norm (forward and backward dx), GELU (forward, backward), softmax (forward, backward),
/// dropout, bias-dropout-residual, AdamW, embedding and the streaming copy, each on a small input.
[[nodiscard]] std::vector<Verification> verify_memory_bound_kernels(cudaStream_t stream);

}  // namespace trainsim::kernels

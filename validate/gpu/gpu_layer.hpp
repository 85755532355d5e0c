#pragma once
// One transformer layer (post-layer-norm, BERT's order) run on the GPU from the calibration
// kernels, forward then backward, every kernel named like the simulator's operation it corresponds
// to. model/transformer.cpp lists the same operations in pre-layer-norm order (GPT's); each
// kernel's work does not depend on where the norm sits, and the layer check pairs them by name. Attention is cuBLASLt strided-batched GEMMs (Q K^T, then P V) with
// a separate softmax and dropout pass, which is how the simulator costs it (no fused attention).
//
// Layout (Megatron's): activations are row-major [s, b, h] (token = seq * b + batch), the QKV
// projection's output [s, b, heads, 3, d], so each (batch, head) pair's Q, K and V are strided
// views of it and one strided-batched GEMM covers all pairs. cuBLAS sees these row-major tensors
// as column-major transposes; gpu_layer.cpp derives each GEMM's operands in a comment.
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "gemm_cublaslt.hpp"
#include "model/transformer.hpp"

namespace trainsim::validate {

class GpuLayer {
 public:
  GpuLayer(const model::TransformerSpec& spec, long micro_batch, const kernels::CublasLt& lt,
           cudaStream_t stream);
  ~GpuLayer();
  GpuLayer(const GpuLayer&) = delete;
  GpuLayer& operator=(const GpuLayer&) = delete;

  /// Enqueues forward and backward once.
  void run() const;
  /// Runs the forward pass and compares its output with layer_forward_reference (CPU, from the
  /// same inputs downloaded): reference::worst_mismatch with rtol = atol = 2^-5 (a few bf16
  /// roundings of every intermediate); <= 1 passes. Affordable for small layers only.
  [[nodiscard]] double verify_forward() const;
  /// Names of the kernels in run order (the simulator's operation names, in post-norm order).
  [[nodiscard]] std::vector<std::string> kernel_names() const;
  /// Seconds per kernel, averaged over `iters` passes with an event between kernels, in run order.
  [[nodiscard]] std::vector<std::pair<std::string, Seconds>> time_per_kernel(int iters) const;
  /// Seconds per whole pass without per-kernel events (after warm-up).
  [[nodiscard]] Seconds time_pass(int iters) const;

 private:
  struct Buffers;
  struct Step {
    std::string name;
    std::function<void()> launch;
  };
  void build_forward();
  void build_backward();
  /// A GEMM step: plans `p` and runs it on (a, b, c) offsets into device buffers.
  void gemm(const std::string& name, const kernels::GemmProblem& p, const void* a, const void* b,
            void* c);

  model::TransformerSpec spec_;
  long micro_batch_;
  const kernels::CublasLt& lt_;
  cudaStream_t stream_;
  std::unique_ptr<Buffers> buf_;
  std::vector<std::unique_ptr<kernels::GemmPlan>> plans_;
  std::vector<Step> steps_;
  std::size_t forward_steps_ = 0;
};

/// verify_forward of a small layer (hidden 128, 2 heads of 64, seq 32, micro-batch 2): the
/// kernels and strided GEMMs every size uses, at a size the CPU reference can afford.
[[nodiscard]] double verify_small_gpu_layer(const kernels::CublasLt& lt, cudaStream_t stream);

}  // namespace trainsim::validate

#pragma once
// One kernel-level operation of a training step, described by its shape and traffic, not its
// duration: compute_cost.hpp turns it into seconds for a given device.
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/dtype.hpp"

namespace trainsim::model {

enum class OpKind {
  gemm,         ///< dense matrix multiply (m x k) * (k x n), `batch` independent ones
  elementwise,  ///< memory-bound: layer norm, GELU, softmax, dropout, residual add, optimizer
  /// Fused (flash) attention forward: both attention matmuls and the softmax in one kernel,
  /// scores kept on chip; `flops` counts only the blocks a causal mask leaves (m, n, k, batch
  /// give the QK^T shape for devices without a measured attention rate).
  fused_attention,
  /// Its backward: recomputes the scores, five matmuls (2.5x the forward's FLOPs).
  fused_attention_backward,
};

struct Operation {
  std::string name;
  OpKind kind = OpKind::elementwise;
  double m = 0, n = 0, k = 0, batch = 1;  ///< GEMM shape (ignored for elementwise)
  Dtype dtype = Dtype::bf16;              ///< what the GEMM computes in
  /// How an FP8 GEMM accumulates: which of the device's fp8 curves times it (dtype.hpp).
  Accumulation accumulation = Accumulation::full;
  Flops flops = 0;                        ///< arithmetic work
  Bytes bytes = 0;                        ///< device-memory traffic (reads + writes)
  bool causal = false;                    ///< fused attention under a causal mask
  /// Memory-bound kernel class ("layer_norm", "softmax_bwd", "adamw", ...): which measured
  /// streaming rate applies (device_profile.hpp, memory_bound_rate). Empty: generic streaming,
  /// at the device's stream-copy rate. Names match the "name" of measured samples.
  std::string kernel;
  /// Kernels eager PyTorch launches for the op, each issued by the host thread (host_dispatch.hpp):
  /// the op's own kernel plus the helpers its module code adds (a scale, a layout copy, a dropout
  /// beside an add). Counts are those of the torch profile of the layers of
  /// validate/measure_torch_ops.py (validate/results/h100-sxm-torch-layer-profile.json, memsets
  /// left out: cuBLAS issues those inside the call) unless the op says otherwise.
  int kernels = 1;
  /// Kernels autograd launches for the op's backward (backward_of); 0: the rule's default, one per
  /// backward op (a GEMM's dgrad and wgrad: 2). A GEMM's extra ones (a bias gradient's reduction)
  /// go to its wgrad.
  int backward_kernels = 0;
  /// The host reads this op's result before it issues the next op (a device-to-host copy and
  /// a stream synchronise: torch.nonzero's output size, .item()), so the device's queue drains
  /// there and the next kernels start only as the host issues them (split_at_host_syncs).
  bool host_sync_after = false;
};

/// Kernels launched by a list of ops (Operation::kernels summed).
[[nodiscard]] int ops_kernels(const std::vector<Operation>& ops);

/// A GEMM of shape (m x k) x (k x n), `batch` times, in `dtype` (operands and result).
[[nodiscard]] Operation make_gemm(std::string name, double m, double n, double k, double batch,
                                  Dtype dtype);
/// A memory-bound operation moving `bytes` with `flops` of arithmetic, of kernel class `kernel`
/// (empty: generic streaming).
[[nodiscard]] Operation make_elementwise(std::string name, Bytes bytes, Flops flops = 0,
                                         std::string kernel = {});

}  // namespace trainsim::model

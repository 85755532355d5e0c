#pragma once
// Which GEMMs `trainsim-validate kernels` times. Two families:
//  - squares m = n = k, powers of two: the device's size-efficiency curve on aligned shapes;
//  - transformer-like shapes at hidden sizes and token counts chosen *between* those of the named
//    models (named_models.hpp), so `layer` predictions interpolate the sweep instead of looking up
//    the layer's own shapes: for each hidden size H and token count T, the forward GEMMs
//    (T x 3H x H, T x H x H, T x 4H x H, T x H x 4H), their data-gradient forms (m x k x n) and
//    weight-gradient forms (k x n x m); and the attention batched GEMMs (S x S x d, S x d x S,
//    d x S x S) for sequence lengths S and head dimensions d.
// Shapes are (m, n, k, batch) in the simulator's convention, operation.hpp: (m x k) * (k x n).
#include <vector>

#include "model/dtype.hpp"

namespace trainsim::validate {

struct GemmShape {
  long m = 0, n = 0, k = 0, batch = 1;
  friend bool operator==(const GemmShape& a, const GemmShape& b) {
    return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch;
  }
};

/// The sweep, without duplicates, in a fixed order; `quick` keeps a few shapes per family (for a
/// smoke test of the harness, not for calibration).
[[nodiscard]] std::vector<GemmShape> gemm_sweep_shapes(bool quick);

/// The dtypes swept: bf16, fp16, tf32, fp32 (cuBLASLt compute types in kernels/gemm_cublaslt.hpp).
[[nodiscard]] std::vector<model::Dtype> gemm_sweep_dtypes();

/// 2 * m * n * k * batch.
[[nodiscard]] double gemm_flops(const GemmShape& s);

}  // namespace trainsim::validate

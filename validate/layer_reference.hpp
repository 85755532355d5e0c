#pragma once
// The forward pass of the GPU layer (gpu/gpu_layer.hpp) on the CPU, from the same inputs, in the
// same layout, with the same dropout masks and the same bf16 rounding of every stored
// intermediate: checks that the layer's strided attention GEMMs and kernel chain compute a
// transformer layer before it is timed.
#include <cstdint>
#include <vector>

#include "model/transformer.hpp"

namespace trainsim::validate {

/// Dropout probability, layer-norm epsilon and the dropout seeds the GPU layer uses.
struct LayerConstants {
  static constexpr float dropout = 0.1f;
  static constexpr float eps = 1e-5f;
  static constexpr std::uint64_t attn_dropout_seed = 11, residual1_seed = 12, residual2_seed = 13;
};

/// A layer's inputs as fp32 values (bf16 ones already rounded). Weights are row-major
/// [out, in] (PyTorch's nn.Linear layout): w_qkv [3h, h] with output columns ordered
/// [head, q|k|v, d], w_o [h, h], w_1 [f, h], w_2 [h, f]. x is [seq, batch, h].
struct LayerInputs {
  std::vector<float> x, w_qkv, w_o, w_1, w_2, bias_o, bias_2, gamma1, beta1, gamma2, beta2;
};

/// The layer's output [seq, batch, h] (post-layer-norm block: attention, residual, layer norm,
/// MLP, residual, layer norm).
[[nodiscard]] std::vector<float> layer_forward_reference(const model::TransformerSpec& spec,
                                                         long micro_batch, const LayerInputs& in);

}  // namespace trainsim::validate

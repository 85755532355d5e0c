#include "model/fp8_linear.hpp"

#include <utility>

#include "model/transformer.hpp"

namespace trainsim::model {

namespace {

constexpr double kBf16 = 2.0;
constexpr double kFp8 = 1.0;

constexpr double kFp32 = 4.0;

/// torchao's dynamic cast in eager code, op by op (float8_utils.py: tensor_to_amax is
/// torch.max(torch.abs(x)); hp_tensor_and_scale_to_float8 is x.to(torch.float32) * scale, then
/// to_fp8_saturated's clamp and .to(float8)): abs reads and writes bf16, max reads it, the upcast
/// reads bf16 and writes fp32, the multiply and the clamp read and write fp32, the cast reads fp32
/// and writes FP8: six kernels, 33 bytes per element. Measured on an H100 in a Llama-3 8B layer
/// (validate/results/h100-sxm-fp8-layer.json): eager FP8 linears make the layer 1.42x slower than
/// bf16, where the two-kernel count had it 0.91x.
constexpr double kEagerDynamicCastBytes = (kBf16 + kBf16) + kBf16 + (kBf16 + kFp32) + (kFp32 + kFp32) +
                                          (kFp32 + kFp32) + (kFp32 + kFp8);
constexpr int kEagerDynamicCastKernels = 6;

/// Bytes per element of casting a bf16 tensor to FP8: the amax pass (dynamic scaling), the read,
/// the FP8 write and, where the kernel also transposes, the transposed write; torchao in eager
/// code runs the cast as the chain above.
double cast_bytes_per_element(const Fp8Linears& f) {
  if (f.dynamic_scaling && !f.fused_transpose) return kEagerDynamicCastBytes;
  return (f.dynamic_scaling ? kBf16 : 0.0) + kBf16 + kFp8 + (f.fused_transpose ? kFp8 : 0.0);
}

Operation cast(std::string name, double elements, const Fp8Linears& f) {
  // "fp8_cast": no measured class, streams at the device's copy rate.
  Operation op = make_elementwise(std::move(name), elements * cast_bytes_per_element(f), 2 * elements, "fp8_cast");
  // The amax reduction, then the scale-and-cast (compiled, or Transformer Engine's one kernel);
  // eager torchao launches each op of the chain.
  op.kernels = f.dynamic_scaling ? (f.fused_transpose ? 2 : kEagerDynamicCastKernels) : 1;
  return op;
}

Operation transpose_copy(std::string name, double elements) {
  return make_elementwise(std::move(name), 2 * kFp8 * elements, 0, "fp8_transpose");
}

/// Transformer Engine's cast_to_fp8 (delayed scaling): reads bf16, writes FP8, no transpose.
Operation cast_without_transpose(std::string name, double elements) {
  return make_elementwise(std::move(name), (kBf16 + kFp8) * elements, 2 * elements, "fp8_cast");
}

/// The linear's tensors cross the TP group in FP8, cast before and transposed after the gather.
bool gathers_fp8(const Fp8Linears& f, const Fp8LinearPlace& place) {
  return f.sequence_gathers_fp8 && place.sequence_shards > 1;
}

}  // namespace

Operation make_fp8_gemm(std::string name, double m, double n, double k, double batch, Accumulation a) {
  Operation op = make_gemm(std::move(name), m, n, k, batch, Dtype::fp8);
  op.accumulation = a;
  op.bytes = batch * (kFp8 * (m * k + k * n) + kBf16 * m * n);
  return op;
}

bool norm_writes_fp8_input(const Fp8Linears& f, const Fp8LinearPlace& place) {
  return f.enabled && f.norm_writes_input && place.after_norm;
}

std::vector<Operation> fp8_forward_casts(const std::string& linear, double input_elements, double weight_elements,
                                         const Fp8Linears& f, const Fp8LinearPlace& place) {
  std::vector<Operation> ops;
  if (gathers_fp8(f, place) && !norm_writes_fp8_input(f, place))
    ops.push_back(cast_without_transpose(linear + "_input_fp8_cast", input_elements));
  else if (!norm_writes_fp8_input(f, place))
    ops.push_back(cast(linear + "_input_fp8_cast", input_elements, f));
  if (f.weight_casts_per_micro_batch > 0 && !f.weights_gathered_fp8) {
    Operation w = cast(linear + "_weight_fp8_cast", weight_elements, f);
    w.bytes *= f.weight_casts_per_micro_batch;
    w.flops *= f.weight_casts_per_micro_batch;
    ops.push_back(std::move(w));
  }
  return ops;
}

std::vector<Operation> fp8_backward_casts(const std::string& linear, double input_elements, double weight_elements,
                                          double output_elements, const Fp8Linears& f, const Fp8LinearPlace& place) {
  std::vector<Operation> ops;
  const bool gathered = gathers_fp8(f, place);
  if (gathered && place.row_parallel) {
    // The gradient arrives sequence-sharded: cast here, gathered in FP8, transposed whole.
    ops.push_back(cast_without_transpose(linear + "_grad_output_fp8_cast", output_elements / place.sequence_shards));
    ops.push_back(transpose_copy(linear + "_grad_output_fp8_transpose", output_elements));
  } else {
    ops.push_back(cast(linear + "_grad_output_fp8_cast", output_elements, f));
  }
  if (f.backward_recasts && !f.fused_transpose) {
    // torchao's matmul_with_hp_or_float8_args (float8_linear.py, early 2025) saves the bf16 input
    // and casts in the backward again: the gradient once per product (grad_output for the data
    // gradient, grad_output_for_grad_weight), the input for the weight gradient, each with its
    // own amax. Compiled, the joint graph's CSE (min_cut_rematerialization_partition:
    // fx_graph_cse) merges these with the identical casts before them; eager code runs them all.
    ops.push_back(cast(linear + "_grad_output_fp8_cast_for_grad_weight", output_elements, f));
    ops.push_back(cast(linear + "_input_fp8_recast", input_elements, f));
  }
  if (!f.fused_transpose) {
    ops.push_back(transpose_copy(linear + "_grad_output_fp8_transpose", output_elements));
    ops.push_back(transpose_copy(linear + "_input_fp8_transpose", input_elements));
    ops.push_back(transpose_copy(linear + "_weight_fp8_transpose", weight_elements));
  } else {
    if (f.weights_gathered_fp8) ops.push_back(transpose_copy(linear + "_weight_fp8_transpose", weight_elements));
    if (!(norm_writes_fp8_input(f, place) || gathered)) return ops;
    // The weight gradient's operand: the FP8 input as the forward GEMM took it (a column-parallel
    // linear's re-gathered along the sequence).
    const double gemm_input = place.row_parallel ? input_elements : input_elements * place.sequence_shards;
    ops.push_back(transpose_copy(linear + "_input_fp8_transpose", gemm_input));
  }
  return ops;
}

double linear_weight_parameters(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn_hidden);
  const double hkv = static_cast<double>(kv_heads_of(s)) * h / static_cast<double>(s.heads);
  return 2 * h * h + 2 * h * hkv + (gated(s.mlp) ? 3.0 : 2.0) * h * f;
}

}  // namespace trainsim::model

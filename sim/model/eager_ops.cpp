#include "model/eager_ops.hpp"

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;
constexpr double kFp32 = 4.0;

Operation kernel(const std::string& name, Bytes bytes, Flops flops = 0) {
  return make_elementwise(name, bytes, flops);
}
}  // namespace

EagerPart eager_rms_norm(const std::string& name, double rows, double cols) {
  const double n = rows * cols;  // elements
  const double r = rows;         // one fp32 statistic per row
  EagerPart p;
  p.forward = {
      kernel(name + "_to_fp32", (kBf16 + kFp32) * n),
      kernel(name + "_pow", 2 * kFp32 * n, n),
      kernel(name + "_mean", kFp32 * (n + r), n),
      kernel(name + "_add_eps", 2 * kFp32 * r, r),
      kernel(name + "_rsqrt", 2 * kFp32 * r, r),
      kernel(name + "_scale", kFp32 * (2 * n + r), n),  // x * rsqrt(...), broadcast per row
      kernel(name + "_to_bf16", (kFp32 + kBf16) * n),   // type_as(x)
      kernel(name + "_weight", 2 * kBf16 * n + kBf16 * cols, n),
  };
  // autograd, last forward op first.
  p.backward = {
      // * weight: grad x weight, and the weight's gradient (grad x normed, summed over rows).
      kernel(name + "_weight_dgrad", 2 * kBf16 * n, n),
      kernel(name + "_weight_wgrad_mul", 3 * kBf16 * n, n),
      kernel(name + "_weight_wgrad_sum", kBf16 * n + kFp32 * cols, n),
      kernel(name + "_to_bf16_bwd", (kBf16 + kFp32) * n),  // the gradient back to fp32
      // x * r: grad x r for x, (grad x x).sum(-1) for r.
      kernel(name + "_scale_dgrad_x", kFp32 * (2 * n + r), n),
      kernel(name + "_scale_dgrad_r_mul", 3 * kFp32 * n, n),
      kernel(name + "_scale_dgrad_r_sum", kFp32 * (n + r), n),
      kernel(name + "_rsqrt_bwd", 3 * kFp32 * r, 3 * r),
      // mean: the row gradient expanded and divided by cols, materialised.
      kernel(name + "_mean_bwd", kFp32 * (n + r), n),
      // pow(2): grad * (2 * x.pow(1)); pow(x, 1) is a copy in ATen.
      kernel(name + "_pow_bwd_copy", 2 * kFp32 * n),
      kernel(name + "_pow_bwd_scale", 2 * kFp32 * n, n),
      kernel(name + "_pow_bwd_mul", 3 * kFp32 * n, n),
      // x.float() feeds both pow and the multiply: their gradients add, then cast back to bf16.
      kernel(name + "_grad_add", 3 * kFp32 * n, n),
      kernel(name + "_to_fp32_bwd", (kFp32 + kBf16) * n),
  };
  return p;
}

EagerPart eager_rotary(const std::string& name, double elements) {
  const double n = elements;
  EagerPart p;
  // view_as_complex / view_as_real / flatten are views; the frequencies (seq x head_dim/2
  // complex64) are small next to q and k and stay in cache across heads.
  p.forward = {
      kernel(name + "_to_fp32", (kBf16 + kFp32) * n),
      kernel(name + "_complex_mul", 2 * kFp32 * n, 3 * n),
      kernel(name + "_to_bf16", (kFp32 + kBf16) * n),
  };
  p.backward = {
      kernel(name + "_to_bf16_bwd", (kBf16 + kFp32) * n),
      kernel(name + "_complex_mul_bwd", 2 * kFp32 * n, 3 * n),  // grad x conj(freqs)
      kernel(name + "_to_fp32_bwd", (kFp32 + kBf16) * n),
  };
  return p;
}

EagerPart eager_repeat_kv(const std::string& name, double kv_elements, double n_rep) {
  const double moved = kBf16 * kv_elements * (1 + n_rep);
  EagerPart p;
  p.forward = {kernel(name, moved)};
  p.backward = {kernel(name + "_bwd", moved, kv_elements * (n_rep - 1))};
  return p;
}

EagerPart eager_swiglu(const std::string& name, double elements) {
  const double n = elements;
  EagerPart p;
  p.forward = {
      kernel(name + "_silu", 2 * kBf16 * n, 4 * n),
      kernel(name + "_mul", 3 * kBf16 * n, n),
  };
  p.backward = {
      kernel(name + "_mul_bwd_gate", 3 * kBf16 * n, n),  // grad x up
      kernel(name + "_mul_bwd_up", 3 * kBf16 * n, n),    // grad x silu(gate)
      kernel(name + "_silu_bwd", 3 * kBf16 * n, 8 * n),  // reads grad and gate
  };
  return p;
}

Operation gradient_accumulation_add(const std::string& name, double elements) {
  return kernel(name, 3 * kBf16 * elements, elements);
}

}  // namespace trainsim::model

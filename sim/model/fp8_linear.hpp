#pragma once
// FP8 linear layers as Transformer Engine and torchao's float8 run them: the projections' GEMMs
// (forward, data gradient, weight gradient) on FP8 operands with bf16 outputs, and the memory-bound
// casts that feed them. Attention, norms, activations and the output head stay bf16.
//
// What each cast reads and writes, read in the implementations:
//  - Transformer Engine's Linear (transformer_engine/pytorch/module/linear.py, delayed scaling):
//    the input goes through fp8_cast_transpose_fused, one kernel that reads it in bf16 (2 B) and
//    writes the FP8 copy for the forward GEMM and its transpose for the weight gradient (1 + 1 B);
//    the scale comes from the amax history, and the kernel records this tensor's amax as it goes.
//    The weight is cast and transposed the same way only when is_first_microbatch is true (or
//    unset): once per optimizer step under gradient accumulation. Backward: grad_output_preprocess
//    casts and transposes the incoming gradient (cast_transpose, with the bias gradient fused).
//    The forward saves the FP8 transposed input, not the bf16 one.
//  - torchao float8 (torchao/float8/float8_linear.py, tensorwise dynamic scaling, torchtitan's
//    default): every cast first needs the tensor's amax (tensor_to_amax: a reduction that reads
//    it), then scales and casts; the weight is cast at every forward, the gradient of the output
//    in backward (e5m2); the GEMMs take FP8 operands in the layouts torch._scaled_mm needs, which
//    under torch.compile the cast kernel writes at once and in eager code are transposing copies.
//    The autograd function saves the FP8 input and the FP8 weight.
#include <string>
#include <vector>

#include "model/operation.hpp"

namespace trainsim::model {

struct TransformerSpec;

/// How a layer's linear projections run (LayerShape::fp8). Default: bf16, nothing of this applies.
struct Fp8Linears {
  bool enabled = false;
  /// An amax reduction reads each tensor before its cast (torchao's dynamic scaling); false:
  /// delayed scaling, the cast kernel itself records the amax (Transformer Engine).
  bool dynamic_scaling = false;
  /// The cast also writes the transposed FP8 copy the backward GEMMs take (Transformer Engine's
  /// cast_transpose, torch.compile's fused cast); false: a separate transposing copy (eager torchao).
  bool fused_transpose = true;
  /// Weight casts per micro-batch: 1 when every forward casts its weights (torchao), 1 /
  /// micro-batches per step when the FP8 weights are kept across them (Transformer Engine).
  double weight_casts_per_micro_batch = 1;
  /// How the forward product accumulates; the data- and weight-gradient products accumulate in
  /// full precision. Fast in both implementations: Transformer Engine runs fprop without its
  /// split accumulator and dgrad/wgrad with it (transformer_engine/pytorch/module/base.py:
  /// _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True); torchao's float8 sets
  /// use_fast_accum on the output GEMM's config only (torchao/float8/config.py: grad_input and
  /// grad_weight False), for the gradients' precision.
  Accumulation forward_accumulation = Accumulation::fast;
};

/// An FP8 GEMM (m x k) * (k x n): 1-byte operands, a bf16 output, accumulating as `a`.
[[nodiscard]] Operation make_fp8_gemm(std::string name, double m, double n, double k, double batch,
                                      Accumulation a = Accumulation::full);

/// The forward casts of one linear: its input (`input_elements` on this rank, in bf16) and its
/// weight (`weight_elements`), each at the bytes the implementation moves (see the header).
[[nodiscard]] std::vector<Operation> fp8_forward_casts(const std::string& linear, double input_elements,
                                                       double weight_elements, const Fp8Linears& f);
/// The backward casts of one linear: the incoming gradient (`output_elements`) and, without a
/// fused transpose, the transposing copies of the FP8 input, weight and gradient.
[[nodiscard]] std::vector<Operation> fp8_backward_casts(const std::string& linear, double input_elements,
                                                        double weight_elements, double output_elements,
                                                        const Fp8Linears& f);

/// Weights of a layer's linear projections (attention and MLP matrices, no biases or norms).
[[nodiscard]] double linear_weight_parameters(const TransformerSpec& s);

}  // namespace trainsim::model

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
//  - Transformer Engine's modules as Megatron-core builds a layer (TE 1.13, NeMo 24.12; megatron/
//    core/models/gpt/gpt_layer_specs.py: QKV and the MLP's first linear are
//    TELayerNormColumnParallelLinear, the attention output and the MLP's second TERowParallelLinear;
//    no LayerNormMLP, so the activation stays Megatron's bf16 kernel and its output is cast by the
//    second linear). module/layernorm_linear.py: the norm kernel itself writes the FP8 input
//    (layernorm_fwd_fp8 / rmsnorm_fwd_fp8, return_layernorm_output False), without a transposed
//    copy: the backward transposes the FP8 input (tex.fp8_transpose, after the re-gather under
//    sequence parallelism) for the weight gradient. module/linear.py: with the module's
//    sequence_parallel set (Megatron passes config.sequence_parallel to every TE linear) the input
//    is cast without the transpose, which the backward makes; base.py grad_output_preprocess of a
//    row-parallel linear under sequence parallelism casts the gradient's shard, gathers it in FP8
//    and transposes the gathered tensor. So the sequence-parallel all-gathers move FP8: the norm
//    outputs (forward and the backward's re-gather) and the row-parallel linears' gradients.
//  - torchao float8 (torchao/float8/float8_linear.py, tensorwise dynamic scaling, torchtitan's
//    default): every cast first needs the tensor's amax (tensor_to_amax: a reduction that reads
//    it), then scales and casts; the weight is cast at every forward, the gradient of the output
//    in backward (e5m2); the GEMMs take FP8 operands in the layouts torch._scaled_mm needs, which
//    under torch.compile the cast kernel writes at once and in eager code are transposing copies.
//    The autograd function (matmul_with_hp_or_float8_args, early 2025) saves the bf16 input and
//    the FP8 weight and, in the backward, casts the gradient once per product and the input
//    again, each after its own amax; under torch.compile the joint graph's common-subexpression
//    pass merges these with the identical earlier casts, so only eager code pays them. (The
//    memory model still counts the saved input in FP8.)
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
  /// torchao's autograd function casts again in the backward (the header): the input for the
  /// weight gradient and the gradient a second time. Only eager code pays them (fused_transpose
  /// false); compiled, CSE merges them with the first casts.
  bool backward_recasts = false;
  /// The layer's weights arrive FP8 from the FSDP all-gather (torchao's fsdp_pre_all_gather cast
  /// them on the shards, program/sharded_schedule.cpp): the forward casts none; the gathered
  /// weight is in the forward GEMM's layout, so the data gradient's GEMM takes a transposing
  /// copy (torchao's float8_ops: _scaled_mm's second operand column-major).
  bool weights_gathered_fp8 = false;
  /// How the forward product accumulates; the data- and weight-gradient products accumulate in
  /// full precision. Fast in both implementations: Transformer Engine runs fprop without its
  /// split accumulator and dgrad/wgrad with it (transformer_engine/pytorch/module/base.py:
  /// _2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True); torchao's float8 sets
  /// use_fast_accum on the output GEMM's config only (torchao/float8/config.py: grad_input and
  /// grad_weight False), for the gradients' precision.
  Accumulation forward_accumulation = Accumulation::fast;
  /// The norm before a linear writes that linear's FP8 input in its own kernel, without the
  /// transposed copy (Transformer Engine's LayerNormLinear): no cast of that input; the backward
  /// transposes it for the weight gradient.
  bool norm_writes_input = false;
  /// Under sequence parallelism the tensors that cross the TP group are cast on this rank's shard,
  /// all-gathered in FP8 and transposed after (Transformer Engine, see the header): the gathers
  /// move 1 B per element, and a linear's input cast writes no transpose.
  bool sequence_gathers_fp8 = false;
};

/// Where one linear sits: what feeds it and how tensor parallelism splits it.
struct Fp8LinearPlace {
  bool after_norm = false;     ///< its input is a norm's output (QKV, the MLP's first linear)
  bool row_parallel = false;   ///< splits its input's columns (attention output, the MLP's second)
  double sequence_shards = 1;  ///< the tokens' split under sequence parallelism (TP degree), else 1
};

/// An FP8 GEMM (m x k) * (k x n): 1-byte operands, a bf16 output, accumulating as `a`.
[[nodiscard]] Operation make_fp8_gemm(std::string name, double m, double n, double k, double batch,
                                      Accumulation a = Accumulation::full);

/// The forward casts of one linear: its input (`input_elements` on this rank before any sequence
/// gather, in bf16) and its weight (`weight_elements`), each at the bytes the implementation
/// moves (see the header).
[[nodiscard]] std::vector<Operation> fp8_forward_casts(const std::string& linear, double input_elements,
                                                       double weight_elements, const Fp8Linears& f,
                                                       const Fp8LinearPlace& place = {});
/// The backward casts of one linear: the incoming gradient (`output_elements`: the GEMM's output,
/// every token) and the transposes the forward did not write: the FP8 input's where its cast (or
/// norm) wrote none, and without a fused transpose the copies of the FP8 input, weight and gradient.
[[nodiscard]] std::vector<Operation> fp8_backward_casts(const std::string& linear, double input_elements,
                                                        double weight_elements, double output_elements,
                                                        const Fp8Linears& f, const Fp8LinearPlace& place = {});
/// Whether the norm before a linear at `place` writes its FP8 input (Fp8Linears::norm_writes_input).
[[nodiscard]] bool norm_writes_fp8_input(const Fp8Linears& f, const Fp8LinearPlace& place);

/// Weights of a layer's linear projections (attention and MLP matrices, no biases or norms).
[[nodiscard]] double linear_weight_parameters(const TransformerSpec& s);

}  // namespace trainsim::model

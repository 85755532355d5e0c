#pragma once
// Kernels a framework's attention and linear-layer module code runs beside the GEMMs and the
// norm / activation kernels of a biased, fused-QKV (GPT / BERT style) layer: the bias gradients
// autograd reduces over the tokens, the gradient of splitting the fused QKV output into views
// (torch.split / chunk backward: a cat), and layout copies (permute(...).contiguous() /
// reshape of a permuted tensor). Which of them run is the framework's code, not the model's:
// transformer.cpp asks these functions per ModuleKernels variant (transformer.hpp).
// Rates: kernel classes "bias_grad", "chunk_grad_cat", "permute_copy" of the device's measured
// memory-bound kernels (PyTorch's reduce_kernel, CatArrayBatchedCopy and strided copy stream
// well below a plain copy); without a sample they stream at the copy rate.
#include <string>

#include "model/operation.hpp"

namespace trainsim::model {

/// The gradient of a bias broadcast over `rows` tokens of `cols` bf16 outputs: a reduction
/// reading the output gradient (rows x cols) and writing one row (grad_output.sum(0)).
[[nodiscard]] Operation bias_grad_reduction(const std::string& name, double rows, double cols);
/// Backward of splitting a fused projection's output into views: autograd concatenates the
/// parts' gradients, reading and writing `elements` bf16 elements.
[[nodiscard]] Operation chunk_grad_cat(const std::string& name, double elements);
/// A permuted (strided) bf16 tensor of `elements` elements made contiguous.
[[nodiscard]] Operation permute_copy(const std::string& name, double elements);
/// An eager elementwise multiply of `elements` bf16 elements by a scalar (read + write), kernel
/// class "scalar_multiply" (measured on the H100 at the copy rate: no sample of its own).
[[nodiscard]] Operation scalar_multiply(const std::string& name, double elements);

}  // namespace trainsim::model

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
#include <vector>

#include "model/operation.hpp"

namespace trainsim::model {

/// The gradient of a bias broadcast over `rows` tokens of `cols` bf16 outputs: a reduction
/// reading the output gradient (rows x cols) and writing one row (grad_output.sum(0)).
[[nodiscard]] Operation bias_grad_reduction(const std::string& name, double rows, double cols);
/// Backward of splitting a fused projection's output into views: autograd concatenates the
/// parts' gradients, reading and writing `elements` bf16 elements.
[[nodiscard]] Operation chunk_grad_cat(const std::string& name, double elements);
/// The same gradient join where each part is a whole [tokens, cols] projection output: a cat
/// along the last dimension of parts `cols` wide (llm-foundry's qkv.chunk(3, dim=2) on
/// [b, s, 3d]), each output row three contiguous runs of d elements, where chunk_grad_cat's
/// sample joins 128-element runs of head-interleaved parts. Kernel class "chunk_grad_cat_wide":
/// measured on the H100 at the stream-copy rate (CatArrayBatchedCopy of llm-foundry's split,
/// 2.9-3.0 TB/s at d 1536-5120, validate/results/h100-mpt-block-timeline.json), which is what a
/// class without a sample streams at.
[[nodiscard]] Operation wide_chunk_grad_cat(const std::string& name, double elements);
/// A permuted (strided) bf16 tensor of `elements` elements made contiguous.
[[nodiscard]] Operation permute_copy(const std::string& name, double elements);
/// An eager elementwise multiply of `elements` bf16 elements by a scalar (read + write), kernel
/// class "scalar_multiply" (measured on the H100 at the copy rate: no sample of its own).
[[nodiscard]] Operation scalar_multiply(const std::string& name, double elements);

// flash-attn's bert_padding (v2.4.2, 1a2c3e8c flash_attn/bert_padding.py), which llm-foundry's
// flash_attn_fn runs on every call, padded or not (model::ModuleKernels::mpt_flash). The index
// IndexFirstAxis hands torch.gather / scatter_ is einops' repeat(indices, "z -> z d"): at einops
// 0.7.0 (llm-foundry's pin) a stride-0 expand of the int64 token indices (einops/_backends.py:
// 262-267 TorchBackend.add_axes; no final reshape for a pattern without composite axes,
// einops/einops.py:201-207, 249-250), so no tokens x hidden index tensor is written; its reads,
// 8 B per token from cache, are left out. Kernel classes "index_gather", "index_scatter",
// "zeros_fill": no measured sample on any profile, so the stream-copy rate (a fill writes only).

/// unpad_input's index bookkeeping for one tensor (bert_padding.py:98-101 at v2.4.2) on the
/// `batch` x `seq` bool mask, before its gather: one op per kernel PyTorch 2.1 launches (11),
/// two of them followed by a host synchronisation (Operation::host_sync_after):
/// - mask.sum(-1, dtype=int32): the bool mask cast to int32 (ATen ReduceOpsUtils.h
///   make_reduction: `self.to(in_dtype)` when the input's dtype is not the reduction's), then
///   the row sum: 2 kernels;
/// - torch.nonzero(mask.flatten()) (ATen cuda/Nonzero.cu nonzero_cuda_out_impl): cub
///   DeviceReduce::Sum counts the nonzeros (a pass over tiles, then one over their partials: 2
///   kernels; batch x seq is over one tile), memcpy_and_sync brings the count to the host (the
///   first sync: the output's size), cub DeviceSelect::Flagged writes the int64 indices (tile
///   state init + select sweep: 2 kernels; a 1-D input needs no write_indices);
/// - seqlens.max().item(): one reduction, then the second sync;
/// - torch.cumsum(seqlens, 0, dtype=int32) on a 1-D tensor: cub DeviceScan (ScanUtils.cuh
///   scan_dim, init + scan: 2 kernels); F.pad(..., (1, 0)): constant_pad_nd's fill of the new
///   tensor and the copy into it: 2 kernels.
/// Traffic: what each kernel reads and writes of the mask (1 B), the int32 row lengths and the
/// int64 indices; generic streaming (no measured class), each op's launch overhead included.
/// ATen was read at pytorch 0358b9e9 (newer than 2.1, which these runs used): ASSUMED 2.1 has the
/// same count / sync / select structure in nonzero and the same cast in the reduction.
[[nodiscard]] std::vector<Operation> unpad_index_ops(const std::string& name, double batch, double seq);
/// unpad_input's IndexFirstAxis forward (bert_padding.py:17-19): torch.gather of `elements` bf16
/// elements into a new tensor, read + write.
[[nodiscard]] Operation unpad_gather(const std::string& name, double elements);
/// Its backward (bert_padding.py:27-34): torch.zeros of the padded gradient (a write), then
/// scatter_ of the unpadded gradient into it (read + write). Two kernels.
[[nodiscard]] std::vector<Operation> unpad_gather_grad(const std::string& name, double elements);
/// pad_input's IndexPutFirstAxis forward (bert_padding.py:47-52, 208): torch.zeros of the padded
/// output (a write), then output[indices] = values (index_put_, read + write). Two kernels.
[[nodiscard]] std::vector<Operation> pad_index_put(const std::string& name, double elements);
/// Its backward (bert_padding.py:59): grad_output[indices], an index select (read + write).
[[nodiscard]] Operation pad_index_put_grad(const std::string& name, double elements);

}  // namespace trainsim::model

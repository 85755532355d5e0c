#pragma once
// Hugging Face's eager BERT (transformers v4.21.1 src/transformers/models/bert/modeling_bert.py:
// BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput,
// BertPredictionHeadTransform, BertLMPredictionHead, BertForMaskedLM's CrossEntropyLoss) under
// torch.cuda.amp.autocast(fp16) with fp32 weights (Trainer --fp16, PyTorch 1.11), kernel by
// kernel: model::ModuleKernels::hf_bert. Each op is one kernel; its bytes are what that kernel
// reads and writes. What decides the dtypes, as read:
// - autocast runs linear / matmul / bmm in fp16, casting an fp32 input (a kernel each call: only
//   leaf tensors that require grad, the weights and biases, are cached, once per forward;
//   aten/src/ATen/autocast_mode.cpp cached_cast) and layer_norm, softmax and cross_entropy in
//   fp32 (the torch.cuda.amp op lists);
// - the residual stream is fp32: LayerNorm's output (fp32) feeds the next layer, and fp16 + fp32
//   promotes to fp32 (BertSelfOutput / BertOutput: LayerNorm(dropout(dense(h)) + input_tensor));
// - the extended attention mask is in the model's dtype, fp32 (get_extended_attention_mask uses
//   self.dtype), so scores / sqrt(d) + mask is fp32 and softmax and dropout on the probabilities
//   run in fp32; the second matmul casts the probabilities back to fp16;
// - transpose_for_scores is view + permute; torch.matmul on 4-D permuted operands reshapes them
//   to 3-D batches, which a permuted [b, heads, s, d] view cannot be: a copy of q, k and v
//   (aten matmul's expand().reshape()); the context's permute(0, 2, 1, 3).contiguous() is one more;
//   in backward each reshape's gradient is a copy again;
// - nn.Linear on a 3-D input with a bias: one kernel beside the GEMM writes the bias into the
//   output (addmm's copy of the expanded bias before cuBLAS with beta 1, or matmul then add_,
//   4 bytes per fp16 output element either way; which path 1.11 takes was not read at the tag);
// - backward: each weight's and bias's fp16 gradient is cast to fp32 (the cast's backward) and
//   added into .grad (AccumulateGrad's in-place add: Trainer 4.21's model.zero_grad() zeroes the
//   gradients instead of freeing them, torch 1.11 Module.zero_grad(set_to_none=False)).
// The attention code was read in a stored transformers 4.x copy (004ad5f); it is unchanged to
// 4.21.1 as far as read (4.21 calls nn.functional.softmax, the same kernel); line numbers at the
// tag were not checked. Kernel classes are the device's measured memory-bound classes where one
// fits ("softmax", "dropout", "layer_norm", "gelu", "permute_copy", "bias_grad"); the casts have
// none ("autocast_cast": the stream-copy rate).
#include <string>
#include <vector>

#include "model/operation.hpp"
#include "model/transformer.hpp"

namespace trainsim::model {

/// One BertLayer's forward kernels for `micro_batch` sequences, in order (46 for BERT-base).
[[nodiscard]] std::vector<Operation> hf_bert_layer_forward(const TransformerSpec& s, long micro_batch);
/// Its backward kernels, in the order autograd runs them.
[[nodiscard]] std::vector<Operation> hf_bert_layer_backward(const TransformerSpec& s, long micro_batch);
/// BertEmbeddings: three fp32 lookups, two adds, LayerNorm and dropout in fp32 (embedding is in
/// neither autocast list, so its fp32 tables give fp32 outputs).
[[nodiscard]] std::vector<Operation> hf_bert_embedding_forward(const TransformerSpec& s, long micro_batch);
[[nodiscard]] std::vector<Operation> hf_bert_embedding_backward(const TransformerSpec& s, long micro_batch);
/// The MLM head on every token (BertForMaskedLM computes prediction_scores for the whole
/// sequence; the loss ignores unmasked labels): transform dense + GELU + LayerNorm, decoder onto
/// the vocabulary with its bias, and CrossEntropyLoss in fp32 (logits cast, log_softmax, nll).
[[nodiscard]] std::vector<Operation> hf_bert_head_forward(const TransformerSpec& s, long micro_batch);
[[nodiscard]] std::vector<Operation> hf_bert_head_backward(const TransformerSpec& s, long micro_batch);

/// What autograd keeps for the backward of one BertLayer, of BertEmbeddings and of the MLM head
/// with its loss, for `micro_batch` sequences (bytes on one rank), as the forward op lists
/// above produce them: built by the same code, each saved tensor recorded by the op whose
/// backward reads it. Includes each Linear's fp16 weight cast (2 B per weight), which the
/// saved reference keeps from the end of the forward to that Linear's backward.
[[nodiscard]] std::vector<StoredTensor> hf_bert_layer_saved(const TransformerSpec& s, long micro_batch);
[[nodiscard]] std::vector<StoredTensor> hf_bert_embedding_saved(const TransformerSpec& s, long micro_batch);
[[nodiscard]] std::vector<StoredTensor> hf_bert_head_saved(const TransformerSpec& s, long micro_batch);

}  // namespace trainsim::model

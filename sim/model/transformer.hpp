#pragma once
// A transformer described by its shape, and the operations of one layer's forward and backward
// pass for a micro-batch. Parameter counts and FLOPs follow the standard accounting
// (Narayanan et al. 2021, appendix); stored activations follow Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", section 4), generalised to
// gated MLPs, grouped-query attention and fused (flash) attention.
#include <string>
#include <vector>

#include "model/fp8_linear.hpp"
#include "model/operation.hpp"

namespace trainsim::model {

enum class MlpKind {
  gelu,          ///< two matrices h->f->h with GELU (BERT, GPT)
  swiglu,        ///< gate and up h->f, SiLU(gate)*up, down f->h (Llama)
  squared_relu,  ///< two matrices h->f->h with relu(x)^2 (Nemotron-4; So et al. 2021, "Primer")
  relu,          ///< two matrices h->f->h with ReLU (T5 v1.0; Raffel et al. 2020, 3.1)
  geglu,         ///< gate and up h->f, GELU(gate)*up, down f->h (T5 v1.1, Flan-T5; Shazeer 2020)
};
/// Gated MLPs (SwiGLU, GeGLU) have a third matrix: the first projection writes 2f columns.
[[nodiscard]] bool gated(MlpKind mlp);
/// The scenario name of an MLP kind ("gelu", "swiglu", "squared_relu", "relu", "geglu").
[[nodiscard]] const char* mlp_name(MlpKind mlp);
enum class NormKind { layernorm, rmsnorm };

struct TransformerSpec {
  std::string name;
  long layers = 0;
  long hidden = 0;
  long heads = 0;
  long ffn_hidden = 0;  ///< usually 4 x hidden (GELU) or ~2.7 x hidden (SwiGLU)
  long vocab = 0;
  long seq_len = 0;
  bool mlm_head = false;  ///< BERT: a dense + layer norm transform before the tied decoder
  long kv_heads = 0;      ///< key/value heads; 0 = heads (multi-head), fewer = grouped-query
  MlpKind mlp = MlpKind::gelu;
  NormKind norm = NormKind::layernorm;
  bool bias = true;               ///< linear layers and norms carry biases
  bool learned_positions = true;  ///< a position-embedding table (false: rotary, or T5's relative bias)
  bool tied_embeddings = true;    ///< the output projection reuses the token embedding
  bool embedding_norm = true;     ///< BERT: a layer norm after the embeddings
  bool final_norm = false;        ///< GPT, Llama: a norm before the output head
  bool dropout = true;            ///< dropout after attention and MLP (masks are stored)
  bool causal = true;             ///< decoder attention mask (BERT: false); a fused kernel skips masked blocks
  /// Rows of the learned position table; 0: seq_len. A context-parallel rank's share of the model
  /// runs seq_len / cp tokens but holds the whole table (context_parallel_share).
  long position_rows = 0;
  /// Channels per attention head; 0: hidden / heads. T5 sets its own (T5-11B: 128 heads x 128
  /// over a hidden of 1024), so q, k, v and the context have heads x head_dim columns.
  long head_dim = 0;
  /// Encoder-decoder (T5; model/encoder_decoder.hpp): the decoder's blocks after the `layers`
  /// encoder blocks; 0: one stack of `layers` blocks, as every other architecture.
  long decoder_layers = 0;
  /// The decoder's tokens per sequence when decoder_layers > 0; 0: seq_len.
  long decoder_seq_len = 0;
  /// A block with cross-attention (a T5 decoder block) attends to this many encoder tokens
  /// after its self-attention; 0: no cross-attention. Set by block_groups, not by scenarios.
  long cross_seq_len = 0;
  /// T5's relative position bias: a [heads, s_q, s_k] bias (with the mask folded in) added to
  /// every attention's scores (self and cross), one table of 32 buckets x heads per stack.
  bool relative_position_bias = false;
};

/// The model as one rank of a context-parallel group runs it: seq_len / cp tokens of each
/// sequence, the parameters (position table included) unchanged. Identity when cp = 1.
[[nodiscard]] TransformerSpec context_parallel_share(const TransformerSpec& s, long cp);

/// The module code a framework runs around a biased, fused-QKV layer's GEMMs and fused kernels
/// (module_kernels.hpp), as read in each framework's source.
enum class ModuleKernels {
  /// None of them: the bias gradients come out of the weight-gradient GEMM's epilogue and the
  /// QKV projection feeds attention packed (flash-attn's training modules: FusedDense,
  /// flash_attn_qkvpacked_func), or a compiler fuses them away; also what a model without biases
  /// or a fused QKV projection runs.
  fused,
  /// Megatron-LM 2021 (6985e58 megatron/model/transformer.py, megatron/mpu): each linear's bias
  /// gradient reduced by autograd (F.linear, or the bias handed to bias_gelu / bias_dropout_add,
  /// whose broadcast autograd sums), the fused QKV output split into views by
  /// mpu.split_tensor_along_last_dim (torch.split: a cat in backward), and the unfused
  /// attention's context made contiguous (permute(2, 0, 1, 3).contiguous()); the scores are
  /// scaled inside baddbmm (alpha), not by a kernel. Megatron-DeepSpeed (BLOOM) keeps this code.
  megatron,
  /// llm-foundry's MPT attention (llmfoundry/models/layers/attention.py): nn.Linear with bias,
  /// Wqkv's output split by qkv.chunk(3, dim=2) (a cat in backward), heads as einops views.
  mpt,
  /// mpt with attn_impl 'flash' (flash_attn_fn, llm-foundry 5e85bd62d llmfoundry/models/layers/
  /// attention.py:216-367): q, k and v unpadded by flash-attn's bert_padding.unpad_input before
  /// flash_attn_varlen_func (a mask of ones is made when none is given), the output padded back
  /// by pad_input; their gathers, fills and scatters (module_kernels.hpp, unpad_* / pad_*).
  mpt_flash,
  /// validate/measure_torch_ops.py's post-LN layer: nn.Linear with bias, the QKV output viewed,
  /// permuted and chunked (backward: a cat, then a copy back to the projection's layout), the
  /// context permuted and reshaped (a copy), unfused scores scaled by an eager multiply, SDPA's
  /// flash backward given its layout by two copies.
  torch_layer,
  /// Hugging Face transformers 4.21's eager BertLayer, embeddings and MLM head under
  /// torch.cuda.amp autocast (fp16 GEMMs, fp32 weights, residual stream, softmax and LayerNorm),
  /// every tensor op its own kernel (hf_bert_ops.hpp). Replaces the whole layer, embedding and
  /// head op lists: one rank per layer (no TP), unfused attention, BERT's shape.
  hf_bert,
};

/// How a layer is computed on one rank: micro-batch, tensor-parallel split, attention kernel.
struct LayerShape {
  long micro_batch = 1;
  long tp = 1;                     ///< tensor-parallel degree (Megatron column/row split)
  bool sequence_parallel = false;  ///< norms, dropout and residuals split along the sequence
  bool flash_attention = false;    ///< fused attention: no s x s scores in memory
  bool fused_cross_entropy = false;  ///< loss on bf16 logits, gradient in place (no fp32 copy)
  /// The layer runs as eager PyTorch module code (torchtitan, Hugging Face Llama): one nn.Linear
  /// per projection (q, k, v; gate, up) and each tensor op of RMSNorm, rotary embedding, KV-head
  /// repeat and SwiGLU its own kernel (eager_ops.hpp). false: fused kernels (Megatron,
  /// torch.compile), one kernel per norm and activation, no rotary or repeat traffic.
  bool eager = false;
  ModuleKernels module_kernels = ModuleKernels::fused;
  /// The linear projections' GEMMs in FP8 and the casts feeding them (fp8_linear.hpp); the
  /// attention kernel, norms, activations and the output head stay bf16.
  Fp8Linears fp8 = Fp8Linears{};
};

[[nodiscard]] long kv_heads_of(const TransformerSpec& s);

/// Parameter counts. A layer: attention projections, MLP, norms (with biases where the
/// architecture has them). Embedding: token table, position table, embedding norm. Head: the
/// MLM transform, the final norm and an untied output projection.
[[nodiscard]] double parameters_per_layer(const TransformerSpec& s);
[[nodiscard]] double embedding_parameters(const TransformerSpec& s);
[[nodiscard]] double head_parameters(const TransformerSpec& s);
[[nodiscard]] double parameter_count(const TransformerSpec& s);

/// The forward operations of one transformer layer on one rank, in bf16.
[[nodiscard]] std::vector<Operation> layer_forward_ops(const TransformerSpec& s, const LayerShape& shape);
[[nodiscard]] std::vector<Operation> layer_forward_ops(const TransformerSpec& s, long micro_batch);
/// The forward operations of the core attention on one rank, in order: QK^T, softmax (with the
/// scale and mask), dropout on the probabilities, probabilities x V and the copy of the context
/// into [s, b, h] where modelled (Megatron's CoreAttention); with flash attention the fused
/// kernel (what Megatron-core's selective recomputation runs again).
[[nodiscard]] std::vector<Operation> core_attention_forward_ops(const TransformerSpec& s, const LayerShape& shape);
/// The backward operations of one layer: each GEMM becomes a data-gradient and a weight-gradient
/// GEMM of the same FLOPs; memory-bound ops read their inputs and the incoming gradient.
[[nodiscard]] std::vector<Operation> layer_backward_ops(const TransformerSpec& s, const LayerShape& shape);
[[nodiscard]] std::vector<Operation> layer_backward_ops(const TransformerSpec& s, long micro_batch);
/// Embedding lookup forward (memory-bound).
[[nodiscard]] std::vector<Operation> embedding_forward_ops(const TransformerSpec& s, const LayerShape& shape);
[[nodiscard]] std::vector<Operation> embedding_forward_ops(const TransformerSpec& s, long micro_batch);
/// Output head forward: the LM/MLM projection onto the vocabulary and its loss.
[[nodiscard]] std::vector<Operation> head_forward_ops(const TransformerSpec& s, const LayerShape& shape);
[[nodiscard]] std::vector<Operation> head_forward_ops(const TransformerSpec& s, long micro_batch);
/// The head's backward: backward_of(head_forward_ops) unless the module kernels list their own.
[[nodiscard]] std::vector<Operation> head_backward_ops(const TransformerSpec& s, const LayerShape& shape);
/// The embedding's backward, likewise.
[[nodiscard]] std::vector<Operation> embedding_backward_ops(const TransformerSpec& s, const LayerShape& shape);
/// Fused attention of one layer on one rank (FlashAttention; Dao 2023, arXiv 2307.08691, 4.1):
/// 4 s^2 d FLOPs per head and sequence, halved under a causal mask; traffic is Q, K, V, O only.
[[nodiscard]] Operation make_fused_attention(const TransformerSpec& s, const LayerShape& shape);
/// Backward of a list of forward ops (the rule layer_backward_ops uses).
[[nodiscard]] std::vector<Operation> backward_of(const std::vector<Operation>& forward);
/// Whether a backward op computes a weight's gradient: a linear's `_wgrad` GEMM from
/// backward_of (a single GEMM). The batched attention matmuls' `_wgrad` are gradients of K and
/// V, activations the input gradient needs, not weights.
[[nodiscard]] bool is_weight_gradient(const Operation& op);

/// A tensor the forward pass keeps for the backward pass, on one rank.
struct StoredTensor {
  std::string name;
  Bytes bytes = 0;
};
/// What one layer stores for its backward pass (Korthikanti et al. 2022, 4.1: 34sbh + 5as^2b
/// bytes for a GELU layer without parallelism; TP divides all but norm inputs, the QKV and
/// first-MLP inputs and the dropout masks, unless sequence parallelism divides those too).
[[nodiscard]] std::vector<StoredTensor> layer_stored_activations(const TransformerSpec& s,
                                                                 const LayerShape& shape);
/// What the embedding and the head store (dropout mask, final norm input, logits and the fp32
/// softmax of the loss; vocabulary-parallel under TP).
[[nodiscard]] std::vector<StoredTensor> embedding_stored_activations(const TransformerSpec& s,
                                                                     const LayerShape& shape);
[[nodiscard]] std::vector<StoredTensor> head_stored_activations(const TransformerSpec& s,
                                                                const LayerShape& shape);
[[nodiscard]] Bytes total_bytes(const std::vector<StoredTensor>& tensors);
/// A layer's input in bf16 (b x s x h x 2 B; fp32 for hf_bert, whose residual stream is fp32;
/// split by TP only under sequence parallelism): what
/// activation checkpointing keeps per layer and activation offloading moves to host memory.
[[nodiscard]] Bytes layer_input_bytes(const TransformerSpec& s, const LayerShape& shape);
/// What a layer's deferred weight-gradient GEMMs keep after its backward has computed the input
/// gradients (ZB-H1's W, program/pipeline_schedule.hpp): each linear's input and output gradient
/// on one TP rank, 16-bit, the QKV projections' shared input once. A GPT layer at TP 1: 32 b s h.
[[nodiscard]] Bytes weight_gradient_inputs_bytes(const TransformerSpec& s, const LayerShape& shape);
/// The same for the output layer: its input and the logits' gradient (vocabulary / TP).
[[nodiscard]] Bytes head_weight_gradient_inputs_bytes(const TransformerSpec& s, const LayerShape& shape);

/// Training FLOPs per sequence the way papers count them (6 x params x tokens + attention),
/// for reporting model FLOP/s; not used for timing.
[[nodiscard]] double model_flops_per_sequence(const TransformerSpec& s);

}  // namespace trainsim::model

#pragma once
// A transformer described by its shape, and the operations of one layer's forward and backward
// pass for a micro-batch. Parameter counts and FLOPs follow the standard accounting
// (Narayanan et al. 2021, appendix; Korthikanti et al. 2022 for activation traffic).
#include <string>
#include <vector>

#include "model/operation.hpp"

namespace trainsim::model {

struct TransformerSpec {
  std::string name;
  long layers = 0;
  long hidden = 0;
  long heads = 0;
  long ffn_hidden = 0;  ///< usually 4 x hidden
  long vocab = 0;
  long seq_len = 0;
  bool mlm_head = false;  ///< BERT: a dense + layer norm transform before the tied decoder
};

/// Parameter count: embeddings (token + position), per-layer attention and MLP weights and biases,
/// layer norms, and the output head's transform (the decoder is tied to the embedding).
[[nodiscard]] double parameter_count(const TransformerSpec& s);
[[nodiscard]] double parameters_per_layer(const TransformerSpec& s);

/// The forward operations of one transformer layer for `micro_batch` sequences in bf16.
[[nodiscard]] std::vector<Operation> layer_forward_ops(const TransformerSpec& s, long micro_batch);
/// The backward operations of one layer: each GEMM becomes a data-gradient and a weight-gradient
/// GEMM of the same FLOPs; memory-bound ops read their inputs and the incoming gradient.
[[nodiscard]] std::vector<Operation> layer_backward_ops(const TransformerSpec& s, long micro_batch);
/// Embedding lookup forward (memory-bound).
[[nodiscard]] std::vector<Operation> embedding_forward_ops(const TransformerSpec& s,
                                                           long micro_batch);
/// Output head forward: the LM/MLM projection onto the vocabulary and its loss.
[[nodiscard]] std::vector<Operation> head_forward_ops(const TransformerSpec& s, long micro_batch);
/// Backward of a list of forward ops (the rule layer_backward_ops uses).
[[nodiscard]] std::vector<Operation> backward_of(const std::vector<Operation>& forward);

/// Training FLOPs per sequence the way papers count them (6 x params x tokens + attention),
/// for reporting model FLOP/s; not used for timing.
[[nodiscard]] double model_flops_per_sequence(const TransformerSpec& s);

}  // namespace trainsim::model

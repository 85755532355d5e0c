#pragma once
// An encoder-decoder transformer (T5; Raffel et al. 2020, "Exploring the Limits of Transfer
// Learning with a Unified Text-to-Text Transformer", JMLR 21, section 3.1) as groups of alike
// blocks: the encoder's (self-attention without a causal mask over seq_len tokens, FFN) and the
// decoder's (causal self-attention over decoder_seq_len tokens, cross-attention to the
// encoder's output, FFN). Every per-layer function of transformer.hpp takes one group's block
// spec; a decoder-only or encoder-only model is one group.
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace trainsim::model {

/// One kind of block and how many of it the model runs, in forward order.
struct BlockGroup {
  std::string name;       ///< "encoder", "decoder", or "layer" for a single stack
  TransformerSpec block;  ///< the spec a block of this group is computed with (its seq_len: its tokens)
  long count = 0;         ///< blocks of this kind
};

/// True when the spec has a decoder stack after its encoder (decoder_layers > 0).
[[nodiscard]] bool is_encoder_decoder(const TransformerSpec& s);
/// The decoder's tokens per sequence (decoder_seq_len, or seq_len when unset); for a single
/// stack, seq_len.
[[nodiscard]] long decoder_tokens(const TransformerSpec& s);
/// The model's block groups: {"layer", s, s.layers} for a single stack; the encoder's and the
/// decoder's blocks for an encoder-decoder.
[[nodiscard]] std::vector<BlockGroup> block_groups(const TransformerSpec& s);
/// Blocks of all groups.
[[nodiscard]] long total_blocks(const TransformerSpec& s);
/// Parameters of the largest block (an FSDP unit's size at its largest).
[[nodiscard]] double largest_block_parameters(const TransformerSpec& s);
/// Parameters of every block (all groups).
[[nodiscard]] double block_parameters(const TransformerSpec& s);
/// The blocks' forward FLOPs per sequence as papers count them: 2 x parameters x tokens (a
/// cross-attention's k and v on the encoder's tokens) plus 4 x heads x head_dim x s_q x s_k per
/// attention, no causal halving.
[[nodiscard]] double blocks_forward_flops_per_sequence(const TransformerSpec& s);

}  // namespace trainsim::model

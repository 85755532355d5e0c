#include "model/encoder_decoder.hpp"

#include <algorithm>

namespace trainsim::model {

bool is_encoder_decoder(const TransformerSpec& s) { return s.decoder_layers > 0; }

long decoder_tokens(const TransformerSpec& s) {
  return is_encoder_decoder(s) && s.decoder_seq_len > 0 ? s.decoder_seq_len : s.seq_len;
}

std::vector<BlockGroup> block_groups(const TransformerSpec& s) {
  if (!is_encoder_decoder(s)) return {{"layer", s, s.layers}};
  TransformerSpec encoder = s;
  encoder.decoder_layers = 0;
  encoder.decoder_seq_len = 0;
  encoder.cross_seq_len = 0;
  encoder.causal = false;  // the encoder sees the whole input (T5Stack without is_decoder)
  TransformerSpec decoder = encoder;
  decoder.layers = s.decoder_layers;
  decoder.seq_len = decoder_tokens(s);
  decoder.causal = true;
  decoder.cross_seq_len = s.seq_len;  // keys and values of every encoder token
  return {{"encoder", encoder, s.layers}, {"decoder", decoder, s.decoder_layers}};
}

long total_blocks(const TransformerSpec& s) {
  long n = 0;
  for (const auto& g : block_groups(s)) n += g.count;
  return n;
}

double largest_block_parameters(const TransformerSpec& s) {
  double p = 0;
  for (const auto& g : block_groups(s)) p = std::max(p, parameters_per_layer(g.block));
  return p;
}

double block_parameters(const TransformerSpec& s) {
  double p = 0;
  for (const auto& g : block_groups(s)) p += static_cast<double>(g.count) * parameters_per_layer(g.block);
  return p;
}

double blocks_forward_flops_per_sequence(const TransformerSpec& s) {
  double flops = 0;
  for (const auto& g : block_groups(s)) {
    const TransformerSpec& b = g.block;
    const double h = static_cast<double>(b.hidden);
    const double d = b.head_dim > 0 ? static_cast<double>(b.head_dim) : h / static_cast<double>(b.heads);
    const double hq = static_cast<double>(b.heads) * d, hkv = static_cast<double>(kv_heads_of(b)) * d;
    const double sq = static_cast<double>(b.seq_len), sk = static_cast<double>(b.cross_seq_len);
    double per_block = 2.0 * parameters_per_layer(b) * sq + 4.0 * hq * sq * sq;
    // The cross-attention's k and v project the encoder's sk tokens, not the decoder's sq, and
    // its scores are sq x sk.
    if (b.cross_seq_len > 0) per_block += 2.0 * 2 * h * hkv * (sk - sq) + 4.0 * hq * sq * sk;
    flops += static_cast<double>(g.count) * per_block;
  }
  return flops;
}

}  // namespace trainsim::model

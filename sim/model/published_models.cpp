#include "model/published_models.hpp"

namespace trainsim::model {

TransformerSpec llama3_8b(long seq_len) {
  TransformerSpec s;
  s.name = "Llama-3 8B";
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.kv_heads = 8;
  s.ffn_hidden = 14336;
  s.vocab = 128256;
  s.seq_len = seq_len;
  s.mlp = MlpKind::swiglu;
  s.norm = NormKind::rmsnorm;
  s.bias = false;
  s.learned_positions = false;
  s.tied_embeddings = false;
  s.embedding_norm = false;
  s.final_norm = true;
  s.dropout = false;
  return s;
}

TransformerSpec t5_11b(long decoder_seq_len) {
  TransformerSpec s;
  s.name = "T5-11B";
  s.layers = 24;
  s.decoder_layers = 24;
  s.hidden = 1024;
  s.heads = 128;
  s.head_dim = 128;
  s.ffn_hidden = 65536;
  s.vocab = 32128;
  s.seq_len = 512;
  s.decoder_seq_len = decoder_seq_len;
  s.mlp = MlpKind::relu;
  s.norm = NormKind::rmsnorm;
  s.bias = false;
  s.learned_positions = false;
  s.tied_embeddings = true;
  s.embedding_norm = false;
  s.final_norm = true;
  s.causal = false;
  s.relative_position_bias = true;
  return s;
}

}  // namespace trainsim::model

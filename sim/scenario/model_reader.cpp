#include "scenario/model_reader.hpp"

#include <string>

namespace trainsim::scenario {

model::TransformerSpec read_model(JsonObject o) {
  model::TransformerSpec m;
  // Family defaults: BERT (post-norm encoder, learned positions, tied MLM decoder), GPT (GPT-2/3:
  // learned positions, tied head, final layer norm), Llama (RMSNorm, SwiGLU, rotary, no biases,
  // no dropout, untied head), T5 (an encoder-decoder: T5LayerNorm, an RMS norm without bias or
  // mean; ReLU FFN; no biases; relative position bias instead of a position table; tied head
  // with dropout, as t5-11b's config.json: Hugging Face google-t5/t5-11b, model_type "t5",
  // feed_forward_proj "relu", tie_word_embeddings default true; Raffel et al. 2020, 3.1).
  const std::string arch = o.choice_or("architecture", {"bert", "gpt", "llama", "t5"}, "bert");
  const bool t5 = arch == "t5";
  if (arch == "gpt") {
    m.embedding_norm = false;
    m.final_norm = true;
  } else if (arch == "llama") {
    m.mlp = model::MlpKind::swiglu;
    m.norm = model::NormKind::rmsnorm;
    m.bias = false;
    m.learned_positions = false;
    m.tied_embeddings = false;
    m.embedding_norm = false;
    m.final_norm = true;
    m.dropout = false;
  } else if (t5) {
    m.mlp = model::MlpKind::relu;
    m.norm = model::NormKind::rmsnorm;
    m.bias = false;
    m.learned_positions = false;
    m.embedding_norm = false;
    m.final_norm = true;
    m.relative_position_bias = true;
  }
  m.name = o.string("name");
  m.layers = o.positive_integer("layers");
  m.hidden = o.positive_integer("hidden");
  m.heads = o.positive_integer("heads");
  m.kv_heads = o.positive_integer_or("kv_heads", m.heads);
  // Channels per head apart from hidden / heads: T5's. Context parallelism, selective
  // checkpointing and FP8 still take hidden / heads, and T5 is kept from them (scenario.cpp).
  if (o.has("head_dim") && !t5)
    o.fail("head_dim", "is modelled for architecture \"t5\" only (other architectures have hidden / heads channels per head)");
  m.head_dim = o.has("head_dim") ? o.positive_integer("head_dim") : 0;
  m.ffn_hidden = o.positive_integer_or("ffn_hidden", 4 * m.hidden);
  m.vocab = o.positive_integer("vocab");
  m.seq_len = o.positive_integer("seq_len");
  if (t5) {
    // The decoder's stack and tokens: as many blocks as the encoder and seq_len tokens unless set.
    m.decoder_layers = o.positive_integer_or("decoder_layers", m.layers);
    m.decoder_seq_len = o.positive_integer_or("decoder_seq_len", m.seq_len);
  } else {
    for (const char* key : {"decoder_layers", "decoder_seq_len"})
      if (o.has(key))
        o.fail(key, std::string("is a field of an encoder-decoder (architecture \"t5\"), not of architecture \"") +
                        arch + "\"");
  }
  m.mlm_head = o.boolean_or("mlm_head", false);
  const std::string mlp =
      o.choice_or("mlp", {"gelu", "swiglu", "squared_relu", "relu", "geglu"}, model::mlp_name(m.mlp));
  for (auto kind : {model::MlpKind::gelu, model::MlpKind::swiglu, model::MlpKind::squared_relu, model::MlpKind::relu,
                    model::MlpKind::geglu})
    if (mlp == model::mlp_name(kind)) m.mlp = kind;
  m.norm = o.choice_or("norm", {"layernorm", "rmsnorm"},
                       m.norm == model::NormKind::layernorm ? "layernorm" : "rmsnorm") == "layernorm"
               ? model::NormKind::layernorm
               : model::NormKind::rmsnorm;
  m.bias = o.boolean_or("bias", m.bias);
  m.learned_positions = o.boolean_or("learned_positions", m.learned_positions);
  m.tied_embeddings = o.boolean_or("tied_embeddings", m.tied_embeddings);
  m.embedding_norm = o.boolean_or("embedding_norm", m.embedding_norm);
  m.final_norm = o.boolean_or("final_norm", m.final_norm);
  m.dropout = o.boolean_or("dropout", m.dropout);
  if (t5 && o.has("causal"))
    o.fail("causal", "is fixed for an encoder-decoder (architecture \"t5\"): its encoder attends without a mask, its "
                     "decoder with a causal one");
  m.causal = o.boolean_or("causal", arch != "bert" && !t5);
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    o.fail("heads", "hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" +
                        std::to_string(m.heads) + ")");
  if (m.heads % m.kv_heads != 0)
    o.fail("kv_heads", "heads (" + std::to_string(m.heads) + ") must be a multiple of kv_heads (" +
                           std::to_string(m.kv_heads) + ")");
  o.allow("source");
  o.allow("note");
  o.finish();
  return m;
}

}  // namespace trainsim::scenario

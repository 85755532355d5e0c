#include "scenario/model_reader.hpp"

#include <string>

namespace trainsim::scenario {

model::TransformerSpec read_model(JsonObject o) {
  model::TransformerSpec m;
  // Family defaults: BERT (post-norm encoder, learned positions, tied MLM decoder), GPT (GPT-2/3:
  // learned positions, tied head, final layer norm), Llama (RMSNorm, SwiGLU, rotary, no biases,
  // no dropout, untied head).
  const std::string arch = o.choice_or("architecture", {"bert", "gpt", "llama"}, "bert");
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
  }
  m.name = o.string("name");
  m.layers = o.positive_integer("layers");
  m.hidden = o.positive_integer("hidden");
  m.heads = o.positive_integer("heads");
  m.kv_heads = o.positive_integer_or("kv_heads", m.heads);
  m.ffn_hidden = o.positive_integer_or("ffn_hidden", 4 * m.hidden);
  m.vocab = o.positive_integer("vocab");
  m.seq_len = o.positive_integer("seq_len");
  m.mlm_head = o.boolean_or("mlm_head", false);
  const std::string mlp = o.choice_or("mlp", {"gelu", "swiglu", "squared_relu"}, model::mlp_name(m.mlp));
  m.mlp = mlp == "gelu" ? model::MlpKind::gelu : mlp == "swiglu" ? model::MlpKind::swiglu : model::MlpKind::squared_relu;
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
  m.causal = o.boolean_or("causal", arch != "bert");
  if (m.hidden % m.heads != 0)
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

#include "named_models.hpp"

namespace trainsim::validate {

namespace {

NamedModel make(const char* name, long hidden, long heads, long seq, long micro_batch,
                const char* source) {
  NamedModel m;
  m.spec.name = name;
  m.spec.layers = 1;
  m.spec.hidden = hidden;
  m.spec.heads = heads;
  m.spec.ffn_hidden = 4 * hidden;
  m.spec.seq_len = seq;
  m.spec.vocab = 0;  // the layer check runs no embedding or head
  m.micro_batch = micro_batch;
  m.source = source;
  return m;
}

}  // namespace

const std::vector<NamedModel>& named_models() {
  static const std::vector<NamedModel> models = {
      make("bert-large", 1024, 16, 512, 8, "Devlin et al. 2018, BERT-Large"),
      make("gpt-1.7b", 2304, 24, 2048, 4, "Narayanan et al. 2021, Table 1, 1.7B"),
      make("gpt-7.5b", 4096, 32, 2048, 1, "Narayanan et al. 2021, Table 1, 7.5B"),
      make("gpt-18b", 6144, 48, 2048, 1, "Narayanan et al. 2021, Table 1, 18.4B"),
  };
  return models;
}

std::optional<NamedModel> find_named_model(const std::string& name) {
  for (const auto& m : named_models())
    if (name == m.spec.name) return m;
  return std::nullopt;
}

}  // namespace trainsim::validate

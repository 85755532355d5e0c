#pragma once
// Transformer layers `trainsim-validate layer --model NAME` knows, with the micro-batch they are
// checked at. Shapes are the published ones; their hidden sizes and token counts are deliberately
// not among gemm_sweep.hpp's, so the check exercises the throughput curve's interpolation.
#include <optional>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace trainsim::validate {

struct NamedModel {
  model::TransformerSpec spec;  ///< `layers` is 1: the harness runs one layer
  long micro_batch = 1;         ///< default micro-batch (sequences)
  const char* source = "";
};

/// bert-large (1024 hidden, 16 heads, seq 512), gpt-1.7b (2304, 24, 2048), gpt-7.5b (4096, 32,
/// 2048), gpt-18b (6144, 48, 2048): the last three are Megatron-LM's Table 1 (Narayanan et al.
/// 2021).
[[nodiscard]] const std::vector<NamedModel>& named_models();
[[nodiscard]] std::optional<NamedModel> find_named_model(const std::string& name);

}  // namespace trainsim::validate

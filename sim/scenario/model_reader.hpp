#pragma once
// A scenario's "model" object -> TransformerSpec. "architecture" (bert, gpt, llama) sets the
// family's defaults; every field may still be given explicitly.
#include "core/json_reader.hpp"
#include "model/transformer.hpp"

namespace trainsim::scenario {

/// Reads and validates a model object; ConfigError naming the field on bad input.
[[nodiscard]] model::TransformerSpec read_model(JsonObject o);

}  // namespace trainsim::scenario

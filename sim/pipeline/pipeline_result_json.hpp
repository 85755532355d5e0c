#pragma once
// PipelineResult to JSON and back (a child process hands it to its parent; reports print it).
#include <nlohmann/json.hpp>

#include "pipeline/pipeline_result.hpp"

namespace trainsim::pipeline {

[[nodiscard]] nlohmann::ordered_json to_json(const PipelineResult& r);
[[nodiscard]] PipelineResult pipeline_result_from_json(const nlohmann::json& j);

}  // namespace trainsim::pipeline

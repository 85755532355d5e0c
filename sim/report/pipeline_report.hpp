#pragma once
// The input pipeline and batch-size notes in reports: first vs later epoch, the data source,
// diagnoses with their evidence; the global batch in tokens (warning above 4M, source 000)
// and the linear learning-rate scaling hint (source 001).
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "scenario/point_runner.hpp"

namespace trainsim::report {

/// A point's global batch (sequences per optimizer step over every data-parallel replica).
struct GlobalBatch {
  double samples = 0;
  double tokens = 0;                 ///< samples x sequence length
  double learning_rate_factor = 1;   ///< samples / the first point's (source 001's linear rule)
  bool above_token_limit = false;    ///< tokens > 4M (source 000)
};

[[nodiscard]] GlobalBatch global_batch(const scenario::Point& p, const scenario::Point& first);
[[nodiscard]] nlohmann::ordered_json global_batch_json(const GlobalBatch& g);

/// The global-batch lines of every scenario, then (with a data pipeline) the diagnosis
/// thresholds and each point's epochs and diagnoses.
void write_pipeline_notes(std::ostream& os, const scenario::Scenario& s,
                          const std::vector<scenario::PointResult>& results);

/// Extra CSV columns, only for scenarios with a data pipeline ("" otherwise).
[[nodiscard]] std::string pipeline_csv_header(const scenario::Scenario& s);
[[nodiscard]] std::string pipeline_csv_fields(const scenario::Scenario& s, const scenario::PointResult& r);

}  // namespace trainsim::report

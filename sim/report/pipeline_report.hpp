#pragma once
// The input pipeline and batch-size notes in reports: first vs later epoch, the data source,
// diagnoses with their evidence; the global batch in tokens (warning above 4M, source 000)
// and the linear learning-rate scaling hint (source 001).
#include <ostream>
#include <vector>

#include "scenario/point_runner.hpp"

namespace trainsim::report {

void write_pipeline_notes(std::ostream& os, const scenario::Scenario& s,
                          const std::vector<scenario::PointResult>& results);

/// Extra CSV columns, only for scenarios with a data pipeline ("" otherwise).
[[nodiscard]] std::string pipeline_csv_header(const scenario::Scenario& s);
[[nodiscard]] std::string pipeline_csv_fields(const scenario::Scenario& s, const scenario::PointResult& r);

}  // namespace trainsim::report

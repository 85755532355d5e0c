#pragma once
// The line under a scenario's table that says how far the points not used for fitting are from
// their references. A point is compared on the quantity its source publishes: samples per second
// where it gives one, otherwise TFLOP/s per accelerator (Megatron-LM's tables and figures report
// only that), so a scenario whose references are all TFLOP/s gets the same summary as the others.
#include <string>
#include <vector>

namespace trainsim::report {

enum class ErrorBasis { samples_per_s, tflops_per_accelerator };

struct ReferenceError {
  double error_pct = 0;  ///< (predicted - reference) / reference, percent
  bool fitted = false;   ///< the point was used to fit a constant: left out of the summary
  ErrorBasis basis = ErrorBasis::samples_per_s;
};

struct ErrorSummary {
  int rows = 0;  ///< points with a reference that were not fitted
  double mean_abs_pct = 0;
  double max_abs_pct = 0;
  int tflops_rows = 0;  ///< of `rows`, those compared on TFLOP/s per accelerator
};

[[nodiscard]] ErrorSummary summarise_errors(const std::vector<ReferenceError>& errors);

/// "non-fitted rows: N, mean |error| X%, max |error| Y%", naming the TFLOP/s basis when rows were
/// compared on it; empty when no row counts.
[[nodiscard]] std::string summary_line(const ErrorSummary& summary);

}  // namespace trainsim::report

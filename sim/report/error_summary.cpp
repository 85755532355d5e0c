#include "report/error_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainsim::report {

ErrorSummary summarise_errors(const std::vector<ReferenceError>& errors) {
  ErrorSummary s;
  double sum_abs = 0;
  for (const auto& e : errors) {
    if (e.fitted) continue;
    const double a = std::fabs(e.error_pct);
    sum_abs += a;
    s.max_abs_pct = std::max(s.max_abs_pct, a);
    ++s.rows;
    if (e.basis == ErrorBasis::tflops_per_accelerator) ++s.tflops_rows;
  }
  if (s.rows > 0) s.mean_abs_pct = sum_abs / s.rows;
  return s;
}

std::string summary_line(const ErrorSummary& summary) {
  if (summary.rows == 0) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "non-fitted rows: %d, mean |error| %.1f%%, max |error| %.1f%%", summary.rows,
                summary.mean_abs_pct, summary.max_abs_pct);
  std::string line = buf;
  if (summary.tflops_rows == summary.rows)
    line += " (TFLOP/s per accelerator)";
  else if (summary.tflops_rows > 0)
    line += " (seq/s; TFLOP/s per accelerator on the " + std::to_string(summary.tflops_rows) +
            " rows with only that reference)";
  return line;
}

}  // namespace trainsim::report

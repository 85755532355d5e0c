#pragma once
// Scenario results as the source's table (prediction beside reference, with errors), as JSON
// for tools and as CSV. Output depends only on the results, so identical inputs give identical
// bytes (sim_wall_s, the one measured quantity, is only in JSON and CSV unless suppressed).
#include <optional>
#include <ostream>
#include <vector>

#include "report/error_summary.hpp"
#include "report/reference_bound.hpp"
#include "scenario/point_runner.hpp"

namespace trainsim::report {

struct Row {
  const scenario::PointResult* result;
  double per_accelerator = 0;
  double scaling_efficiency = 0;  ///< per-accelerator throughput relative to scaling_base's
  double reference_per_accelerator = 0;
  double reference_efficiency = 0;
  double error_pct = 0;  ///< (predicted - reference) / reference
  bool has_reference = false;
  /// FLOP/s per accelerator, TFLOP/s: the model's (6 x parameters x tokens + attention) plus what
  /// checkpointing recomputes (full: the layers' forward, as Megatron-LM counts; selective_op: the
  /// recomputed matmuls; selective_attention: the core attention's two batched matmuls, 4 s^2 h
  /// per layer and sequence, where Korthikanti et al.'s HFU formula counts 12 s^2 h).
  double tflops_per_accelerator = 0;
  double tflops_error_pct = 0;  ///< against reference_tflops_per_accelerator
  bool has_tflops_reference = false;
  /// Against reference_tflops_per_accelerator_at_least, for a simulated point that has one.
  std::optional<BoundVerdict> tflops_bound;
};

/// "simulated", "oom" or "not_simulated".
[[nodiscard]] const char* status_of(const scenario::PointResult& r);

/// The point simulated scaling efficiency is relative to: the first one simulated (the first
/// point where none was); null for no points.
[[nodiscard]] const scenario::PointResult* scaling_base(const std::vector<scenario::PointResult>& results);

/// The quantity a row is compared on in the summary line: samples per second where the point has
/// that reference, else TFLOP/s per accelerator; nothing for a row without either.
[[nodiscard]] std::optional<ReferenceError> reference_error(const Row& row);

[[nodiscard]] std::vector<Row> make_rows(const std::vector<scenario::PointResult>& results);

void write_table(std::ostream& os, const scenario::Scenario& s,
                 const std::vector<scenario::PointResult>& results);
/// `wall_time`: include sim_wall_s (false writes null, for byte-identical output).
void write_json(std::ostream& os, const scenario::Scenario& s,
                const std::vector<scenario::PointResult>& results, bool wall_time);
void write_csv(std::ostream& os, const scenario::Scenario& s,
               const std::vector<scenario::PointResult>& results, bool wall_time);

}  // namespace trainsim::report

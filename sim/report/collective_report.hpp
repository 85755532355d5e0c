#pragma once
// `trainsim collective` results as nccl-tests columns (size, count, time, algbw, busbw) plus the
// algorithm and protocol the tuner chose; with a reference file, the measured busbw, the error
// per point, which points were fitted, and the geometric-mean error per size band.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collective/measurement_file.hpp"
#include "scenario/collective_sweep.hpp"

namespace trainsim::report {

struct CollectiveRow {
  collective::Op op = collective::Op::all_reduce;
  int nodes = 1;
  scenario::SweepPoint point;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::optional<collective::MeasurementRow> reference;
  double error_pct = 0;  ///< (predicted - measured) / measured busbw, when there is a reference
  bool fitted = false;   ///< the reference row was used to fit a calibration value
};

/// Geometric-mean busbw error of one size band over the non-fitted points with a reference:
/// exp(mean |ln(predicted / measured)|) - 1.
struct BandError {
  std::string band;
  bool in_target = true;  ///< the issue's target counts sizes from 1 MiB up
  int points = 0;
  double geomean_error_pct = 0;
  double max_abs_error_pct = 0;
};

struct CollectiveReport {
  std::string topology;
  int ranks_per_node = 0;
  std::vector<CollectiveRow> rows;
  std::optional<collective::MeasurementFile> reference;
  std::vector<std::string> fitted;  ///< the calibration's fitted lines
  std::vector<BandError> bands;     ///< with a reference only
};

/// Fills bandwidths, reference matches (same op, nodes and size), errors and bands.
[[nodiscard]] CollectiveReport make_collective_report(
    std::string topology, int ranks_per_node, std::vector<CollectiveRow> rows,
    std::optional<collective::MeasurementFile> reference,
    const std::vector<std::string>& fitted_lines, const std::vector<std::string>& fitted_rows);

void write_collective_table(std::ostream& os, const CollectiveReport& r);
void write_collective_json(std::ostream& os, const CollectiveReport& r);
void write_collective_csv(std::ostream& os, const CollectiveReport& r);

}  // namespace trainsim::report

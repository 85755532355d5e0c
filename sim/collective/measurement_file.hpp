#pragma once
// Collective measurements in the trainsim.collective_measurements/1 format (validate/README.md):
// published nccl-tests curves shipped in validate/reference/, and files the GPU harness writes
// from real NCCL runs. `trainsim collective --compare FILE` reads them.
#include <optional>
#include <string>
#include <vector>

#include "collective/collective_plan.hpp"

namespace trainsim::collective {

struct MeasurementRow {
  Op op = Op::all_reduce;
  int nodes = 1;
  int ranks = 1;
  Bytes size = 0;                   ///< nccl-tests S
  std::optional<Seconds> time;      ///< absent when the source gives bandwidths only
  std::optional<double> algbw_gbps;
  double busbw_gbps = 0;
  std::string key;                  ///< "<file stem>#<op>/<nodes>/<size_bytes>": names it in `fitted`
};

struct MeasurementFile {
  std::string file;
  std::string stem;        ///< file name without directory and .json
  std::string method;      ///< "published" or "measured"
  std::string source;
  std::string date;
  std::string topology;    ///< topology file stem it was measured on, or ""
  std::vector<MeasurementRow> rows;
};

/// Loads and checks a measurements file: known keys only, positive numbers, busbw = algbw x
/// nccl-tests factor within 2% when both are given, no duplicate (op, nodes, size).
[[nodiscard]] MeasurementFile load_measurements(const std::string& path);

[[nodiscard]] std::string measurement_key(const std::string& stem, Op op, int nodes, Bytes size);

}  // namespace trainsim::collective

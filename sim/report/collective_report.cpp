#include "report/collective_report.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "collective/bus_bandwidth.hpp"
#include "core/text_format.hpp"

namespace trainsim::report {

namespace {

constexpr double kMiB = 1 << 20;

struct Band {
  const char* name;
  double lo, hi;  // bytes, [lo, hi)
  bool in_target;
};
const Band kBands[] = {
    {"< 1 MiB (outside target)", 0, kMiB, false},
    {"1 - 16 MiB", kMiB, 16 * kMiB, true},
    {"16 - 256 MiB", 16 * kMiB, 256 * kMiB, true},
    {">= 256 MiB", 256 * kMiB, 1e300, true},
    {"all >= 1 MiB", kMiB, 1e300, true},
};

using text::fmt;
using text::pad;

/// nccl-tests-style size: 8, 1K, 64M, 8G (binary); plain bytes otherwise.
std::string size_label(double b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  double v = b;
  while (u < 4 && v >= 1024 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  return fmt("%.0f", v) + units[u];
}

}  // namespace

CollectiveReport make_collective_report(std::string topology, int ranks_per_node,
                                        std::vector<CollectiveRow> rows,
                                        std::optional<collective::MeasurementFile> reference,
                                        const std::vector<std::string>& fitted_lines,
                                        const std::vector<std::string>& fitted_rows) {
  CollectiveReport r;
  r.topology = std::move(topology);
  r.ranks_per_node = ranks_per_node;
  r.fitted = fitted_lines;
  for (auto& row : rows) {
    row.algbw_gbps = collective::algbw_gbps(row.point.size, row.point.time);
    row.busbw_gbps = row.algbw_gbps * collective::bus_factor(row.op, row.point.ranks);
    if (!reference) continue;
    for (const auto& m : reference->rows)
      if (m.op == row.op && m.nodes == row.nodes && m.size == row.point.size) row.reference = m;
    if (!row.reference) continue;
    row.error_pct = 100 * (row.busbw_gbps / row.reference->busbw_gbps - 1);
    row.fitted = std::find(fitted_rows.begin(), fitted_rows.end(), row.reference->key) !=
                 fitted_rows.end();
  }
  r.rows = std::move(rows);
  if (reference) {
    for (const auto& b : kBands) {
      BandError e;
      e.band = b.name;
      e.in_target = b.in_target;
      double sum = 0;
      for (const auto& row : r.rows) {
        if (!row.reference || row.fitted || row.point.size < b.lo || row.point.size >= b.hi)
          continue;
        ++e.points;
        sum += std::abs(std::log(row.busbw_gbps / row.reference->busbw_gbps));
        e.max_abs_error_pct = std::max(e.max_abs_error_pct, std::abs(row.error_pct));
      }
      if (e.points > 0) e.geomean_error_pct = 100 * (std::exp(sum / e.points) - 1);
      r.bands.push_back(e);
    }
    r.reference = std::move(reference);
  }
  return r;
}

void write_collective_table(std::ostream& os, const CollectiveReport& r) {
  const bool ref = r.reference.has_value();
  std::size_t i = 0;
  while (i < r.rows.size()) {
    const auto& first = r.rows[i];
    os << collective::op_name(first.op) << " on " << r.topology << ", " << first.nodes
       << (first.nodes == 1 ? " node" : " nodes") << " x " << r.ranks_per_node
       << " accelerators (" << first.point.ranks << " ranks in the collective), float32\n";
    os << pad("size", 12) << pad("count", 13) << pad("time(us)", 12) << pad("algbw(GB/s)", 13)
       << pad("busbw(GB/s)", 13) << "  " << pad("algorithm", 10, true) << pad("protocol", 9, true);
    if (ref) os << pad("ref busbw", 11) << pad("error", 9) << "  fitted";
    os << "\n";
    for (; i < r.rows.size() && r.rows[i].op == first.op && r.rows[i].nodes == first.nodes; ++i) {
      const auto& row = r.rows[i];
      os << pad(size_label(row.point.size), 12) << pad(fmt("%.0f", row.point.size / 4), 13)
         << pad(fmt("%.2f", row.point.time * 1e6), 12) << pad(fmt("%.2f", row.algbw_gbps), 13)
         << pad(fmt("%.2f", row.busbw_gbps), 13) << "  " << pad(row.point.algorithm, 10, true)
         << pad(row.point.protocol, 9, true);
      if (ref && row.reference)
        os << pad(fmt("%.2f", row.reference->busbw_gbps), 11)
           << pad(fmt("%+.1f%%", row.error_pct), 9) << "  " << (row.fitted ? "yes" : "no");
      os << "\n";
    }
    os << "\n";
  }
  if (!ref) return;
  os << "reference: " << r.reference->file << " (" << r.reference->method << ": "
     << r.reference->source << ")\n";
  os << "busbw error on the points not used for fitting, geometric mean of |ln(sim/measured)|:\n";
  os << "  " << pad("size band", 26, true) << pad("points", 7) << pad("geomean", 10)
     << pad("max", 9) << "\n";
  for (const auto& b : r.bands)
    os << "  " << pad(b.band, 26, true) << pad(std::to_string(b.points), 7)
       << pad(b.points ? fmt("%.1f%%", b.geomean_error_pct) : "-", 10)
       << pad(b.points ? fmt("%.1f%%", b.max_abs_error_pct) : "-", 9) << "\n";
  os << "fitted calibration values (their rows are marked fitted above):\n";
  for (const auto& f : r.fitted) os << "  " << f << "\n";
}

void write_collective_json(std::ostream& os, const CollectiveReport& r) {
  nlohmann::ordered_json out;
  out["schema"] = "trainsim.collective_results/1";
  out["topology"] = r.topology;
  auto& rows = out["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    nlohmann::ordered_json j;
    j["nodes"] = row.nodes;
    j["ranks"] = row.point.ranks;
    j["op"] = collective::op_name(row.op);
    j["size_bytes"] = row.point.size;
    j["count"] = row.point.size / 4;
    j["time_us"] = row.point.time * 1e6;
    j["algbw_gbps"] = row.algbw_gbps;
    j["busbw_gbps"] = row.busbw_gbps;
    j["algorithm"] = row.point.algorithm;
    j["protocol"] = row.point.protocol;
    j["predicted_time_us"] = row.point.predicted * 1e6;
    if (row.reference) {
      j["reference_busbw_gbps"] = row.reference->busbw_gbps;
      j["error_pct"] = row.error_pct;
      j["fitted"] = row.fitted;
    }
    rows.push_back(j);
  }
  if (r.reference) {
    out["reference"] = r.reference->file;
    auto& bands = out["error_bands"] = nlohmann::ordered_json::array();
    for (const auto& b : r.bands)
      bands.push_back({{"band", b.band},
                       {"in_target", b.in_target},
                       {"points", b.points},
                       {"geomean_error_pct", b.geomean_error_pct},
                       {"max_abs_error_pct", b.max_abs_error_pct}});
    out["fitted"] = r.fitted;
  }
  os << out.dump(2) << "\n";
}

void write_collective_csv(std::ostream& os, const CollectiveReport& r) {
  os << "nodes,ranks,op,size_bytes,count,time_us,algbw_gbps,busbw_gbps,algorithm,protocol";
  if (r.reference) os << ",reference_busbw_gbps,error_pct,fitted";
  os << "\n";
  for (const auto& row : r.rows) {
    os << row.nodes << "," << row.point.ranks << "," << collective::op_name(row.op) << ","
       << fmt("%.0f", row.point.size) << "," << fmt("%.0f", row.point.size / 4) << ","
       << fmt("%.3f", row.point.time * 1e6) << "," << fmt("%.4f", row.algbw_gbps) << ","
       << fmt("%.4f", row.busbw_gbps) << "," << row.point.algorithm << "," << row.point.protocol;
    if (r.reference) {
      if (row.reference)
        os << "," << fmt("%.2f", row.reference->busbw_gbps) << "," << fmt("%.2f", row.error_pct)
           << "," << (row.fitted ? "yes" : "no");
      else
        os << ",,,";
    }
    os << "\n";
  }
}

}  // namespace trainsim::report

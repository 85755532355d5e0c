#include "report/pipeline_report.hpp"

#include <cstdio>

namespace trainsim::report {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

constexpr double kTokenWarning = 4e6;  // source 000: most studies keep the global batch under 4M tokens

}  // namespace

void write_pipeline_notes(std::ostream& os, const scenario::Scenario& /*s*/,
                          const std::vector<scenario::PointResult>& results) {
  if (results.empty()) return;
  os << "\nglobal batch (source 000: keep under 4M tokens; source 001: scale the learning rate "
        "linearly with it, with warm-up):\n";
  // Sequences per optimizer step: micro-batch x accumulation x data-parallel replicas (tensor
  // and pipeline ranks of one replica see the same sequences).
  auto global_batch = [](const scenario::Point& p) {
    return static_cast<double>(p.layout.dp * p.training.micro_batch * p.training.accumulation);
  };
  const double first = global_batch(results.front().point);
  for (const auto& r : results) {
    const double samples = global_batch(r.point);
    const double tokens = samples * static_cast<double>(r.point.model.seq_len);
    os << "  " << r.point.label << ": " << fmt("%.0f", samples) << " samples = " << fmt("%.3g", tokens)
       << " tokens, learning rate x" << fmt("%.3g", samples / first) << " of the first point's";
    if (tokens > kTokenWarning) os << "  WARNING: above 4M tokens";
    os << "\n";
  }
  for (const auto& r : results) {
    if (!r.pipeline) continue;
    const auto& pl = *r.pipeline;
    os << "\n" << r.point.label << " -- " << pl.source << "\n";
    os << "  compute-bound " << fmt("%.1f", pl.compute_bound_samples_per_s) << " samples/s, "
       << pl.steps_per_epoch << " steps per epoch\n";
    for (std::size_t e = 0; e < pl.epochs.size(); ++e) {
      const auto& x = pl.epochs[e];
      os << "  epoch " << e + 1 << ": " << fmt("%.1f", x.samples_per_s) << " samples/s in "
         << fmt("%.1f", x.time) << " s; waiting for data " << fmt("%.1f%%", 100 * x.wait_fraction)
         << " (reads " << fmt("%.1f%%", 100 * x.io_wait_fraction) << ", pre-processing "
         << fmt("%.1f%%", 100 * x.cpu_wait_fraction) << "); accelerators busy "
         << fmt("%.1f%%", 100 * x.accelerator_utilisation) << ", vCPUs "
         << fmt("%.1f%%", 100 * x.cpu_utilisation) << "; read " << format_bytes(x.bytes_disk)
         << " from disk, " << format_bytes(x.bytes_server_cache) << " from server cache, "
         << format_bytes(x.bytes_page_cache) << " from page cache\n";
    }
    if (pl.diagnoses.empty()) os << "  diagnoses: none\n";
    for (const auto& d : pl.diagnoses)
      os << "  " << d.rule << " (epoch " << d.epoch << "): " << d.evidence << "\n";
  }
}

std::string pipeline_csv_header(const scenario::Scenario& s) {
  return s.data ? ",first_epoch_samples_per_s,later_epoch_samples_per_s,first_epoch_io_wait,"
                  "later_epoch_io_wait,diagnoses"
                : "";
}

std::string pipeline_csv_fields(const scenario::Scenario& s, const scenario::PointResult& r) {
  if (!s.data) return "";
  if (!r.pipeline) return ",,,,,";
  const auto& e = r.pipeline->epochs;
  std::string diag;
  for (const auto& d : r.pipeline->diagnoses)
    diag += (diag.empty() ? "" : " ") + d.rule + "@" + std::to_string(d.epoch);
  return "," + fmt("%.6g", e.front().samples_per_s) + "," + fmt("%.6g", e.back().samples_per_s) + "," +
         fmt("%.4f", e.front().io_wait_fraction) + "," + fmt("%.4f", e.back().io_wait_fraction) +
         ",\"" + diag + "\"";
}

}  // namespace trainsim::report

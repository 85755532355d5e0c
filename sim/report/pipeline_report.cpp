#include "report/pipeline_report.hpp"

#include "core/text_format.hpp"

namespace trainsim::report {

namespace {

using text::fmt;

// Source 000: most studies keep the global batch under 4M tokens. Its own fix (256 nodes, seq
// 4096, TP 2) lands on 256 x 8 / 2 x 4096 = 4,194,304 tokens and calls that 4M, so 4M is 2^22
// here and a batch of exactly that size passes.
constexpr double kTokenWarning = 4.0 * 1024 * 1024;

std::string pct(double v) { return fmt("%.3g%%", 100 * v); }

}  // namespace

GlobalBatch global_batch(const scenario::Point& p, const scenario::Point& first) {
  // Sequences per optimizer step: micro-batch x accumulation x data-parallel replicas (tensor
  // and pipeline ranks of one replica see the same sequences).
  auto samples_of = [](const scenario::Point& q) {
    return static_cast<double>(q.layout.dp * q.training.micro_batch * q.training.accumulation);
  };
  GlobalBatch g;
  g.samples = samples_of(p);
  g.tokens = g.samples * static_cast<double>(p.model.seq_len);
  g.learning_rate_factor = g.samples / samples_of(first);
  g.above_token_limit = g.tokens > kTokenWarning;
  return g;
}

nlohmann::ordered_json global_batch_json(const GlobalBatch& g) {
  nlohmann::ordered_json j;
  j["samples"] = g.samples;
  j["tokens"] = g.tokens;
  j["learning_rate_factor"] = g.learning_rate_factor;
  j["above_4m_tokens"] = g.above_token_limit;
  return j;
}

void write_pipeline_notes(std::ostream& os, const scenario::Scenario& s,
                          const std::vector<scenario::PointResult>& results) {
  if (results.empty()) return;
  os << "\nglobal batch (source 000: keep under 4M tokens; source 001: scale the learning rate "
        "linearly with it, with warm-up):\n";
  for (const auto& r : results) {
    const auto g = global_batch(r.point, results.front().point);
    os << "  " << r.point.label << ": " << fmt("%.0f", g.samples) << " samples = " << fmt("%.3g", g.tokens)
       << " tokens, learning rate x" << fmt("%.3g", g.learning_rate_factor) << " of the first point's";
    if (g.above_token_limit) os << "  WARNING: above 4M tokens";
    os << "\n";
  }
  if (s.data) {
    const auto& t = s.data->diagnosis;
    os << "\ndiagnosis thresholds (assumptions; \"data.diagnosis\" sets them): IO/CPUBottleneck when "
          "waiting on it > "
       << pct(t.wait) << " of the epoch or vCPUs busy > " << pct(t.cpu_utilisation)
       << "; LowGPUUtilization when accelerators are busy < " << pct(t.accelerator_utilisation)
       << "; LoadBalancing when node waits differ by > " << pct(t.node_spread) << " of the epoch\n";
  }
  for (const auto& r : results) {
    if (!r.pipeline) continue;
    const auto& pl = *r.pipeline;
    os << "\n" << r.point.label << " -- " << pl.source << "\n";
    os << "  data read by " << pl.readers << "\n";
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

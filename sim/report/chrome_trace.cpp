#include "report/chrome_trace.hpp"

#include <nlohmann/json.hpp>

namespace trainsim::report {

void write_chrome_trace(std::ostream& os, const scenario::Scenario& s,
                        const std::vector<scenario::PointResult>& results) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    // Process ids group a point's ranks together in the viewer.
    const long base = static_cast<long>(i + 1) * 1000000L;
    for (int rank = 0; rank < r.accelerators; ++rank) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", base + rank},
                        {"args", {{"name", s.name + " " + r.point.label + " rank " + std::to_string(rank)}}}});
    }
    for (const auto& sp : r.spans) {
      events.push_back({{"ph", "X"},
                        {"name", sp.name},
                        {"cat", sp.phase},
                        {"pid", base + sp.rank},
                        {"tid", sp.stream},
                        {"ts", sp.start * 1e6},
                        {"dur", (sp.end - sp.start) * 1e6},
                        {"args", {{"stream", sp.stream_name}}}});
    }
    // Device memory of each rank as a counter track beside its streams (GiB).
    for (const auto& m : r.memory_samples) {
      events.push_back({{"ph", "C"},
                        {"name", "device memory (GiB)"},
                        {"pid", base + m.rank},
                        {"ts", m.time * 1e6},
                        {"args", {{"GiB", m.bytes / (1024.0 * 1024.0 * 1024.0)}}}});
    }
  }
  nlohmann::json doc{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  os << doc.dump() << "\n";
}

}  // namespace trainsim::report

#include "report/chrome_trace.hpp"

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

namespace trainsim::report {

namespace {

/// Flushed to the stream past this size: large writes, bounded memory.
constexpr std::size_t kBufferBytes = 1 << 20;

/// A number as nlohmann::json's dump() writes it (its own shortest round-trip format, which
/// std::to_chars does not match digit for digit); non-finite numbers become null as there.
void append_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  std::array<char, 64> digits{};
  const char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), x);
  out.append(digits.data(), static_cast<std::size_t>(end - digits.data()));
}

/// A string as a JSON string literal, escaped as nlohmann::json escapes it.
std::string quoted(const std::string& text) { return nlohmann::json(text).dump(); }

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::ostream& os) : os_(os) {
  buf_.reserve(kBufferBytes + 4096);
  // nlohmann::json objects sort their keys: "displayTimeUnit" comes before "traceEvents".
  buf_ += R"({"displayTimeUnit":"ms","traceEvents":[)";
}

void ChromeTraceWriter::begin_event() {
  if (!first_) buf_ += ',';
  first_ = false;
  if (buf_.size() > kBufferBytes) flush();
}

void ChromeTraceWriter::flush() {
  os_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void ChromeTraceWriter::add_point(const scenario::Scenario& s, std::size_t index,
                                  const scenario::PointResult& r) {
  // Process ids group a point's ranks together in the viewer.
  const long base = static_cast<long>(index + 1) * 1000000L;
  for (int rank = 0; rank < r.accelerators; ++rank) {
    if (!s.trace_ranks.contains(rank)) continue;
    begin_event();
    buf_ += R"({"args":{"name":)";
    buf_ += quoted(s.name + " " + r.point.label + " rank " + std::to_string(rank));
    buf_ += R"(},"name":"process_name","ph":"M","pid":)";
    buf_ += std::to_string(base + rank);
    buf_ += '}';
  }
  std::vector<std::string> names;  // each distinct name escaped once
  names.reserve(r.span_names.size());
  for (const auto& n : r.span_names) names.push_back(quoted(n));
  const auto& keep = s.trace_ranks;
  for (const auto& sp : r.spans) {
    if (!keep.contains(sp.rank)) continue;
    begin_event();
    buf_ += R"({"args":{"stream":)";
    buf_ += names[static_cast<std::size_t>(sp.stream_name)];
    buf_ += R"(},"cat":)";
    buf_ += names[static_cast<std::size_t>(sp.phase)];
    buf_ += R"(,"dur":)";
    append_number(buf_, (sp.end - sp.start) * 1e6);
    buf_ += R"(,"name":)";
    buf_ += names[static_cast<std::size_t>(sp.name)];
    buf_ += R"(,"ph":"X","pid":)";
    buf_ += std::to_string(base + sp.rank);
    buf_ += R"(,"tid":)";
    buf_ += std::to_string(sp.stream);
    buf_ += R"(,"ts":)";
    append_number(buf_, sp.start * 1e6);
    buf_ += '}';
  }
  // Device memory of each rank as a counter track beside its streams (GiB).
  for (const auto& m : r.memory_samples) {
    if (!keep.contains(m.rank)) continue;
    begin_event();
    buf_ += R"({"args":{"GiB":)";
    append_number(buf_, m.bytes / (1024.0 * 1024.0 * 1024.0));
    buf_ += R"~(},"name":"device memory (GiB)","ph":"C","pid":)~";
    buf_ += std::to_string(base + m.rank);
    buf_ += R"(,"ts":)";
    append_number(buf_, m.time * 1e6);
    buf_ += '}';
  }
}

void ChromeTraceWriter::finish() {
  buf_ += "]}\n";
  flush();
  os_.flush();
}

void write_chrome_trace(std::ostream& os, const scenario::Scenario& s,
                        const std::vector<scenario::PointResult>& results) {
  ChromeTraceWriter writer(os);
  for (std::size_t i = 0; i < results.size(); ++i) writer.add_point(s, i, results[i]);
  writer.finish();
}

}  // namespace trainsim::report

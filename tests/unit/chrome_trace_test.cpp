// The streamed Chrome trace against the document nlohmann::json would build and dump for the
// same events (how the trace was written before it was streamed): the same bytes, escapes and
// number formats included, and only the ranks asked for.
#include <gtest/gtest.h>

#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/chrome_trace.hpp"

namespace {

using trainsim::parse_rank_list;
using trainsim::report::write_chrome_trace;
using trainsim::scenario::PointResult;
using trainsim::scenario::Scenario;

/// The trace as one nlohmann::json document dumped at the end (the writer before streaming).
std::string dom_trace(const Scenario& s, const std::vector<PointResult>& results) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const long base = static_cast<long>(i + 1) * 1000000L;
    for (int rank = 0; rank < r.accelerators; ++rank)
      if (s.trace_ranks.contains(rank))
        events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", base + rank},
                          {"args", {{"name", s.name + " " + r.point.label + " rank " + std::to_string(rank)}}}});
    for (const auto& sp : r.spans)
      if (s.trace_ranks.contains(sp.rank))
        events.push_back({{"ph", "X"},
                          {"name", r.span_names[sp.name]},
                          {"cat", r.span_names[sp.phase]},
                          {"pid", base + sp.rank},
                          {"tid", sp.stream},
                          {"ts", sp.start * 1e6},
                          {"dur", (sp.end - sp.start) * 1e6},
                          {"args", {{"stream", r.span_names[sp.stream_name]}}}});
    for (const auto& m : r.memory_samples)
      if (s.trace_ranks.contains(m.rank))
        events.push_back({{"ph", "C"},
                          {"name", "device memory (GiB)"},
                          {"pid", base + m.rank},
                          {"ts", m.time * 1e6},
                          {"args", {{"GiB", m.bytes / (1024.0 * 1024.0 * 1024.0)}}}});
  }
  nlohmann::json doc{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return doc.dump() + "\n";
}

std::string streamed_trace(const Scenario& s, const std::vector<PointResult>& results) {
  std::ostringstream out;
  write_chrome_trace(out, s, results);
  return out.str();
}

/// Two points: names that need escaping (quote, backslash, newline, a control character,
/// UTF-8), times whose formats differ (zero, integral, thirds, tiny, huge), a point with no spans.
std::vector<PointResult> synthetic_results() {
  PointResult a;
  a.point.label = "4 \"nodes\"";
  a.accelerators = 3;
  a.span_names = {"layer 0 forward", "forward", "compute", "all_reduce \\ grads\n\x01", "communication",
                  "nccl é"};
  a.spans = {{0, 0, 0, 1, 2, 0.0, 1.0 / 3.0},
             {1, 0, 0, 1, 2, 1e-9, 2.0},
             {2, 1, 3, 4, 5, 1.0 / 3.0, 1e15},
             {1, 1, 3, 4, 5, 123.456789, 123.456789 + 1e-7}};
  a.memory_samples = {{0, 0.0, 8.0 * 1024 * 1024 * 1024}, {2, 0.5, 12345678901.0}, {1, 1e-6, 0.0}};
  PointResult b;
  b.point.label = "OOM row";
  b.accelerators = 2;
  return {a, b};
}

TEST(ChromeTrace, StreamedEqualsTheDumpedDocument) {
  Scenario s;
  s.name = "synthetic\ttrace";
  const auto results = synthetic_results();
  const std::string streamed = streamed_trace(s, results);
  EXPECT_EQ(streamed, dom_trace(s, results));
  // Three + two process names, four spans, three memory samples.
  EXPECT_EQ(nlohmann::json::parse(streamed).at("traceEvents").size(), 12u);
}

TEST(ChromeTrace, NoPointsIsAnEmptyEventList) {
  const Scenario s;
  EXPECT_EQ(streamed_trace(s, {}), "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[]}\n");
  EXPECT_EQ(streamed_trace(s, {}), dom_trace(s, {}));
}

TEST(ChromeTrace, OnlyTheRanksAskedFor) {
  Scenario s;
  s.name = "ranks";
  s.trace_ranks = parse_rank_list("1-2");
  const auto results = synthetic_results();
  const std::string streamed = streamed_trace(s, results);
  EXPECT_EQ(streamed, dom_trace(s, results));
  std::set<long> pids;
  const auto doc = nlohmann::json::parse(streamed);
  for (const auto& e : doc.at("traceEvents")) pids.insert(e.at("pid").get<long>());
  // Point 1's ranks 1 and 2 (pids 1000001, 1000002), point 2's rank 1 (2000001): no rank 0.
  EXPECT_EQ(pids, (std::set<long>{1000001, 1000002, 2000001}));
}

}  // namespace

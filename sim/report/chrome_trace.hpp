#pragma once
// Chrome / Perfetto trace-event JSON of every rank's streams: one process per (point, rank),
// one thread per stream, one complete event ("ph":"X") per task, in microseconds, and a counter
// track of each rank's device memory.
//
// Written as the points finish, event by event: a step of hundreds of ranks has millions of
// events, which as one JSON document in memory took more than the machine had. The bytes are
// those nlohmann::json's dump() gives for the same document (keys sorted, its number format).
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/point_runner.hpp"

namespace trainsim::report {

class ChromeTraceWriter {
public:
  /// Writes the document's opening to `os`, which must outlive the writer.
  explicit ChromeTraceWriter(std::ostream& os);
  /// Appends the tracks of point `index` (0-based, its place in the scenario) for the ranks in
  /// s.trace_ranks; nothing of `r` is kept, so the caller may free its spans.
  void add_point(const scenario::Scenario& s, std::size_t index, const scenario::PointResult& r);
  /// Closes the document; nothing may be added after.
  void finish();

private:
  void begin_event();
  void flush();
  std::ostream& os_;
  std::string buf_;
  bool first_ = true;
};

/// The whole trace of `results` at once (the points of `s` in order).
void write_chrome_trace(std::ostream& os, const scenario::Scenario& s,
                        const std::vector<scenario::PointResult>& results);

}  // namespace trainsim::report

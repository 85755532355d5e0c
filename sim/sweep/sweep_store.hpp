#pragma once
// A sweep's output folder. `sweep.json` identifies the sweep (scenario as read + axes);
// `points.jsonl` gets one line per finished point, appended and flushed as the point finishes,
// so a killed sweep rerun with the same folder skips what is already there (a line cut short by
// the kill is ignored and that point is redone). results.csv / results.json / plot.svg are
// rewritten from the finished points after each one (written to a temporary name, then renamed).
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace trainsim::sweep {

class SweepStore {
public:
  /// Creates `dir` if needed. Throws ConfigError when it holds a different sweep's results.
  SweepStore(std::string dir, const nlohmann::json& manifest);

  /// Records finished by earlier runs, by key.
  [[nodiscard]] const std::map<std::string, nlohmann::ordered_json>& finished() const {
    return finished_;
  }
  /// Appends a finished record (and flushes it to the file).
  void append(const nlohmann::ordered_json& record);
  /// Writes `text` to DIR/name atomically.
  void write_file(const std::string& name, const std::string& text) const;
  [[nodiscard]] const std::string& dir() const { return dir_; }

private:
  std::string dir_;
  std::map<std::string, nlohmann::ordered_json> finished_;
  std::ofstream log_;
};

}  // namespace trainsim::sweep

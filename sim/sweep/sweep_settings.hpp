#pragma once
// What a sweep varies: `--set PATH=V1,V2,...` axes and their cartesian product. A PATH is a
// dot-separated path into the scenario file: object keys and array indices
// (`training.micro_batch`, `storage.capacity`, `points.0.nodes`), or the shorthand `nodes`,
// which replaces the scenario's points by one point with that node count. The leaf must
// already exist in the file (a sweep changes settings, it never adds new ones). A value is
// taken as JSON when it parses as JSON (12, 2.5, true, "text") and as a string otherwise
// (1.2TiB), so units are written as in the scenario file.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainsim::sweep {

/// The shorthand path that sets the node count of every sweep point.
inline const char* const kNodesPath = "nodes";

struct Axis {
  std::string path;                   ///< as given on the command line
  std::vector<std::string> texts;     ///< the values as written, for CSV columns and keys
  std::vector<nlohmann::json> values; ///< the values as JSON
};

/// One element of the cartesian product: a value index per axis.
struct Combination {
  std::vector<std::size_t> choice;  ///< choice[a] indexes axes[a].values
};

/// Parses "PATH=V1,V2,..."; throws cli-independent std::invalid_argument on bad syntax.
[[nodiscard]] Axis parse_axis(const std::string& text);

/// Every combination, the last axis varying fastest.
[[nodiscard]] std::vector<Combination> cartesian_product(const std::vector<Axis>& axes);

/// Sets `path` to `value` in a scenario document. Throws ConfigError(file, JSON pointer of
/// the path, ...) naming the path when it does not exist in the document.
void apply_setting(nlohmann::json& doc, const std::string& file, const std::string& path,
                   const nlohmann::json& value);

/// "path=value, path=value" for progress lines and keys.
[[nodiscard]] std::string describe(const std::vector<Axis>& axes, const Combination& c);

}  // namespace trainsim::sweep

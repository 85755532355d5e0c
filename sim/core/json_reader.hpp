#pragma once
// Strict reading of JSON configuration: every access records the JSON path, every value is
// type-checked, and `finish()` rejects keys nobody asked for. Errors are ConfigError naming the
// file, the path and what was expected (parse -> validate -> build, STYLE.md practice 4).
#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim {

/// Reads a JSON file; throws ConfigError when it is missing or malformed.
[[nodiscard]] nlohmann::json read_json_file(const std::string& path);

/// A view on one JSON object inside a file, with its path. Not copyable state-wise: keys read
/// through this view are remembered so that `finish()` can report the unknown ones.
class JsonObject {
public:
  JsonObject(const nlohmann::json& value, std::string file, std::string path);

  [[nodiscard]] bool has(const std::string& key) const;

  [[nodiscard]] std::string string(const std::string& key);
  [[nodiscard]] std::string string_or(const std::string& key, const std::string& fallback);
  [[nodiscard]] double number(const std::string& key);
  [[nodiscard]] double number_or(const std::string& key, double fallback);
  /// A strictly positive integer.
  [[nodiscard]] long positive_integer(const std::string& key);
  [[nodiscard]] long positive_integer_or(const std::string& key, long fallback);
  [[nodiscard]] bool boolean_or(const std::string& key, bool fallback);
  /// A quantity string with a unit of dimension `d` ("100Gbps"); must be > 0.
  [[nodiscard]] double quantity(const std::string& key, Dimension d);
  [[nodiscard]] double quantity_or(const std::string& key, Dimension d, double fallback);
  /// A quantity that may be zero (latencies).
  [[nodiscard]] double non_negative_quantity(const std::string& key, Dimension d);
  [[nodiscard]] double non_negative_quantity_or(const std::string& key, Dimension d,
                                                double fallback);
  /// One of `choices`.
  [[nodiscard]] std::string choice(const std::string& key, const std::vector<std::string>& choices);
  [[nodiscard]] std::string choice_or(const std::string& key,
                                      const std::vector<std::string>& choices,
                                      const std::string& fallback);

  [[nodiscard]] JsonObject object(const std::string& key);
  [[nodiscard]] std::vector<JsonObject> object_array(const std::string& key);
  [[nodiscard]] std::vector<std::string> string_array(const std::string& key);
  [[nodiscard]] std::vector<long> integer_array(const std::string& key);
  /// A non-empty array of integers >= 0 (indices).
  [[nodiscard]] std::vector<long> index_array(const std::string& key);
  /// Marks a key as known without reading it (free-text documentation fields).
  void allow(const std::string& key);
  /// Reads "source", which every hardware number and calibration carries; fails when it is empty.
  void require_source();
  /// Reads "schema_version", which must be `version`.
  void require_schema_version(int version);
  /// Reads "kind", which must be `kind` (it tells apart files that share a folder and a schema).
  void require_kind(const std::string& kind);

  /// Throws ConfigError naming the first key that was never read or allowed.
  void finish() const;

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

private:
  const nlohmann::json& get(const std::string& key);
  double quantity_impl(const std::string& key, Dimension d, bool allow_zero);

  const nlohmann::json& value_;
  std::string file_;
  std::string path_;
  std::set<std::string> read_;
};

/// Parses a root document as an object; throws if it is not one.
[[nodiscard]] JsonObject root_object(const nlohmann::json& doc, const std::string& file);

}  // namespace trainsim

#include "core/json_reader.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace trainsim {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "", "cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path, "", std::string("malformed JSON: ") + e.what());
  }
}

JsonObject root_object(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object()) throw ConfigError(file, "", "expected a JSON object at the top level");
  return JsonObject(doc, file, "");
}

JsonObject::JsonObject(const nlohmann::json& value, std::string file, std::string path)
    : value_(value), file_(std::move(file)), path_(std::move(path)) {
  if (!value_.is_object()) throw ConfigError(file_, path_, "expected an object");
}

std::string JsonObject::path_of(const std::string& key) const { return path_ + "/" + key; }

void JsonObject::fail(const std::string& key, const std::string& message) const {
  throw ConfigError(file_, key.empty() ? path_ : path_of(key), message);
}

bool JsonObject::has(const std::string& key) const { return value_.contains(key); }

const nlohmann::json& JsonObject::get(const std::string& key) {
  read_.insert(key);
  auto it = value_.find(key);
  if (it == value_.end()) fail(key, "missing required key");
  return *it;
}

void JsonObject::allow(const std::string& key) { read_.insert(key); }

std::string JsonObject::string(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

void JsonObject::require_source() {
  if (string("source").empty()) fail("source", "expected a non-empty source");
}

void JsonObject::require_schema_version(int version) {
  if (number("schema_version") != version) fail("schema_version", "expected " + std::to_string(version));
}

void JsonObject::require_kind(const std::string& kind) {
  if (string("kind") != kind) fail("kind", "expected \"" + kind + "\"");
}

std::string JsonObject::string_or(const std::string& key, const std::string& fallback) {
  return has(key) ? string(key) : (allow(key), fallback);
}

double JsonObject::number(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_number()) fail(key, "expected a number, got " + v.dump());
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "expected a finite number");
  return d;
}

double JsonObject::number_or(const std::string& key, double fallback) {
  return has(key) ? number(key) : (allow(key), fallback);
}

long JsonObject::positive_integer(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_number_integer() || v.get<long>() <= 0)
    fail(key, "expected a positive integer, got " + v.dump());
  return v.get<long>();
}

long JsonObject::positive_integer_or(const std::string& key, long fallback) {
  return has(key) ? positive_integer(key) : (allow(key), fallback);
}

bool JsonObject::boolean_or(const std::string& key, bool fallback) {
  if (!has(key)) {
    allow(key);
    return fallback;
  }
  const auto& v = get(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

double JsonObject::quantity_impl(const std::string& key, Dimension d, bool allow_zero) {
  const auto& v = get(key);
  if (!v.is_string())
    fail(key, std::string("expected ") + dimension_name(d) + " with its unit as a string, e.g. " +
                  dimension_examples(d) + ", got " + v.dump());
  const auto parsed = parse_quantity(v.get<std::string>(), d);
  if (!parsed)
    fail(key, std::string("bad unit or number in ") + v.dump() + ": expected " +
                  dimension_name(d) + " such as " + dimension_examples(d));
  if (*parsed < 0 || (!allow_zero && *parsed == 0))
    fail(key, std::string("expected a ") + (allow_zero ? "non-negative" : "positive") + " value (" +
                  dimension_name(d) + "), got " + v.dump());
  return *parsed;
}

double JsonObject::quantity(const std::string& key, Dimension d) {
  return quantity_impl(key, d, false);
}

double JsonObject::quantity_or(const std::string& key, Dimension d, double fallback) {
  return has(key) ? quantity(key, d) : (allow(key), fallback);
}

double JsonObject::non_negative_quantity(const std::string& key, Dimension d) {
  return quantity_impl(key, d, true);
}

double JsonObject::non_negative_quantity_or(const std::string& key, Dimension d, double fallback) {
  return has(key) ? non_negative_quantity(key, d) : (allow(key), fallback);
}

std::string JsonObject::choice(const std::string& key, const std::vector<std::string>& choices) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  // A required choice that is missing says what it may be, as a wrong one does.
  if (!has(key)) fail(key, "missing required key; expected one of: " + list);
  const std::string s = string(key);
  for (const auto& c : choices)
    if (c == s) return s;
  fail(key, "unknown value \"" + s + "\"; expected one of: " + list);
}

std::string JsonObject::choice_or(const std::string& key, const std::vector<std::string>& choices,
                                  const std::string& fallback) {
  return has(key) ? choice(key, choices) : (allow(key), fallback);
}

JsonObject JsonObject::object(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_object()) fail(key, "expected an object, got " + v.dump());
  return JsonObject(v, file_, path_of(key));
}

std::vector<JsonObject> JsonObject::object_array(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_array()) fail(key, "expected an array of objects");
  std::vector<JsonObject> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path_of(key) + "/" + std::to_string(i);
    if (!v[i].is_object()) throw ConfigError(file_, p, "expected an object, got " + v[i].dump());
    out.emplace_back(v[i], file_, p);
  }
  return out;
}

std::vector<std::string> JsonObject::string_array(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_array()) fail(key, "expected an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw ConfigError(file_, path_of(key) + "/" + std::to_string(i), "expected a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::vector<long> JsonObject::integer_array(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_array() || v.empty()) fail(key, "expected a non-empty array of positive integers");
  std::vector<long> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<long>() <= 0)
      throw ConfigError(file_, path_of(key) + "/" + std::to_string(i),
                        "expected a positive integer, got " + v[i].dump());
    out.push_back(v[i].get<long>());
  }
  return out;
}

std::vector<long> JsonObject::index_array(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_array() || v.empty()) fail(key, "expected a non-empty array of indices (integers >= 0)");
  std::vector<long> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<long>() < 0)
      throw ConfigError(file_, path_of(key) + "/" + std::to_string(i),
                        "expected an index (an integer >= 0), got " + v[i].dump());
    out.push_back(v[i].get<long>());
  }
  return out;
}

void JsonObject::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it)
    if (read_.count(it.key()) == 0)
      throw ConfigError(file_, path_of(it.key()), "unknown key \"" + it.key() + "\"");
}

}  // namespace trainsim

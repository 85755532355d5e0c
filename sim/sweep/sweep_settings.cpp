#include "sweep/sweep_settings.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace trainsim::sweep {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

nlohmann::json value_of(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return text;  // "1.2TiB" and other unit strings
  }
}

bool is_index(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

Axis parse_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument("--set expects PATH=V1,V2,... , got \"" + text + "\"");
  Axis a;
  a.path = text.substr(0, eq);
  for (const auto& part : split(a.path, '.'))
    if (part.empty()) throw std::invalid_argument("--set: empty segment in path \"" + a.path + "\"");
  for (const auto& v : split(text.substr(eq + 1), ',')) {
    if (v.empty()) throw std::invalid_argument("--set " + a.path + ": empty value in \"" + text + "\"");
    a.texts.push_back(v);
    a.values.push_back(value_of(v));
  }
  return a;
}

std::vector<Combination> cartesian_product(const std::vector<Axis>& axes) {
  std::vector<Combination> out{Combination{}};
  for (const auto& axis : axes) {
    std::vector<Combination> next;
    for (const auto& c : out)
      for (std::size_t i = 0; i < axis.values.size(); ++i) {
        Combination d = c;
        d.choice.push_back(i);
        next.push_back(d);
      }
    out = std::move(next);
  }
  return out;
}

void apply_setting(nlohmann::json& doc, const std::string& file, const std::string& path,
                   const nlohmann::json& value) {
  if (path == kNodesPath) {
    if (!value.is_number_integer() || value.get<long>() <= 0)
      throw ConfigError(file, "/points", "--set nodes: expected a positive integer, got " + value.dump());
    doc["points"] = nlohmann::json::array({nlohmann::json{{"nodes", value}}});
    return;
  }
  nlohmann::json* at = &doc;
  std::string pointer;
  const auto parts = split(path, '.');
  for (const auto& part : parts) {
    pointer += "/" + part;
    if (at->is_object() && at->contains(part)) {
      at = &(*at)[part];
    } else if (at->is_array() && is_index(part) && std::stoul(part) < at->size()) {
      at = &(*at)[std::stoul(part)];
    } else {
      throw ConfigError(file, pointer,
                        "--set " + path + ": no such setting in the scenario (a sweep can only "
                        "change values the file already has; array elements are numbered from 0)");
    }
  }
  *at = value;
}

std::string describe(const std::vector<Axis>& axes, const Combination& c) {
  std::string out;
  for (std::size_t a = 0; a < axes.size(); ++a)
    out += (a ? ", " : "") + axes[a].path + "=" + axes[a].texts[c.choice[a]];
  return out;
}

}  // namespace trainsim::sweep

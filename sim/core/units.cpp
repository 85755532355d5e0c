#include "core/units.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace trainsim {
namespace {

struct UnitFactor {
  const char* suffix;
  double factor;
};

constexpr std::array<UnitFactor, 9> kBytes{{{"B", 1.0},
                                            {"KB", 1e3},
                                            {"MB", 1e6},
                                            {"GB", 1e9},
                                            {"TB", 1e12},
                                            {"KiB", 1024.0},
                                            {"MiB", 1048576.0},
                                            {"GiB", 1073741824.0},
                                            {"TiB", 1099511627776.0}}};
constexpr std::array<UnitFactor, 4> kSeconds{{{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}}};
constexpr std::array<UnitFactor, 11> kBandwidth{{{"bps", 0.125},
                                                 {"Kbps", 125.0},
                                                 {"Mbps", 125e3},
                                                 {"Gbps", 125e6},
                                                 {"Tbps", 125e9},
                                                 {"B/s", 1.0},
                                                 {"KB/s", 1e3},
                                                 {"MB/s", 1e6},
                                                 {"GB/s", 1e9},
                                                 {"TB/s", 1e12},
                                                 {"GiB/s", 1073741824.0}}};
constexpr std::array<UnitFactor, 4> kFlopRate{
    {{"FLOPS", 1.0}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15}}};

template <std::size_t N>
std::optional<double> lookup(const std::array<UnitFactor, N>& table, const std::string& unit) {
  for (const auto& u : table)
    if (unit == u.suffix) return u.factor;
  return std::nullopt;
}

}  // namespace

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "a size";
    case Dimension::seconds: return "a duration";
    case Dimension::bandwidth: return "a bandwidth";
    case Dimension::flop_rate: return "a compute rate";
    case Dimension::dimensionless: return "a number";
  }
  return "?";
}

const char* dimension_examples(Dimension d) {
  switch (d) {
    case Dimension::bytes: return "\"32GB\", \"1.2TiB\" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
    case Dimension::seconds: return "\"25us\", \"1.5ms\" (s, ms, us, ns)";
    case Dimension::bandwidth:
      return "\"100Gbps\", \"300GB/s\" (bps, Kbps, Mbps, Gbps, Tbps, B/s, KB/s, MB/s, GB/s, TB/s, "
             "GiB/s)";
    case Dimension::flop_rate: return "\"312TFLOPS\" (FLOPS, GFLOPS, TFLOPS, PFLOPS)";
    case Dimension::dimensionless: return "a plain number";
  }
  return "?";
}

std::optional<double> parse_quantity(const std::string& text, Dimension d) {
  // Plain decimal numbers only ("1.5", "-2", "5e8"): strtod alone would also take hex
  // ("0x10GB"), "inf" and "+", so the number's extent is scanned here first. Negative values
  // parse; whether they make sense is the caller's call.
  std::size_t i = (!text.empty() && text[0] == '-') ? 1 : 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i > from;
  };
  bool any = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    any = digits() || any;
  }
  if (!any) return std::nullopt;
  if (i + 1 < text.size() && (text[i] == 'e' || text[i] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' || text[i + 1] == '+')) {
    const std::size_t mark = i++;
    if (text[i] == '-' || text[i] == '+') ++i;
    if (!digits()) i = mark;
  }
  const double value = std::strtod(text.substr(0, i).c_str(), nullptr);
  if (!std::isfinite(value)) return std::nullopt;
  const char* end = text.c_str() + i;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  std::optional<double> factor;
  switch (d) {
    case Dimension::bytes: factor = lookup(kBytes, unit); break;
    case Dimension::seconds: factor = lookup(kSeconds, unit); break;
    case Dimension::bandwidth: factor = lookup(kBandwidth, unit); break;
    case Dimension::flop_rate: factor = lookup(kFlopRate, unit); break;
    case Dimension::dimensionless: factor = unit.empty() ? std::optional<double>(1.0) : std::nullopt;
  }
  if (!factor) return std::nullopt;
  return value * *factor;
}

std::string format_bytes(Bytes b) {
  static constexpr std::array<std::pair<double, const char*>, 4> steps{
      {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}}};
  char buf[64];
  for (const auto& [f, s] : steps) {
    if (std::fabs(b) >= f) {
      std::snprintf(buf, sizeof buf, "%.2f %s", b / f, s);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::string format_quantity(double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", value);
  std::string text = buf;
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + unit;
}

}  // namespace trainsim

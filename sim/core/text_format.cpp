#include "core/text_format.hpp"

#include <cstdio>

namespace trainsim::text {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t width, bool left) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

}  // namespace trainsim::text

#pragma once
// Fixed-width text for the tables the reports print: one number formatted, one cell padded.
#include <cstddef>
#include <string>

namespace trainsim::text {

/// `v` through the printf conversion `f` ("%.2f", "%.1f%%"): at most 63 characters.
[[nodiscard]] std::string fmt(const char* f, double v);

/// `s` padded with spaces to `width` characters, on the left (right-aligned) unless `left`.
[[nodiscard]] std::string pad(const std::string& s, std::size_t width, bool left = false);

}  // namespace trainsim::text

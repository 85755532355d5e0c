#pragma once
// Physical quantities. Values are SI doubles (bytes, seconds, bytes/s, FLOP/s); the aliases say
// which. Configuration files carry units in strings ("100Gbps", "32GB", "1.5us", "312TFLOPS"),
// parsed here and nowhere else, so no bare conversion factor appears in the model.
#include <optional>
#include <string>

namespace trainsim {

using Bytes = double;           ///< bytes
using Seconds = double;         ///< seconds
using BytesPerSecond = double;  ///< bytes per second
using Flops = double;           ///< floating-point operations
using FlopsPerSecond = double;  ///< floating-point operations per second

enum class Dimension { bytes, seconds, bandwidth, flop_rate, dimensionless };

[[nodiscard]] const char* dimension_name(Dimension d);
/// Accepted spellings for a dimension, for error messages.
[[nodiscard]] const char* dimension_examples(Dimension d);

/// Parses "<number><unit>" for the given dimension. Returns nullopt on any malformed input.
/// bytes: B KB MB GB TB (10^3 steps), KiB MiB GiB TiB (2^10 steps).
/// seconds: s ms us ns.  bandwidth: bps Kbps Mbps Gbps Tbps (bits), B/s KB/s MB/s GB/s TB/s,
/// GiB/s.  flop_rate: FLOPS GFLOPS TFLOPS PFLOPS.
[[nodiscard]] std::optional<double> parse_quantity(const std::string& text, Dimension d);

/// Formats bytes with a binary-free decimal suffix, e.g. 1.5e9 -> "1.50 GB".
[[nodiscard]] std::string format_bytes(Bytes b);

/// Writes `value` followed by `unit` in the plain decimal form parse_quantity reads back
/// ("1610.5GB/s"), with up to 6 decimals and no trailing zeros.
[[nodiscard]] std::string format_quantity(double value, const char* unit);

}  // namespace trainsim

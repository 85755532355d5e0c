#pragma once
// A bf16 value as the GPU stores it (the upper 16 bits of an fp32). Host code never computes with
// it: it converts with to_bf16 / from_bf16, which round the way the GPU does (nearest, ties even).
#include <cstdint>
#include <cstring>
#include <vector>

#include "reference.hpp"

namespace trainsim::kernels {

struct Bf16 {
  std::uint16_t bits = 0;
};

inline Bf16 to_bf16(float x) {
  const float r = reference::round_to_bf16(x);
  std::uint32_t u;
  std::memcpy(&u, &r, sizeof u);
  return Bf16{static_cast<std::uint16_t>(u >> 16)};
}

inline float from_bf16(Bf16 b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::vector<Bf16> to_bf16(const std::vector<float>& x) {
  std::vector<Bf16> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = to_bf16(x[i]);
  return out;
}

inline std::vector<float> from_bf16(const std::vector<Bf16>& x) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = from_bf16(x[i]);
  return out;
}

}  // namespace trainsim::kernels

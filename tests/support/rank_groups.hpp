#pragma once
// The rank lists collective tests hand to the planners as a collective's group.
#include <vector>

namespace trainsim::testing_support {

/// `count` ranks from `first`, `stride` apart: first, first + stride, ...
inline std::vector<int> ranks(int first, int count, int stride = 1) {
  std::vector<int> r;
  for (int k = 0; k < count; ++k) r.push_back(first + k * stride);
  return r;
}

/// Ranks 0 to count - 1.
inline std::vector<int> ranks(int count) { return ranks(0, count); }

}  // namespace trainsim::testing_support

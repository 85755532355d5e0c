#include "report/reference_bound.hpp"

#include <cstdio>

namespace trainsim::report {

BoundVerdict judge_lower_bound(double predicted, double bound) {
  BoundVerdict v;
  v.margin_pct = 100.0 * (predicted - bound) / bound;
  v.meets = predicted >= bound;
  return v;
}

std::string verdict_text(const BoundVerdict& verdict) {
  char buf[48];
  if (verdict.meets)
    std::snprintf(buf, sizeof buf, "meets (%+.1f%%)", verdict.margin_pct);
  else
    std::snprintf(buf, sizeof buf, "misses by %.1f%%", -verdict.margin_pct);
  return buf;
}

}  // namespace trainsim::report

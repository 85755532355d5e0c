#include "model/held_sm_slowdown.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace trainsim::model {

double held_sm_fraction(const HeldSmSlowdown& s, int sm_count, int held) {
  if (held <= 0 || sm_count <= 0) return 0;
  const double cap = 1.0 - 1.0 / sm_count;
  if (s.points.empty()) return std::min(cap, static_cast<double>(held) / sm_count);
  const HeldSmPoint& last = s.points.back();
  if (held >= last.sms)
    return std::min(cap,
                    1.0 - 1.0 / last.slowdown + static_cast<double>(held - last.sms) / sm_count);
  HeldSmPoint below{0, 1.0};
  for (const auto& p : s.points) {
    if (held <= p.sms) {
      const double t = static_cast<double>(held - below.sms) / (p.sms - below.sms);
      const double slowdown = below.slowdown + t * (p.slowdown - below.slowdown);
      return std::min(cap, 1.0 - 1.0 / slowdown);
    }
    below = p;
  }
  return cap;  // not reached: held < last.sms
}

HeldSmSlowdown read_held_sm_slowdown(JsonObject o, int sm_count) {
  if (sm_count <= 0)
    o.fail("points",
           "expected the profile's sm_count beside a held-SM slowdown (the SMs it is measured "
           "against)");
  HeldSmSlowdown s;
  for (auto& p : o.object_array("points")) {
    HeldSmPoint q;
    const long sms = p.positive_integer("sms");
    if (sms >= sm_count)
      p.fail("sms", "expected fewer held SMs than the device's sm_count (" +
                        std::to_string(sm_count) + ")");
    q.sms = static_cast<int>(sms);
    if (!s.points.empty() && q.sms <= s.points.back().sms)
      p.fail("sms", "expected held SM counts in strictly increasing order");
    q.slowdown = p.number("slowdown");
    if (!(q.slowdown >= 1) || q.slowdown > 100)
      p.fail("slowdown", "expected a time ratio beside / alone between 1 and 100");
    if (!s.points.empty() && q.slowdown < s.points.back().slowdown)
      p.fail("slowdown",
             "expected a slowdown no smaller than at fewer held SMs (holding more never speeds "
             "compute)");
    p.finish();
    s.points.push_back(q);
  }
  if (s.points.empty()) o.fail("points", "expected at least one point");
  o.require_source();
  o.allow("note");
  o.finish();
  return s;
}

}  // namespace trainsim::model

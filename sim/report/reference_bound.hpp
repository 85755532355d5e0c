#pragma once
// A published lower bound judged against a prediction. Some sources state a result only as a bound
// ("more than 173 TFLOPS per GPU": the PyTorch FSDP paper's text); such a row says whether the
// prediction meets it and by how much, and never enters the error statistics, which need a point
// measurement.
#include <string>

namespace trainsim::report {

struct BoundVerdict {
  bool meets = false;     ///< predicted >= bound
  double margin_pct = 0;  ///< (predicted - bound) / bound, percent: >= 0 when met
};

[[nodiscard]] BoundVerdict judge_lower_bound(double predicted, double bound);

/// "meets (+21.3%)" or "misses by 4.2%".
[[nodiscard]] std::string verdict_text(const BoundVerdict& verdict);

}  // namespace trainsim::report

// Lower-bound references (report/reference_bound.hpp): a source's "more than X" judged met or
// missed, with the margin in percent of the bound.
#include <gtest/gtest.h>

#include "report/reference_bound.hpp"

namespace {

using trainsim::report::judge_lower_bound;
using trainsim::report::verdict_text;

TEST(LowerBound, APredictionAboveTheBoundMeetsItByItsMargin) {
  // 211.7 against the FSDP paper's "more than 173": (211.7 - 173) / 173 = +22.37%.
  const auto v = judge_lower_bound(211.7, 173.0);
  EXPECT_TRUE(v.meets);
  EXPECT_NEAR(v.margin_pct, 100.0 * 38.7 / 173.0, 1e-9);
  EXPECT_EQ(verdict_text(v), "meets (+22.4%)");
}

TEST(LowerBound, APredictionBelowTheBoundMissesItBy) {
  // 178.0 against "more than 186": (178 - 186) / 186 = -4.30%, printed as a shortfall.
  const auto v = judge_lower_bound(178.0, 186.0);
  EXPECT_FALSE(v.meets);
  EXPECT_NEAR(v.margin_pct, -100.0 * 8.0 / 186.0, 1e-9);
  EXPECT_EQ(verdict_text(v), "misses by 4.3%");
}

TEST(LowerBound, EqualToTheBoundMeetsIt) {
  const auto v = judge_lower_bound(186.0, 186.0);
  EXPECT_TRUE(v.meets);
  EXPECT_EQ(verdict_text(v), "meets (+0.0%)");
}

}  // namespace

// The summary line under a scenario's table: which rows count, and on which quantity.
#include <gtest/gtest.h>

#include "report/error_summary.hpp"

namespace {

using trainsim::report::ErrorBasis;
using trainsim::report::ReferenceError;
using trainsim::report::summarise_errors;
using trainsim::report::summary_line;

TEST(ErrorSummary, FittedRowsAreLeftOut) {
  const auto s = summarise_errors({{-0.4, true, ErrorBasis::samples_per_s},
                                   {-2.7, false, ErrorBasis::samples_per_s},
                                   {-2.5, false, ErrorBasis::samples_per_s},
                                   {+2.3, false, ErrorBasis::samples_per_s}});
  EXPECT_EQ(s.rows, 3);
  EXPECT_NEAR(s.mean_abs_pct, 2.5, 1e-12);
  EXPECT_NEAR(s.max_abs_pct, 2.7, 1e-12);
  EXPECT_EQ(summary_line(s), "non-fitted rows: 3, mean |error| 2.5%, max |error| 2.7%");
}

TEST(ErrorSummary, TflopsOnlyRowsSayTheirBasis) {
  // Megatron-LM's references are TFLOP/s per GPU only: the line is computed on them and says so.
  const auto s = summarise_errors({{+60.0, false, ErrorBasis::tflops_per_accelerator},
                                   {-10.0, false, ErrorBasis::tflops_per_accelerator}});
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.tflops_rows, 2);
  EXPECT_EQ(summary_line(s), "non-fitted rows: 2, mean |error| 35.0%, max |error| 60.0% (TFLOP/s per accelerator)");
}

TEST(ErrorSummary, MixedBasesNameTheTflopsRows) {
  const auto s = summarise_errors({{+1.0, false, ErrorBasis::samples_per_s},
                                   {-3.0, false, ErrorBasis::tflops_per_accelerator}});
  EXPECT_EQ(summary_line(s),
            "non-fitted rows: 2, mean |error| 2.0%, max |error| 3.0% (seq/s; TFLOP/s per accelerator on the 1 rows "
            "with only that reference)");
}

TEST(ErrorSummary, NoCountedRowGivesNoLine) {
  EXPECT_EQ(summary_line(summarise_errors({})), "");
  EXPECT_EQ(summary_line(summarise_errors({{5.0, true, ErrorBasis::tflops_per_accelerator}})), "");
}

}  // namespace

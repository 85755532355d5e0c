// Merged calls that make the same calls (program/alike_merged_calls.hpp): found as a
// brute-force comparison of every pair of merged calls finds them, and told apart by repeat,
// group, op and size.
#include <gtest/gtest.h>

#include "program/alike_merged_calls.hpp"
#include "program/build_program.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

/// The definition, pair by pair: the first earlier merged call whose calls match one for one.
std::vector<int> brute_force(const Program& p, const RankFolding& f) {
  auto unmixed = [&](const std::vector<int>& calls) {
    const auto& a = p.collectives[static_cast<std::size_t>(calls.front())];
    for (int c : calls) {
      const auto& b = p.collectives[static_cast<std::size_t>(c)];
      if (b.op != a.op || b.size != a.size) return false;
    }
    return true;
  };
  std::vector<int> alike(f.calls.size(), -1);
  for (std::size_t m = 0; m < f.calls.size(); ++m) {
    if (!unmixed(f.calls[m])) continue;
    for (std::size_t e = 0; e < m && alike[m] < 0; ++e) {
      const auto& x = f.calls[m];
      const auto& y = f.calls[e];
      if (x.size() != y.size() || !unmixed(y)) continue;
      bool same = true;
      for (std::size_t i = 0; i < x.size() && same; ++i) {
        const auto& a = p.collectives[static_cast<std::size_t>(x[i])];
        const auto& b = p.collectives[static_cast<std::size_t>(y[i])];
        same = a.op == b.op && a.size == b.size && a.group == b.group && a.repeat == b.repeat;
      }
      if (same) alike[m] = static_cast<int>(e);
    }
  }
  return alike;
}

TEST(AlikeMergedCalls, FindsWhatComparingEveryPairFindsInAFoldedPipelineJob) {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sharding = plan::Sharding::zero1;
  in.plan.sequence_parallel = true;
  in.plan.tp_comm_overlap = true;
  in.layout = plan::layout_of(in.plan, 16, 4);
  in.share_task_bodies = true;
  const Program p = build_program(in);
  const auto f = fold_ranks(p);
  ASSERT_TRUE(f.folded());
  const auto alike = alike_merged_calls(p, f);
  EXPECT_EQ(alike, brute_force(p, f));
  // Every layer's TP calls are the same over the same groups: most merged calls have a twin.
  std::size_t twins = 0;
  for (int a : alike) twins += a >= 0 ? 1 : 0;
  EXPECT_GT(twins, alike.size() / 2);
}

TEST(AlikeMergedCalls, TellsApartRepeatGroupOpAndSize) {
  Program p;
  const RankGroup g01{0, 1}, g23{2, 3};
  auto add = [&](collective::Op op, Bytes size, const RankGroup& g, int repeat) {
    p.collectives.push_back({"c", op, size, g, repeat});
  };
  using collective::Op;
  // Merged calls of two calls each: 0 the reference, 1 alike, 2 another repeat, 3 the groups
  // swapped, 4 another size, 5 its two calls of different sizes, 6 another op, 7 alike again.
  const Op ar = Op::all_reduce;
  add(ar, 8, g01, 1), add(ar, 8, g23, 1);
  add(ar, 8, g01, 1), add(ar, 8, g23, 1);
  add(ar, 8, g01, 2), add(ar, 8, g23, 2);
  add(ar, 8, g23, 1), add(ar, 8, g01, 1);
  add(ar, 16, g01, 1), add(ar, 16, g23, 1);
  add(ar, 8, g01, 1), add(ar, 16, g23, 1);
  add(Op::all_gather, 8, g01, 1), add(Op::all_gather, 8, g23, 1);
  add(ar, 8, g01, 1), add(ar, 8, g23, 1);
  RankFolding f;
  for (int m = 0; m < 8; ++m) {
    f.calls.push_back({2 * m, 2 * m + 1});
    f.merged_of_call.push_back(m);
    f.merged_of_call.push_back(m);
  }
  const std::vector<int> expected{-1, 0, -1, -1, -1, -1, -1, 0};
  EXPECT_EQ(alike_merged_calls(p, f), expected);
  EXPECT_EQ(brute_force(p, f), expected);
}

}  // namespace
}  // namespace trainsim::program

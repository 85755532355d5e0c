// "How many nodes?" from layout searches, as plain data: each node count's fastest layout, the
// point's own, speed-up and efficiency against the smallest count with a layout, and
// accelerator-hours per million samples.
#include "search/node_scaling.hpp"

#include <gtest/gtest.h>

namespace trainsim::search {
namespace {

Trial simulated(double samples_per_s, bool original = false) {
  Trial t;
  t.outcome = Outcome::simulated;
  t.candidate.is_original = original;
  t.result = scenario::PointResult{};
  t.result->samples_per_s = samples_per_s;
  return t;
}

SearchResult search(int nodes, std::vector<Trial> trials) {
  SearchResult r;
  r.nodes = nodes;
  r.accelerators = 8L * nodes;
  r.trials = std::move(trials);
  return r;
}

TEST(NodeScaling, FastestLayoutPerCountAgainstTheSmallestCountWithOne) {
  NodeScaling s;
  Trial oom;
  oom.outcome = Outcome::out_of_memory;
  oom.candidate.is_original = true;
  s.rows.push_back({search(1, {oom})});  // nothing fits on one node
  s.rows.push_back({search(2, {simulated(10), simulated(12, true)})});
  s.rows.push_back({search(4, {simulated(18, true), simulated(20)})});
  summarise(s);
  EXPECT_EQ(s.rows[0].best, nullptr);
  ASSERT_NE(s.rows[0].original, nullptr);
  EXPECT_EQ(s.rows[0].original->outcome, Outcome::out_of_memory);
  ASSERT_NE(s.rows[1].best, nullptr);
  EXPECT_DOUBLE_EQ(s.rows[1].best->result->samples_per_s, 12);
  EXPECT_EQ(s.rows[1].best, s.rows[1].original);
  EXPECT_DOUBLE_EQ(s.rows[1].speedup, 1);
  EXPECT_DOUBLE_EQ(s.rows[1].efficiency, 1);
  EXPECT_DOUBLE_EQ(s.rows[2].best->result->samples_per_s, 20);
  EXPECT_DOUBLE_EQ(s.rows[2].original->result->samples_per_s, 18);
  EXPECT_DOUBLE_EQ(s.rows[2].speedup, 20.0 / 12);
  EXPECT_DOUBLE_EQ(s.rows[2].efficiency, 20.0 / 12 / 2);
  // 32 accelerators for a million samples at 20 per second.
  EXPECT_DOUBLE_EQ(s.rows[2].accelerator_hours_per_million_samples, 32 * 1e6 / 20 / 3600);
  // Two nodes fit first and cost least per sample (16 / 12 < 32 / 20); four are fastest.
  EXPECT_EQ(s.fewest_nodes, 2);
  EXPECT_EQ(s.cheapest_nodes, 2);
  EXPECT_EQ(s.fastest_nodes, 4);
}

TEST(NodeScaling, ACountWithoutLayoutsHasNoBestAndMovesNothing) {
  NodeScaling s;
  s.rows.push_back({search(16, {})});
  s.rows.push_back({search(2, {simulated(5)})});
  summarise(s);
  EXPECT_EQ(s.rows[0].best, nullptr);
  EXPECT_EQ(s.rows[0].original, nullptr);
  EXPECT_DOUBLE_EQ(s.rows[1].speedup, 1);
  EXPECT_EQ(s.fewest_nodes, 2);
  NodeScaling none;
  none.rows.push_back({search(1, {})});
  summarise(none);
  EXPECT_EQ(none.fewest_nodes, -1);
  EXPECT_EQ(none.cheapest_nodes, -1);
}

}  // namespace
}  // namespace trainsim::search

// `--trace-ranks` lists: ranks and inclusive ranges, and what bad input says.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/rank_list.hpp"

namespace {

using trainsim::parse_rank_list;
using trainsim::RankList;

TEST(RankList, RanksAndRanges) {
  const RankList l = parse_rank_list("0,8-15,40");
  ASSERT_EQ(l.ranges.size(), 3u);
  EXPECT_TRUE(l.contains(0));
  EXPECT_FALSE(l.contains(1));
  EXPECT_FALSE(l.contains(7));
  EXPECT_TRUE(l.contains(8));
  EXPECT_TRUE(l.contains(15));
  EXPECT_FALSE(l.contains(16));
  EXPECT_TRUE(l.contains(40));
  EXPECT_EQ(l.mask(10), (std::vector<bool>{true, false, false, false, false, false, false, false, true, true}));
}

TEST(RankList, EmptyListHoldsEveryRank) {
  const RankList all;
  EXPECT_TRUE(all.all());
  EXPECT_TRUE(all.contains(383));
  EXPECT_EQ(all.mask(3), (std::vector<bool>{true, true, true}));
}

TEST(RankList, BadInputNamesTheItem) {
  for (const char* bad : {"", "1,", ",1", "a", "1-", "-3", "3-1", "1,,2", "1.5", "2-x", "1 2", "12345678901"}) {
    try {
      (void)parse_rank_list(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("0,8-15") != std::string::npos || what.find("first rank is above") != std::string::npos)
          << bad << ": " << what;
    }
  }
}

}  // namespace

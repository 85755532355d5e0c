// The compact pieces of a program (program/interned_name.hpp, program/rank_group.hpp,
// program/task_deps.hpp): names and call groups keep their contents and compare by identity;
// dependencies behave like the vector they replace, inline or spilled to the heap.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "program/interned_name.hpp"
#include "program/rank_group.hpp"
#include "program/task_deps.hpp"

namespace trainsim::program {
namespace {

TEST(InternedName, SameTextSameIdAndTheTextComesBack) {
  const std::string built = std::string("forward mb") + std::to_string(3) + " c1 layer 4";
  const InternedName a(built);
  const InternedName b("forward mb3 c1 layer 4");
  EXPECT_EQ(a.id(), b.id());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.str(), "forward mb3 c1 layer 4");
  EXPECT_NE(a.id(), InternedName("forward mb3 c1 layer 5").id());
}

TEST(InternedName, EmptyByDefaultAndReadsAsAString) {
  const InternedName none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.str(), "");
  EXPECT_EQ(InternedName("").id(), none.id());
  const InternedName n("send activation mb0 c0");
  EXPECT_TRUE(n == "send activation mb0 c0");
  EXPECT_TRUE(n != std::string("send activation mb1 c0"));
  EXPECT_EQ("task " + n + " waits", "task send activation mb0 c0 waits");
  std::ostringstream os;
  os << n;
  EXPECT_EQ(os.str(), "send activation mb0 c0");
}

TEST(InternedName, ComparingWithTextDoesNotAddIt) {
  const InternedName known("tp all-reduce mb0 c0");
  const InternedName probe_before("a fresh name, interned before the comparison");
  EXPECT_FALSE(known == "a name never interned before this line");
  // The id after the probe is the next one: the comparison above interned nothing.
  EXPECT_EQ(InternedName("yet another new name").id(), probe_before.id() + 1);
}

TEST(RankGroup, SameMembersSamePointerAndTheMembersComeBack) {
  std::vector<int> built;
  for (int k = 0; k < 8; ++k) built.push_back(16 + k);
  const RankGroup a(built);
  const RankGroup b{16, 17, 18, 19, 20, 21, 22, 23};
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.id(), b.id());
  EXPECT_EQ(a.ranks(), built);
  EXPECT_EQ(a.size(), 8U);
  EXPECT_EQ(a.front(), 16);
  EXPECT_EQ(a[7], 23);
  // Order matters: a call's members in another order are another group.
  const RankGroup reversed{23, 22, 21, 20, 19, 18, 17, 16};
  EXPECT_FALSE(a == reversed);
  EXPECT_NE(a.id(), reversed.id());
  EXPECT_TRUE(a == built);
  EXPECT_TRUE(reversed != built);
  std::ostringstream os;
  os << RankGroup{0, 8};
  EXPECT_EQ(os.str(), "{0, 8}");
}

TEST(RankGroup, EmptyByDefaultAndReadsAsAVector) {
  const RankGroup none;
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(none == RankGroup(std::vector<int>{}));
  const RankGroup g{3, 1, 2};
  const std::vector<int>& members = g;
  EXPECT_EQ(members, (std::vector<int>{3, 1, 2}));
  EXPECT_EQ(std::vector<int>(g.begin(), g.end()), members);
}

TEST(TaskDeps, InlineUpToThreeThenOnTheHeapWithTheSameContents) {
  TaskDeps d;
  EXPECT_TRUE(d.empty());
  std::vector<TaskRef> want;
  for (int i = 0; i < 9; ++i) {
    d.push_back({i % 3, i});
    want.push_back({i % 3, i});
    EXPECT_EQ(d, want) << "after " << i + 1 << " pushes";
  }
  TaskDeps copy = d;  // a heap copy is a separate array
  copy[0].index = 100;
  EXPECT_EQ(d[0].index, 0);
  TaskDeps moved = std::move(copy);
  EXPECT_EQ(moved.size(), 9u);
  EXPECT_EQ(moved[0].index, 100);
}

TEST(TaskDeps, BuiltLikeTheVectorItReplaces) {
  const std::vector<TaskRef> ready{{0, 4}, {3, 1}};
  TaskDeps d = ready;
  EXPECT_EQ(d, ready);
  EXPECT_EQ(ready, d);
  d = {{1, 2}};
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], (TaskRef{1, 2}));
  TaskDeps many = std::vector<TaskRef>(5, TaskRef{2, 7});
  d = many;  // inline <- heap
  EXPECT_EQ(d, many);
  many = TaskDeps{{0, 0}};  // heap <- inline
  EXPECT_EQ(many.size(), 1u);
  EXPECT_FALSE(d == many);
}

}  // namespace
}  // namespace trainsim::program

// Symmetry folding (program/rank_folding.hpp) as plain data: which ranks share a class, which
// calls merge, and the fallback when merging is not consistent.
#include <gtest/gtest.h>

#include "program/build_program.hpp"
#include "program/rank_folding.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

Task compute(const std::string& name, Seconds d) { return {name, TaskKind::compute, Phase::forward, d, -1, {}}; }
Task call(int c) { return {"call", TaskKind::collective, Phase::gradient_sync, 0, c, {}}; }

Program data_parallel(int ranks, Seconds compute_time) {
  Program p;
  std::vector<int> all;
  for (int r = 0; r < ranks; ++r) all.push_back(r);
  p.collectives.push_back({"all-reduce", collective::Op::all_reduce, 1e6, all});
  for (int r = 0; r < ranks; ++r) {
    RankProgram rp;
    rp.rank = r;
    rp.streams = {{"compute", StreamKind::compute, {compute("f", compute_time)}},
                  {"comm", StreamKind::communication, {call(0)}}};
    rp.streams[1].tasks[0].deps = {{0, 0}};
    p.ranks.push_back(rp);
  }
  return p;
}

TEST(RankFolding, IdenticalDataParallelRanksFormOneClass) {
  const auto p = data_parallel(8, 1.0);
  const auto f = fold_ranks(p);
  ASSERT_EQ(f.classes(), 1);
  EXPECT_TRUE(f.folded());
  EXPECT_EQ(f.representative[0], 0);
  EXPECT_EQ(f.members[0].size(), 8u);
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.classes_of[0], std::vector<int>{0});
}

TEST(RankFolding, GroupsThatSplitANodeAreSeen) {
  // 8 ranks all-reducing: alike on nodes of 4 or 8 (4 + 4, or 8), not on nodes of 3 (3 + 3 + 2)
  // or 6 (6 + 2). A second call over the even half {0..3} changes nothing where nodes hold 4.
  Program p = data_parallel(8, 1.0);
  EXPECT_TRUE(groups_fill_nodes_alike(p, 4));
  EXPECT_TRUE(groups_fill_nodes_alike(p, 8));
  EXPECT_FALSE(groups_fill_nodes_alike(p, 3));
  EXPECT_FALSE(groups_fill_nodes_alike(p, 6));
  p.collectives.push_back({"half", collective::Op::all_gather, 1e6, std::vector<int>{0, 1, 2, 3}});
  EXPECT_TRUE(groups_fill_nodes_alike(p, 4));
  p.collectives.push_back({"split", collective::Op::all_gather, 1e6, std::vector<int>{2, 3, 4}});
  EXPECT_FALSE(groups_fill_nodes_alike(p, 4));
}

TEST(RankFolding, DifferentDurationsMakeDifferentClasses) {
  auto p = data_parallel(4, 1.0);
  p.ranks[3].streams[0].tasks[0].duration = 2.0;  // a straggler
  const auto f = fold_ranks(p);
  ASSERT_EQ(f.classes(), 2);
  EXPECT_EQ(f.members[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.members[1], std::vector<int>{3});
  EXPECT_EQ(f.classes_of[0], (std::vector<int>{0, 1}));
}

TEST(RankFolding, HostCopiesFoldByBytesAndDirection) {
  auto p = data_parallel(4, 1.0);
  for (auto& rp : p.ranks) {
    Task c{"copy", TaskKind::host_copy, Phase::offload, 0, -1, {{0, 0}}};
    c.copy_bytes = 1e6;
    rp.streams.push_back({"host-copy", StreamKind::copy, {c}});
  }
  EXPECT_EQ(fold_ranks(p).classes(), 1);
  p.ranks[2].streams[2].tasks[0].copy_bytes = 2e6;
  p.ranks[3].streams[2].tasks[0].copy_direction = CopyDirection::to_device;
  const auto f = fold_ranks(p);
  ASSERT_EQ(f.classes(), 3);
  EXPECT_EQ(f.members[0], (std::vector<int>{0, 1}));
}

TEST(RankFolding, IdentityFoldingKeepsEveryRankAndCall) {
  const auto p = data_parallel(4, 1.0);
  const auto f = identity_folding(p);
  EXPECT_EQ(f.classes(), 4);
  EXPECT_FALSE(f.folded());
  EXPECT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.classes_of[0], (std::vector<int>{0, 1, 2, 3}));
}

TEST(RankFolding, InconsistentMergeFallsBackToIdentity) {
  // Ranks 0 and 1 run the same-looking program, but rank 1 meets the two calls in the other
  // order: merging by position would make one class meet one merged call twice.
  Program p;
  p.collectives = {{"a", collective::Op::all_reduce, 1e6, {0, 1}}, {"b", collective::Op::all_reduce, 1e6, {0, 1}}};
  for (int r = 0; r < 2; ++r) {
    RankProgram rp;
    rp.rank = r;
    rp.streams = {{"comm", StreamKind::communication, {call(r == 0 ? 0 : 1), call(r == 0 ? 1 : 0)}}};
    p.ranks.push_back(rp);
  }
  const auto f = fold_ranks(p);
  EXPECT_FALSE(f.folded());
  EXPECT_EQ(f.calls.size(), 2u);
}

TEST(RankFolding, PipelineRanksFoldByStageAndCallsMergeAcrossReplicas) {
  // TP 2 x PP 2 x DP 2: the four ranks of a stage run the same program.
  const ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  const Program prog = build_program(in);
  const auto f = fold_ranks(prog);
  ASSERT_EQ(f.classes(), 2);
  EXPECT_EQ(f.members[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.members[1], (std::vector<int>{4, 5, 6, 7}));
  for (std::size_t m = 0; m < f.calls.size(); ++m) {
    const auto& first = prog.collectives[static_cast<std::size_t>(f.calls[m].front())];
    for (int c : f.calls[m]) {
      const auto& other = prog.collectives[static_cast<std::size_t>(c)];
      EXPECT_EQ(other.op, first.op);
      EXPECT_EQ(other.size, first.size);
    }
    // A TP all-reduce stands for both replicas' groups; a send for the four stage pairs; the
    // gradient all-reduce for both TP positions.
    if (first.op == collective::Op::all_reduce && first.group.size() == 2 && f.classes_of[m].size() == 1) {
      EXPECT_EQ(f.calls[m].size(), 2u);
    }
    if (first.op == collective::Op::send_recv) {
      EXPECT_EQ(f.calls[m].size(), 4u);
      EXPECT_EQ(f.classes_of[m], (std::vector<int>{0, 1}));
    }
  }
}

}  // namespace
}  // namespace trainsim::program

// Transformer Engine's TP communication overlap as plain data: the pieces a layer pass is cut
// into, and the tasks and dependencies the PTD-P schedule makes of them (no SimGrid).
#include <gtest/gtest.h>

#include <string>

#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/tp_comm_overlap.hpp"
#include "support/pipeline_fixture.hpp"

namespace trainsim::program {
namespace {

using Kind = OverlapPiece::Kind;

ScheduleInputs overlapped() {
  ScheduleInputs in = testing_support::tiny_tp2_pp2_dp2();
  in.plan.sequence_parallel = true;
  in.plan.tp_comm_overlap = true;
  return in;
}

model::LayerShape shape_of(const ScheduleInputs& in) {
  return {in.plan.micro_batch, in.plan.tp, true};
}

std::vector<Kind> kinds(const std::vector<OverlapPiece>& pieces) {
  std::vector<Kind> k;
  for (const auto& p : pieces) k.push_back(p.kind);
  return k;
}

TEST(TpCommOverlap, ForwardGathersIntoQkvAndFc1AndScattersAfterProjAndFc2) {
  const ScheduleInputs in = overlapped();
  const auto pieces = tp_overlap_pieces(model::layer_forward_ops(in.model, shape_of(in)), true);
  EXPECT_EQ(kinds(pieces), (std::vector<Kind>{Kind::compute, Kind::ring_gather, Kind::compute, Kind::pipelined_scatter,
                                              Kind::compute, Kind::ring_gather, Kind::compute, Kind::pipelined_scatter,
                                              Kind::compute}));
  EXPECT_EQ(pieces[1].ops.front().name, "qkv");
  EXPECT_EQ(pieces[7].ops.front().name, "ffn_out");
}

TEST(TpCommOverlap, BackwardRingsBeforeTheRowParallelDgradsAndBulkAroundTheColumnParallelOnes) {
  const ScheduleInputs in = overlapped();
  const auto pieces = tp_overlap_pieces(model::layer_backward_ops(in.model, shape_of(in)), false);
  std::vector<std::string> overlapped_gemms;
  for (const auto& p : pieces)
    if (p.kind != Kind::compute) overlapped_gemms.push_back(p.ops.front().name);
  EXPECT_EQ(overlapped_gemms, (std::vector<std::string>{"ffn_out_dgrad", "ffn_in_dgrad", "attn_out_dgrad", "qkv_dgrad"}));
  for (const auto& p : pieces)
    if (p.kind == Kind::bulk) EXPECT_EQ(p.ops.size(), 2u);
}

TEST(TpCommOverlap, AChunkIsOneTpthOfTheRows) {
  const auto gemm = model::make_gemm("qkv", 4096, 1024, 512, 1, model::Dtype::bf16);
  const auto chunk = gemm_chunk(gemm, 4);
  EXPECT_DOUBLE_EQ(chunk.m, 1024);
  EXPECT_DOUBLE_EQ(chunk.flops * 4, gemm.flops);
}

TEST(TpCommOverlap, EachGemmChunkWaitsForItsRingStepAndEachScatterForItsChunk) {
  const Program p = build_program(overlapped());
  validate(p);
  const RankProgram& r = p.ranks[0];
  const Stream* compute = nullptr;
  const Stream* send = nullptr;
  const Stream* recv = nullptr;
  const Stream* tensor = nullptr;
  int recv_index = -1;
  for (std::size_t s = 0; s < r.streams.size(); ++s) {
    if (r.streams[s].name == "compute") compute = &r.streams[s];
    if (r.streams[s].name == "tp ring send") send = &r.streams[s];
    if (r.streams[s].name == "tp ring recv") { recv = &r.streams[s]; recv_index = static_cast<int>(s); }
    if (r.streams[s].name == "tensor-parallel") tensor = &r.streams[s];
  }
  ASSERT_TRUE(compute && send && recv && tensor);
  // TP 2: one ring step per gathered GEMM; each send's call is a receive of the peer.
  EXPECT_FALSE(send->tasks.empty());
  EXPECT_EQ(send->tasks.size(), recv->tasks.size());
  for (const Task& t : send->tasks) {
    const auto& call = p.collectives[static_cast<std::size_t>(t.collective)];
    EXPECT_EQ(call.op, collective::Op::send_recv);
    EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  }
  int chunk1 = 0, scatter_chunks = 0;
  for (const Task& t : compute->tasks) {
    const std::string name = t.name;
    if (name.find("forward mb0 c0 qkv chunk 1") != 0) continue;
    ++chunk1;
    bool waits_ring = false;
    for (const TaskRef& d : t.deps) waits_ring |= d.stream == recv_index;
    EXPECT_TRUE(waits_ring) << name;
  }
  EXPECT_EQ(chunk1, 2);  // stage 0 holds two layers
  for (const Task& t : tensor->tasks) {
    const std::string name = t.name;
    if (name.find("tp reduce-scatter attn_out chunk") == std::string::npos) continue;
    ++scatter_chunks;
    ASSERT_EQ(t.deps.size(), 1u);
    EXPECT_EQ(t.deps.begin()->stream, 0);
    EXPECT_NE(std::string(compute->tasks[static_cast<std::size_t>(t.deps.begin()->index)].name).find("attn_out chunk"),
              std::string::npos);
  }
  EXPECT_GT(scatter_chunks, 0);
  // No whole-layer task and no unchunked sequence-parallel gather before the passes remain.
  for (const Task& t : tensor->tasks) EXPECT_EQ(std::string(t.name).find("tp all-gather mb"), std::string::npos) << t.name;
}

TEST(TpCommOverlap, OffByDefaultLeavesTheProgramAsItWas) {
  ScheduleInputs in = overlapped();
  const Program on = build_program(in);
  in.plan.tp_comm_overlap = false;
  const Program off = build_program(in);
  for (const auto& st : off.ranks[0].streams) EXPECT_NE(st.name, "tp ring send");
  EXPECT_GT(on.collectives.size(), off.collectives.size());  // the ring's steps and the chunks' scatters
}

}  // namespace
}  // namespace trainsim::program

// Transformer Engine's TP communication overlap (and Megatron's own sequence parallelism) as plain
// data: the pieces a layer pass is cut into, and the tasks and dependencies the PTD-P schedule
// makes of them (no SimGrid).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/device_profile.hpp"
#include "model/transformer.hpp"
#include "program/build_program.hpp"
#include "program/rank_folding.hpp"
#include "program/tp_comm_overlap.hpp"
#include "support/pipeline_fixture.hpp"
#include "support/program_lookup.hpp"

namespace trainsim::program {
namespace {

using testing_support::stream_named;

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

TEST(TpCommOverlap, MegatronsOwnSequenceParallelismGathersAndScattersWholeGemmsWithTheSameBulkBackward) {
  ScheduleInputs in = overlapped();
  const auto forward = sequence_parallel_pieces(model::layer_forward_ops(in.model, shape_of(in)), true, 1);
  ASSERT_TRUE(forward.has_value());
  EXPECT_EQ(kinds(*forward), (std::vector<Kind>{Kind::compute, Kind::gather, Kind::compute, Kind::scatter, Kind::compute,
                                                Kind::gather, Kind::compute, Kind::scatter, Kind::compute}));
  for (const auto& p : *forward)
    if (p.kind != Kind::compute) {
      EXPECT_EQ(p.gather_bytes, 1);  // as asked: FP8 gathers
      EXPECT_EQ(p.scatter_bytes, 2);
    }
  const auto backward = sequence_parallel_pieces(model::layer_backward_ops(in.model, shape_of(in)), false);
  ASSERT_TRUE(backward.has_value());
  std::vector<std::pair<Kind, std::string>> cut;
  for (const auto& p : *backward)
    if (p.kind != Kind::compute) cut.emplace_back(p.kind, p.ops.front().name);
  EXPECT_EQ(cut, (std::vector<std::pair<Kind, std::string>>{{Kind::gather, "ffn_out_dgrad"},
                                                             {Kind::bulk, "ffn_in_dgrad"},
                                                             {Kind::gather, "attn_out_dgrad"},
                                                             {Kind::bulk, "qkv_dgrad"}}));
  EXPECT_EQ(piece_task_labels((*forward)[1], 2), (std::vector<std::string>{"tp all-gather qkv", "qkv"}));
  EXPECT_EQ(piece_task_labels((*forward)[3], 2), (std::vector<std::string>{"attn_out", "tp reduce-scatter attn_out"}));
  // An eager layer (three nn.Linear for q, k and v, SwiGLU's gate and up apart) has no fused
  // QKV to cut at: the schedule keeps its pass whole.
  model::LayerShape eager = shape_of(in);
  eager.eager = true;
  EXPECT_FALSE(sequence_parallel_pieces(model::layer_forward_ops(in.model, eager), true).has_value());
  EXPECT_FALSE(sequence_parallel_pieces(model::layer_backward_ops(in.model, eager), false).has_value());
}

TEST(TpCommOverlap, BackwardRingsBeforeTheRowParallelDgradsAndBulkAroundTheColumnParallelOnes) {
  const ScheduleInputs in = overlapped();
  const auto pieces = tp_overlap_pieces(model::layer_backward_ops(in.model, shape_of(in)), false);
  std::vector<std::string> overlapped_gemms;
  for (const auto& p : pieces)
    if (p.kind != Kind::compute) overlapped_gemms.push_back(p.ops.front().name);
  EXPECT_EQ(overlapped_gemms, (std::vector<std::string>{"ffn_out_dgrad", "ffn_in_dgrad", "attn_out_dgrad", "qkv_dgrad"}));
  for (const auto& p : pieces)
    if (p.kind == Kind::bulk) { EXPECT_EQ(p.ops.size(), 2u); }
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
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "tp ring", &ring_index);
  const Stream* tensor = stream_named(r, "tensor-parallel");
  ASSERT_TRUE(compute && ring && tensor);
  // TP 2: one ring step per gathered GEMM, one call over the whole TP group.
  EXPECT_FALSE(ring->tasks.empty());
  for (const Task& t : ring->tasks) {
    const auto& call = p.collectives[static_cast<std::size_t>(t.collective)];
    EXPECT_EQ(call.op, collective::Op::ring_exchange);
    EXPECT_EQ(call.group, (std::vector<int>{0, 1}));
  }
  int chunk1 = 0, scatter_chunks = 0;
  for (const Task& t : compute->tasks) {
    const std::string name = t.name;
    if (name.find("forward mb0 c0 qkv chunk 1") != 0) continue;
    ++chunk1;
    bool waits_ring = false;
    for (const TaskRef& d : t.deps) waits_ring |= d.stream == ring_index;
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

TEST(TpCommOverlap, AtTp4EachRingStepFollowsThePreviousAndFeedsItsChunk) {
  ScheduleInputs in = overlapped();
  in.plan.tp_overlap_model = plan::TpOverlapModel::per_step;  // one call per ring step
  in.plan.tp = 4;
  in.plan.pp = 1;
  in.layout = plan::layout_of(in.plan, 8, 4);  // dp 2, a TP group per node
  in.stages = {{100, 10, 1}};
  const Program p = build_program(in);
  validate(p);
  const RankProgram& r = p.ranks[0];
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "tp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  // The first QKV's three steps, then its four chunks: chunk i waits for chunk i - 1 and step i;
  // step i > 1 for step i - 1 (the shard it forwards is the one it received).
  std::vector<int> steps, chunks;
  for (std::size_t i = 0; i < ring->tasks.size() && steps.size() < 3; ++i)
    if (std::string(ring->tasks[i].name).find("forward mb0 c0 tp ring exchange qkv chunk") == 0) steps.push_back(static_cast<int>(i));
  for (std::size_t i = 0; i < compute->tasks.size() && chunks.size() < 4; ++i)
    if (std::string(compute->tasks[i].name).find("forward mb0 c0 qkv chunk") == 0) chunks.push_back(static_cast<int>(i));
  ASSERT_EQ(steps.size(), 3u);
  ASSERT_EQ(chunks.size(), 4u);
  for (int k = 0; k < 3; ++k) {
    const Task& step = ring->tasks[static_cast<std::size_t>(steps[static_cast<std::size_t>(k)])];
    EXPECT_EQ(std::string(step.name), "forward mb0 c0 tp ring exchange qkv chunk " + std::to_string(k + 1));
    const auto& call = p.collectives[static_cast<std::size_t>(step.collective)];
    EXPECT_EQ(call.op, collective::Op::ring_exchange);
    EXPECT_EQ(call.group, (std::vector<int>{0, 1, 2, 3}));
    if (k > 0) { EXPECT_TRUE((step.deps == TaskDeps{TaskRef{ring_index, steps[static_cast<std::size_t>(k - 1)]}})); }
    const Task& chunk = compute->tasks[static_cast<std::size_t>(chunks[static_cast<std::size_t>(k + 1)])];
    EXPECT_TRUE((chunk.deps == TaskDeps{TaskRef{0, chunks[static_cast<std::size_t>(k)]},
                                        TaskRef{ring_index, steps[static_cast<std::size_t>(k)]}}))
        << chunk.name;
  }
  // The first step waits for what the GEMM's first chunk waits for: it moves the rank's own shard.
  EXPECT_TRUE(ring->tasks[static_cast<std::size_t>(steps[0])].deps ==
              compute->tasks[static_cast<std::size_t>(chunks[0])].deps);
  // Every TP rank makes the same ring calls at the same places: one folding class per stage
  // position across the data-parallel replicas as well.
  const auto f = fold_ranks(p);
  EXPECT_EQ(f.classes(), 1);
}

/// The overlapped fixture at TP `tp` (PP 1, DP 2, one TP group per node), simulated `model`-wise.
ScheduleInputs overlapped_at(long tp, plan::TpOverlapModel model) {
  ScheduleInputs in = overlapped();
  in.plan.tp_overlap_model = model;
  in.plan.tp = tp;
  in.plan.pp = 1;
  in.model.heads = 8;  // TP 8 splits the heads too
  in.layout = plan::layout_of(in.plan, 2 * tp, static_cast<int>(tp));
  in.stages = {{100, 10, 1}};
  return in;
}

std::size_t task_count(const RankProgram& r) {
  std::size_t n = 0;
  for (const auto& st : r.streams) n += st.tasks.size();
  return n;
}

/// Every TP call of rank 0 by name: (op, bytes of one call, repeat).
std::map<std::string, std::tuple<collective::Op, double, int>> tp_calls(const Program& p) {
  std::map<std::string, std::tuple<collective::Op, double, int>> calls;
  for (const auto& st : p.ranks[0].streams)
    for (const Task& t : st.tasks)
      if (t.collective >= 0) {
        const auto& c = p.collectives[static_cast<std::size_t>(t.collective)];
        calls[t.name.str()] = {c.op, c.size, c.repeat};
      }
  return calls;
}

TEST(TpCommOverlap, CoarsePiecesHoldAFixedNumberOfTasksAtAnyTp) {
  // Per step a ring-gathered GEMM is k chunks and k - 1 steps, a pipelined scatter k chunks and
  // k reduce-scatters; coarse they are 3 and 4 tasks. A layer holds four such pieces forward
  // (qkv, attn_out, ffn_in, ffn_out) and two backward (ffn_out_dgrad, attn_out_dgrad).
  for (long k : {4L, 8L}) {
    const Program per_step = build_program(overlapped_at(k, plan::TpOverlapModel::per_step));
    const Program coarse = build_program(overlapped_at(k, plan::TpOverlapModel::coarse));
    validate(per_step);
    validate(coarse);
    const long passes = 4 * 4;  // the fixture's 4 layers x 4 micro-batches, all on the one stage
    EXPECT_EQ(task_count(per_step.ranks[0]) - task_count(coarse.ranks[0]),
              static_cast<std::size_t>(passes * (2 * (2 * k - 1 - 3) + 2 * (2 * k - 4) + 2 * (2 * k - 1 - 3))))
        << "TP " << k;
    EXPECT_EQ(fold_ranks(coarse).classes(), 1) << "TP " << k;
  }
}

TEST(TpCommOverlap, CoarseRepeatsOneStepsCallTpMinusOneTimes) {
  for (long k : {4L, 8L}) {
    const auto per_step = tp_calls(build_program(overlapped_at(k, plan::TpOverlapModel::per_step)));
    const auto coarse = tp_calls(build_program(overlapped_at(k, plan::TpOverlapModel::coarse)));
    const std::string last = std::to_string(k - 1), before_last = std::to_string(k - 2);
    const auto& step = per_step.at("forward mb0 c0 tp ring exchange qkv chunk 1");
    const auto& ring = coarse.at("forward mb0 c0 tp ring exchange qkv chunks 1-" + last);
    EXPECT_EQ(std::get<0>(ring), collective::Op::ring_exchange);
    EXPECT_DOUBLE_EQ(std::get<1>(ring), std::get<1>(step));  // one step's shard
    EXPECT_EQ(std::get<2>(ring), k - 1);
    const auto& chunk = per_step.at("forward mb0 c0 tp reduce-scatter ffn_out chunk 0");
    const auto& scatters = coarse.at("forward mb0 c0 tp reduce-scatter ffn_out chunks 0-" + before_last);
    const auto& last_scatter = coarse.at("forward mb0 c0 tp reduce-scatter ffn_out chunk " + last);
    EXPECT_EQ(std::get<0>(scatters), collective::Op::reduce_scatter);
    EXPECT_DOUBLE_EQ(std::get<1>(scatters), std::get<1>(chunk));
    EXPECT_EQ(std::get<2>(scatters), k - 1);
    EXPECT_DOUBLE_EQ(std::get<1>(last_scatter), std::get<1>(chunk));
    EXPECT_EQ(std::get<2>(last_scatter), 1);
    // The same bytes on the wire either way, call for call summed over the step.
    double per_step_bytes = 0, coarse_bytes = 0;
    for (const auto& [name, c] : per_step) per_step_bytes += std::get<1>(c) * std::get<2>(c);
    for (const auto& [name, c] : coarse) coarse_bytes += std::get<1>(c) * std::get<2>(c);
    EXPECT_DOUBLE_EQ(coarse_bytes, per_step_bytes) << "TP " << k;
    for (const auto& [name, c] : per_step) EXPECT_EQ(std::get<2>(c), 1) << name;
  }
}

TEST(TpCommOverlap, CoarseLastChunkWaitsForTheOtherChunksAndTheWholeRing) {
  const Program p = build_program(overlapped_at(4, plan::TpOverlapModel::coarse));
  const RankProgram& r = p.ranks[0];
  int ring_index = -1;
  const Stream* compute = stream_named(r, "compute");
  const Stream* ring = stream_named(r, "tp ring", &ring_index);
  ASSERT_TRUE(compute && ring);
  auto index_of = [](const Stream& s, const std::string& name) {
    for (std::size_t i = 0; i < s.tasks.size(); ++i)
      if (std::string(s.tasks[i].name) == name) return static_cast<int>(i);
    return -1;
  };
  const int leading = index_of(*compute, "forward mb0 c0 qkv chunks 0-2");
  const int steps = index_of(*ring, "forward mb0 c0 tp ring exchange qkv chunks 1-3");
  const int last = index_of(*compute, "forward mb0 c0 qkv chunk 3");
  ASSERT_TRUE(leading >= 0 && steps >= 0 && last >= 0);
  EXPECT_TRUE(ring->tasks[static_cast<std::size_t>(steps)].deps == compute->tasks[static_cast<std::size_t>(leading)].deps);
  EXPECT_TRUE((compute->tasks[static_cast<std::size_t>(last)].deps ==
               TaskDeps{TaskRef{0, leading}, TaskRef{ring_index, steps}}));
}

TEST(TpCommOverlap, UserbuffersMoveFp8WhereTransformerEngineAllocatesThemInFp8) {
  // TE's initialize_ub: every all-gather buffer FP8 with FP8 on; a pipelined reduce-scatter only
  // where its fp8_buf is configured; the bulk reduce-scatters bf16.
  const ScheduleInputs in = overlapped();
  const auto forward = model::layer_forward_ops(in.model, shape_of(in));
  const auto backward = model::layer_backward_ops(in.model, shape_of(in));
  for (const auto& p : tp_overlap_pieces(forward, true))
    if (p.kind != Kind::compute) { EXPECT_TRUE(p.gather_bytes == 2 && p.scatter_bytes == 2) << p.ops.front().name; }
  const UserbufferPrecision proj_fp8{true, true, false};
  for (const auto& p : tp_overlap_pieces(forward, true, proj_fp8)) {
    if (p.kind == Kind::ring_gather) { EXPECT_EQ(p.gather_bytes, 1) << p.ops.front().name; }
    if (p.kind == Kind::pipelined_scatter) {
      EXPECT_EQ(p.scatter_bytes, p.ops.front().name == "attn_out" ? 1 : 2) << p.ops.front().name;
    }
  }
  const UserbufferPrecision fc2_fp8{true, false, true};
  for (const auto& p : tp_overlap_pieces(forward, true, fc2_fp8)) {
    if (p.kind == Kind::pipelined_scatter) {
      EXPECT_EQ(p.scatter_bytes, p.ops.front().name == "ffn_out" ? 1 : 2) << p.ops.front().name;
    }
  }
  // fp8_buf means nothing without FP8: TE allocates the buffer in the activation dtype.
  for (const auto& p : tp_overlap_pieces(forward, true, {false, true, true}))
    if (p.kind != Kind::compute) { EXPECT_TRUE(p.gather_bytes == 2 && p.scatter_bytes == 2) << p.ops.front().name; }
  int bulk = 0;
  for (const auto& p : tp_overlap_pieces(backward, false, {true, true, true})) {
    if (p.kind == Kind::ring_gather) { EXPECT_EQ(p.gather_bytes, 1) << p.ops.front().name; }  // proj/fc2_dgrad
    if (p.kind == Kind::bulk) {
      ++bulk;
      EXPECT_EQ(p.gather_bytes, 1) << p.ops.front().name;   // the re-gathered FP8 norm output
      EXPECT_EQ(p.scatter_bytes, 2) << p.ops.front().name;  // qkv/fc1_wgrad: bf16
    }
  }
  EXPECT_EQ(bulk, 2);
}

TEST(TpCommOverlap, TheScheduleSizesTheRingAndScattersByTheUserbuffersPrecision) {
  auto sizes = [](bool fp8, bool proj_fp8_buf) {
    ScheduleInputs in = overlapped();
    in.model.learned_positions = false;
    if (fp8) {
      in.plan.linear_precision = plan::LinearPrecision::fp8;
      in.plan.fp8_implementation = plan::Fp8Implementation::transformer_engine;
      in.device = model::load_device_profile("tests/data/fp8/device.json");
    }
    in.plan.tp_overlap_fp8_proj_scatter = proj_fp8_buf;
    const Program p = build_program(in);
    validate(p);
    std::map<std::string, double> by_name;
    for (const auto& st : p.ranks[0].streams)
      for (const Task& t : st.tasks)
        if (t.collective >= 0) by_name[t.name.str()] = p.collectives[static_cast<std::size_t>(t.collective)].size;
    return by_name;
  };
  const auto bf16 = sizes(false, false), fp8 = sizes(true, false), fp8_proj = sizes(true, true);
  const double activation = 2.0 * 1 * 16 * 64;  // the fixture's b x s x h in bf16; TP 2
  const std::vector<std::pair<std::string, double>> expected = {
      {"forward mb0 c0 tp ring exchange qkv chunk 1", 0.5},
      {"forward mb0 c0 tp ring exchange ffn_in chunk 1", 0.5},
      {"backward mb0 c0 tp ring exchange attn_out_dgrad chunk 1", 0.5},
      {"backward mb0 c0 tp re-gather qkv_dgrad", 0.5},
      {"backward mb0 c0 tp reduce-scatter qkv_dgrad", 1},
      {"forward mb0 c0 tp reduce-scatter attn_out chunk 0", 1},
      {"forward mb0 c0 tp reduce-scatter ffn_out chunk 1", 1}};
  for (const auto& [name, fp8_over_bf16] : expected) {
    ASSERT_TRUE(bf16.count(name) && fp8.count(name)) << name;
    EXPECT_DOUBLE_EQ(fp8.at(name), fp8_over_bf16 * bf16.at(name)) << name;
  }
  EXPECT_DOUBLE_EQ(bf16.at("forward mb0 c0 tp ring exchange qkv chunk 1"), activation / 2);
  EXPECT_DOUBLE_EQ(fp8_proj.at("forward mb0 c0 tp reduce-scatter attn_out chunk 0"), activation / 4);
  EXPECT_DOUBLE_EQ(fp8_proj.at("forward mb0 c0 tp reduce-scatter ffn_out chunk 0"), activation / 2);
}

TEST(TpCommOverlap, OffByDefaultLeavesTheProgramAsItWas) {
  ScheduleInputs in = overlapped();
  const Program on = build_program(in);
  in.plan.tp_comm_overlap = false;
  const Program off = build_program(in);
  for (const auto& st : off.ranks[0].streams) EXPECT_NE(st.name, "tp ring");
  EXPECT_GT(on.collectives.size(), off.collectives.size());  // the ring's steps and the chunks' scatters
}

}  // namespace
}  // namespace trainsim::program

// The layout search's candidates without loading or simulating anything: the default axes, the
// accumulation that keeps the global batch, the combinations set aside with their reason, the
// point's own layout marked, and the scenario document each candidate becomes.
#include "search/layout_candidates.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

namespace trainsim::search {
namespace {

using nlohmann::json;

PointShape pipelined() {
  PointShape s;
  s.nodes = 2;
  s.ranks_per_node = 8;
  s.global_batch = 32;
  s.tp = 4;
  s.pp = 2;
  s.micro_batch = 2;
  s.checkpointing = true;
  return s;
}

/// A space of the given degrees, micro-batches and checkpointing, full sharding only; the other
/// axes empty (the point's own).
SearchSpace space_of(std::vector<long> tp, std::vector<long> pp, std::vector<long> micro_batch,
                     std::vector<bool> checkpointing) {
  SearchSpace space;
  space.tp = std::move(tp);
  space.pp = std::move(pp);
  space.micro_batch = std::move(micro_batch);
  space.checkpointing = std::move(checkpointing);
  space.shard = {0};
  return space;
}

TEST(LayoutCandidates, ModelParallelPointsSearchTpToANodeAndPpOverTheDivisors) {
  const auto space = complete_space({}, pipelined(), /*layers=*/6);
  EXPECT_EQ(space.tp, (std::vector<long>{1, 2, 4, 8}));
  EXPECT_EQ(space.pp, (std::vector<long>{1, 2, 4}));  // divisors of 16 up to the 6 layers
  EXPECT_EQ(space.checkpointing, (std::vector<bool>{false, true}));
  EXPECT_EQ(space.shard, (std::vector<long>{0}));
  EXPECT_TRUE(space.micro_batch.empty());  // per layout: the powers of two of the replica's batch
}

TEST(LayoutCandidates, FsdpPointsSearchFullAndWholeNodeShardGroups) {
  PointShape s = pipelined();
  s.tp = s.pp = 1;
  s.nodes = 8;
  s.fsdp = true;
  s.shard = 16;
  EXPECT_EQ(complete_space({}, s, 6).shard, (std::vector<long>{0, 8, 16, 32}));  // 64 = full: 0
  s.fsdp = false;
  EXPECT_EQ(complete_space({}, s, 6).shard, (std::vector<long>{16}));
}

TEST(LayoutCandidates, ThePointsOwnDegreesAreAlwaysTried) {
  PointShape s = pipelined();
  s.tp = 16;  // across two nodes, as Megatron's Figure 13 runs TP 16 and 32
  s.pp = 1;
  EXPECT_EQ(complete_space({}, s, 6).tp, (std::vector<long>{1, 2, 4, 8, 16}));
}

TEST(LayoutCandidates, ShardGroupsThatDoNotDivideTheDataParallelGroupAreSetAside) {
  SearchSpace space;
  space.tp = {4};
  space.pp = {1};
  space.micro_batch = {1};
  space.checkpointing = {true};
  space.shard = {0, 2, 3, 4, 8};
  PointShape s = pipelined();
  s.schedule = "zero1";
  const auto e = enumerate_layouts(space, s);  // DP 4
  // 4 is the whole DP (full sharding, the 0 entry) and 8 exists only at other degrees.
  ASSERT_EQ(e.candidates.size(), 2u);
  EXPECT_EQ(e.candidates[0].shard, 0);
  EXPECT_EQ(e.candidates[1].shard, 2);
  ASSERT_EQ(e.skipped.size(), 1u);
  EXPECT_EQ(e.skipped[0].reason, "shard group 3 does not divide DP 4");
  // Without a full-sharding entry, the whole DP is its own candidate.
  space.shard = {4};
  const auto whole = enumerate_layouts(space, s);
  ASSERT_EQ(whole.candidates.size(), 1u);
  EXPECT_EQ(whole.candidates[0].shard, 4);
}

TEST(LayoutCandidates, DataParallelPointsKeepTheirDegreesUnlessAsked) {
  PointShape dp = pipelined();
  dp.tp = dp.pp = 1;
  const auto kept = complete_space({}, dp, 6);
  EXPECT_EQ(kept.tp, (std::vector<long>{1}));
  EXPECT_EQ(kept.pp, (std::vector<long>{1}));
  SearchSpace asked;
  asked.tp = {4, 2, 4};
  asked.checkpointing = {true};
  const auto given = complete_space(asked, dp, 6);
  EXPECT_EQ(given.tp, (std::vector<long>{2, 4}));  // sorted, duplicates dropped
  EXPECT_EQ(given.checkpointing, (std::vector<bool>{true}));
}

TEST(LayoutCandidates, EveryCandidateTrainsTheGlobalBatch) {
  SearchSpace space = space_of({2, 4}, {2}, {}, {true});
  const auto e = enumerate_layouts(space, pipelined());
  // TP 2: DP 4, 8 sequences per replica: micro-batch 1, 2, 4, 8; TP 4: DP 2, 16: 1, 2, 4, 8, 16.
  ASSERT_EQ(e.candidates.size(), 4u + 5u);
  for (const auto& c : e.candidates) {
    EXPECT_EQ(c.tp * c.pp * c.dp, 16);
    EXPECT_EQ(c.micro_batch * c.accumulation * c.dp, 32) << c.label();
  }
  const auto original = std::count_if(e.candidates.begin(), e.candidates.end(),
                                      [](const Candidate& c) { return c.is_original; });
  EXPECT_EQ(original, 1);
  const auto it = std::find_if(e.candidates.begin(), e.candidates.end(),
                               [](const Candidate& c) { return c.is_original; });
  EXPECT_EQ(it->label(), "TP 4, PP 2, DP 2, micro-batch 2 x 8, checkpointing");
  EXPECT_TRUE(e.skipped.empty());
}

TEST(LayoutCandidates, CombinationsThatCannotRunAreSetAsideWithTheReason) {
  SearchSpace space = space_of({3, 8}, {4}, {3}, {false});
  PointShape s = pipelined();
  s.global_batch = 8;
  const auto e = enumerate_layouts(space, s);
  EXPECT_TRUE(e.candidates.empty());
  ASSERT_EQ(e.skipped.size(), 2u);
  EXPECT_EQ(e.skipped[0].reason, "TP x PP = 12 does not divide the 16 accelerators");
  // TP 8 x PP 4 = 32 > 16 as well.
  EXPECT_EQ(e.skipped[1].reason, "TP x PP = 32 does not divide the 16 accelerators");
  space.tp = {4};
  space.pp = {1};
  const auto m = enumerate_layouts(space, s);
  ASSERT_EQ(m.skipped.size(), 1u);
  EXPECT_EQ(m.skipped[0].reason,
            "micro-batch 3 does not divide the replica's 2 sequences per step");
  s.global_batch = 6;
  space.micro_batch = {1};
  const auto g = enumerate_layouts(space, s);
  ASSERT_EQ(g.skipped.size(), 1u);
  EXPECT_EQ(g.skipped[0].reason, "the global batch of 6 sequences does not divide over DP 4");
}

TEST(LayoutCandidates, TheDocumentMergesTrainingAndDropsWhatTheLayoutCannotUse) {
  const json doc = json::parse(R"({
    "training": {"schedule": "zero1", "micro_batch": 2, "sequence_parallel": true, "tp_comm_overlap": true,
                 "tp_comm_overlap_model": "coarse", "pipeline_schedule": "interleaved", "virtual_stages": 2,
                 "activation_checkpointing": true, "checkpoint_policy": "selective_attention"},
    "points": [{"nodes": 1, "label": "other"},
               {"nodes": 2, "label": "mine", "reference_samples_per_s": 3.0, "data_parallel_degree": 2,
                "note": "n", "training": {"tensor_parallel": 4, "pipeline_parallel": 2, "gradient_accumulation": 8}}]
  })");
  Candidate c;
  c.schedule = "zero1";
  c.tp = 1;
  c.pp = 1;
  c.dp = 16;
  c.micro_batch = 1;
  c.accumulation = 2;
  c.checkpointing = false;
  const json out = candidate_document(doc, 1, c);
  ASSERT_EQ(out["points"].size(), 1u);
  const json& p = out["points"][0];
  EXPECT_EQ(p["nodes"], 2);
  EXPECT_EQ(p["label"], c.label());
  for (const char* gone : {"reference_samples_per_s", "data_parallel_degree", "note", "training"})
    EXPECT_FALSE(p.contains(gone)) << gone;
  const json& t = out["training"];
  EXPECT_EQ(t["schedule"], "zero1");
  EXPECT_EQ(t["tensor_parallel"], 1);
  EXPECT_EQ(t["pipeline_parallel"], 1);
  EXPECT_EQ(t["micro_batch"], 1);
  EXPECT_EQ(t["gradient_accumulation"], 2);
  EXPECT_EQ(t["activation_checkpointing"], false);
  for (const char* gone : {"sequence_parallel", "tp_comm_overlap", "tp_comm_overlap_model",
                           "pipeline_schedule", "virtual_stages", "checkpoint_policy"})
    EXPECT_FALSE(t.contains(gone)) << gone;

  c.tp = 4;
  c.pp = 2;
  c.virtual_stages = 2;
  c.checkpointing = true;
  c.sequence_parallel = true;
  c.shard = 8;
  const json kept = candidate_document(doc, 1, c)["training"];
  EXPECT_EQ(kept["sequence_parallel"], true);
  EXPECT_EQ(kept["tp_comm_overlap"], true);
  EXPECT_EQ(kept["pipeline_schedule"], "interleaved");
  EXPECT_EQ(kept["virtual_stages"], 2);
  EXPECT_EQ(kept["checkpoint_policy"], "selective_attention");
  EXPECT_EQ(kept["hybrid_shard_degree"], 8);
}

TEST(LayoutCandidates, ACandidateWithoutContextParallelismDropsHowItsGroupWouldExchange) {
  const json doc = json::parse(R"({"training": {"schedule": "zero1", "context_parallel": 2, "cp_comm_type": "a2a"},
                                   "points": [{"nodes": 1, "label": "mine"}]})");
  Candidate c;
  c.schedule = "zero1";
  c.cp = 2;
  c.cp_comm = "a2a";
  c.dp = 4;
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["cp_comm_type"], "a2a");
  c.cp_comm = "all_gather";
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["cp_comm_type"], "all_gather");
  c.cp = 1;
  c.dp = 8;
  const json t = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(t["context_parallel"], 1);
  EXPECT_FALSE(t.contains("cp_comm_type"));
}

TEST(LayoutCandidates, FullShardingFollowsTheLayoutsDataParallelGroup) {
  // A point that shards over its 256 ranks, searched on 8 nodes: full sharding is over DP 64.
  const json doc = json::parse(R"({"training": {"schedule": "fsdp", "hybrid_shard_degree": 256},
                                   "points": [{"nodes": 32, "label": "mine"}]})");
  Candidate c;
  c.schedule = "fsdp";
  c.dp = 64;
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["hybrid_shard_degree"], 64);
  c.shard = 16;
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["hybrid_shard_degree"], 16);
  // A schedule without the key does not get one.
  c.shard = 0;
  c.schedule = "ddp";
  EXPECT_FALSE(candidate_document(
                   json::parse(R"({"training": {"schedule": "ddp"}, "points": [{"label": "x"}]})"),
                   0, c)["training"]
                   .contains("hybrid_shard_degree"));
}

TEST(LayoutCandidates, MegatronPipelinesTryInterleavingWithOneAndTwoChunksAndTheirOwn) {
  PointShape s = pipelined();
  s.interleavable = true;
  s.virtual_stages = 3;
  EXPECT_EQ(complete_space({}, s, 6).virtual_stages, (std::vector<long>{1, 2, 3}));
  s.interleavable = false;  // DeepSpeed's pipeline engine runs 1F1B only
  s.virtual_stages = 1;
  EXPECT_EQ(complete_space({}, s, 6).virtual_stages, (std::vector<long>{1}));
  SearchSpace asked;
  asked.virtual_stages = {4, 2, 4};
  EXPECT_EQ(complete_space(asked, s, 6).virtual_stages, (std::vector<long>{2, 4}));
}

TEST(LayoutCandidates, VirtualStagesAreCombinedOnlyWithPipelines) {
  PointShape s = pipelined();
  s.virtual_stages = 2;
  SearchSpace space = space_of({4}, {1, 2}, {2}, {true});
  space.virtual_stages = {1, 2};
  const auto e = enumerate_layouts(space, s);
  ASSERT_EQ(e.candidates.size(), 3u);  // PP 1 once, PP 2 with one and two chunks
  EXPECT_EQ(e.candidates[0].pp, 1);
  EXPECT_EQ(e.candidates[0].virtual_stages, 1);
  EXPECT_EQ(e.candidates[1].virtual_stages, 1);
  EXPECT_FALSE(e.candidates[1].is_original);
  EXPECT_EQ(e.candidates[2].virtual_stages, 2);
  EXPECT_TRUE(e.candidates[2].is_original);
  EXPECT_EQ(e.candidates[2].label(),
            "TP 4, PP 2, DP 2, micro-batch 2 x 8, checkpointing, interleaved x 2");
}

TEST(LayoutCandidates, OneChunkOfAnInterleavedPointRunsPlain1F1BWithoutInterleavedOnlyOptions) {
  const json doc = json::parse(R"({
    "training": {"pipeline_schedule": "interleaved", "virtual_stages": 4, "overlap_p2p_comm": true,
                 "overlap_param_gather_with_optimizer_step": true},
    "points": [{"nodes": 2, "label": "mine"}]
  })");
  Candidate c;
  c.tp = 2;
  c.pp = 4;
  c.dp = 2;
  c.virtual_stages = 1;
  const json t = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(t["pipeline_schedule"], "1f1b");
  for (const char* gone :
       {"virtual_stages", "overlap_p2p_comm", "overlap_param_gather_with_optimizer_step"})
    EXPECT_FALSE(t.contains(gone)) << gone;
  c.virtual_stages = 2;
  const json i = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(i["virtual_stages"], 2);
  EXPECT_EQ(i["overlap_p2p_comm"], true);
  // At one chunk the candidate says GPipe or 1F1B, whatever the point ran.
  json gpipe = doc;
  gpipe["training"] = {{"pipeline_schedule", "gpipe"}};
  c.virtual_stages = 1;
  c.pipeline = "gpipe";
  EXPECT_EQ(candidate_document(gpipe, 0, c)["training"]["pipeline_schedule"], "gpipe");
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["pipeline_schedule"], "gpipe");
  c.pipeline = "zb-h1";
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["pipeline_schedule"], "zb-h1");
  // ZB-V sends whole stage tensors: under TP without SP the candidate says so.
  c.pipeline = "zb-v";
  const json v = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(v["pipeline_schedule"], "zb-v");
  EXPECT_FALSE(v.contains("virtual_stages"));
  EXPECT_EQ(v["pipeline_scatter_gather"], false);  // TP 2, no SP
  c.pipeline = "1f1b";
  EXPECT_EQ(candidate_document(gpipe, 0, c)["training"]["pipeline_schedule"], "1f1b");
}

TEST(LayoutCandidates, SchedulesAreAnAxisOnlyWhenAsked) {
  PointShape s = pipelined();
  s.tp = s.pp = 1;
  s.schedule = "fsdp";
  s.fsdp = true;
  EXPECT_EQ(complete_space({}, s, 6).schedule, (std::vector<std::string>{"fsdp"}));
  SearchSpace asked;
  asked.schedule = {"fsdp", "ddp", "zero3", "ddp"};
  EXPECT_EQ(complete_space(asked, s, 6).schedule,
            (std::vector<std::string>{"ddp", "zero3", "fsdp"}));  // schedule_names() order
  // A DDP point searched over FSDP too gets FSDP's shard groups: full, then whole nodes.
  PointShape d = pipelined();
  d.tp = d.pp = 1;
  d.nodes = 4;
  asked.schedule = {"ddp", "fsdp"};
  EXPECT_EQ(complete_space(asked, d, 6).shard, (std::vector<long>{0, 8, 16}));
}

TEST(LayoutCandidates, EachScheduleIsEnumeratedAndNamedDdpOnceWithoutShardGroups) {
  PointShape s = pipelined();  // 16 accelerators, global batch 32
  s.tp = s.pp = 1;
  s.micro_batch = 2;
  s.checkpointing = false;
  s.schedule = "zero1";
  SearchSpace space;
  space.schedule = {"ddp", "zero1", "fsdp"};
  space.tp = {1};
  space.pp = {1};
  space.micro_batch = {2};
  space.checkpointing = {false};
  space.shard = {0, 8};
  const auto e = enumerate_layouts(space, s);
  ASSERT_EQ(e.candidates.size(), 5u);  // DDP once; ZeRO-1 and FSDP full and over 8
  EXPECT_EQ(e.candidates[0].label(), "DDP, TP 1, PP 1, DP 16, micro-batch 2 x 1");
  EXPECT_EQ(e.candidates[1].schedule, "zero1");
  EXPECT_TRUE(e.candidates[1].is_original);
  EXPECT_EQ(e.candidates[4].label(), "FSDP, TP 1, PP 1, DP 16, micro-batch 2 x 1, shard 8");
  EXPECT_EQ(std::count_if(e.candidates.begin(), e.candidates.end(),
                          [](const Candidate& c) { return c.is_original; }),
            1);
  // Only the point's own schedule: labels as before, without a schedule.
  space.schedule = {"zero1"};
  const auto own = enumerate_layouts(space, s);
  ASSERT_EQ(own.candidates.size(), 2u);
  EXPECT_EQ(own.candidates[0].label(), "TP 1, PP 1, DP 16, micro-batch 2 x 1");
  // DDP with no full-sharding entry on the shard axis has nothing to try, and says so.
  space.schedule = {"ddp", "zero1"};
  space.shard = {8};
  const auto no_full = enumerate_layouts(space, s);
  ASSERT_EQ(no_full.candidates.size(), 1u);
  ASSERT_EQ(no_full.skipped.size(), 1u);
  EXPECT_EQ(no_full.skipped[0].reason, "DDP shards nothing: the shard axis has no full sharding");
}

TEST(LayoutCandidates, AnotherScheduleKeepsThePrecisionExceptFsdpsOwnAndShardsOnlyWhereItCan) {
  const json doc = json::parse(R"({
    "training": {"schedule": "fsdp", "precision": "fsdp_mixed", "hybrid_shard_degree": 8,
                 "fsdp_backward_prefetch": "pre"},
    "points": [{"nodes": 4, "label": "mine"}]
  })");
  Candidate c;
  c.dp = 32;
  c.schedule = "zero3";
  const json z = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(z["schedule"], "zero3");
  EXPECT_EQ(z["precision"], "amp");  // bf16 weights and gradients, fp32 master weights
  EXPECT_EQ(z["hybrid_shard_degree"], 32);
  EXPECT_EQ(z["fsdp_backward_prefetch"], "pre");  // the loader says whether it applies
  c.schedule = "ddp";
  EXPECT_FALSE(candidate_document(doc, 0, c)["training"].contains("hybrid_shard_degree"));
  c.schedule = "fsdp";
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["precision"], "fsdp_mixed");
  json amp = doc;
  amp["training"]["schedule"] = "zero1";
  amp["training"]["precision"] = "amp";
  EXPECT_EQ(candidate_document(amp, 0, c)["training"]["precision"], "amp");
}

TEST(LayoutCandidates, OnlyTheFrameworksOwnOptionsAreLeftOutForAnotherSchedule) {
  const json doc = json::parse(R"({"training": {"schedule": "zero1", "precision": "amp",
      "megatron_step_syncs": true, "tensor_parallel": 2, "composer_train_metrics": []},
      "points": [{"label": "x"}]})");
  EXPECT_EQ(option_of_another_schedule(doc, "/training/megatron_step_syncs"),
            std::optional<std::string>("megatron_step_syncs"));
  EXPECT_EQ(option_of_another_schedule(doc, "/training/composer_train_metrics"),
            std::optional<std::string>("composer_train_metrics"));
  // What defines the layout, its numbers or kernels is never dropped: the candidate is invalid.
  for (const char* kept :
       {"/training/precision", "/training/tensor_parallel", "/training/schedule"})
    EXPECT_EQ(option_of_another_schedule(doc, kept), std::nullopt) << kept;
  // Not a training option, or one the document does not have (a required one): nothing to drop.
  EXPECT_EQ(option_of_another_schedule(doc, "/points/0/nodes"), std::nullopt);
  EXPECT_EQ(option_of_another_schedule(doc, "/training/gradient_buffers"), std::nullopt);
  EXPECT_EQ(option_of_another_schedule(doc, "/training/composer_train_metrics/0"), std::nullopt);
}

TEST(LayoutCandidates, MegatronsGradientBuffersFollowItsTwoSchedulesAndTheChangesAreNamed) {
  const json doc = json::parse(R"({
    "training": {"schedule": "ddp", "precision": "bf16_fp32_grads", "gradient_buffers": "megatron-local-ddp",
                 "micro_batch": 1},
    "points": [{"nodes": 2, "label": "mine", "training": {"tensor_parallel": 8}}]
  })");
  const json own = point_training(doc, 0);
  EXPECT_EQ(own["tensor_parallel"], 8);
  Candidate c;
  c.tp = 8;
  c.dp = 2;
  c.schedule = "zero1";
  const json z = candidate_document(doc, 0, c)["training"];
  EXPECT_EQ(z["gradient_buffers"],
            "megatron-core-distributed-optimizer");  // its distributed optimizer
  EXPECT_EQ(
      changed_settings(own, z),
      (std::vector<std::string>{
          R"(gradient_buffers: "megatron-local-ddp" -> "megatron-core-distributed-optimizer")"}));
  json nemo = doc;
  nemo["training"]["schedule"] = "zero1";
  nemo["training"]["gradient_buffers"] = "apex-distributed-fused-adam";
  c.schedule = "ddp";
  EXPECT_EQ(candidate_document(nemo, 0, c)["training"]["gradient_buffers"], "megatron-local-ddp");
  // Elsewhere the loader decides (the named buffers are left out under ZeRO-2/3 and FSDP).
  c.schedule = "zero3";
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["gradient_buffers"], "megatron-local-ddp");
  // The layout's own axes are not "changes": the label names them.
  c.schedule = "ddp";
  c.tp = 4;
  c.micro_batch = 2;
  EXPECT_TRUE(changed_settings(own, candidate_document(doc, 0, c)["training"]).empty());
}

TEST(LayoutCandidates, SequenceParallelismIsTriedOnlyWithTensorParallelism) {
  PointShape s = pipelined();  // TP 4, PP 2, no sequence parallelism
  EXPECT_EQ(complete_space({}, s, 6).sequence_parallel, (std::vector<bool>{false}));
  SearchSpace space = space_of({1, 4}, {2}, {2}, {true});
  space.sequence_parallel = {false, true};
  const auto e = enumerate_layouts(space, s);
  ASSERT_EQ(e.candidates.size(), 3u);  // TP 1 once, TP 4 with and without
  EXPECT_FALSE(e.candidates[0].sequence_parallel);
  EXPECT_FALSE(e.candidates[1].sequence_parallel);
  EXPECT_TRUE(e.candidates[1].is_original);
  EXPECT_TRUE(e.candidates[2].sequence_parallel);
  EXPECT_EQ(e.candidates[2].label(),
            "TP 4, PP 2, DP 2, micro-batch 2 x 8, checkpointing, sequence parallel");
  // Without it, Transformer Engine's TP overlap (which needs it) goes too.
  const json doc = json::parse(R"({"training": {"schedule": "ddp", "sequence_parallel": true,
      "tp_comm_overlap": true, "tp_comm_overlap_model": "coarse"}, "points": [{"label": "x"}]})");
  const json off = candidate_document(doc, 0, e.candidates[1])["training"];
  EXPECT_EQ(off["sequence_parallel"], false);
  EXPECT_FALSE(off.contains("tp_comm_overlap"));
  EXPECT_FALSE(off.contains("tp_comm_overlap_model"));
  EXPECT_EQ(candidate_document(doc, 0, e.candidates[2])["training"]["tp_comm_overlap"], true);
}

TEST(LayoutCandidates, OffloadingIsTriedOnlyWithCheckpointing) {
  PointShape s = pipelined();  // checkpointing, no offloading
  s.tp = 1;
  s.pp = 1;
  SearchSpace space = space_of({1}, {1}, {2}, {false, true});
  space.offloading = {false, true};
  const auto e = enumerate_layouts(space, s);
  ASSERT_EQ(e.candidates.size(), 3u);  // no checkpointing once; checkpointing with and without
  EXPECT_FALSE(e.candidates[0].checkpointing);
  EXPECT_FALSE(e.candidates[0].offloading);
  EXPECT_TRUE(e.candidates[1].is_original);
  EXPECT_TRUE(e.candidates[2].offloading);
  EXPECT_EQ(e.candidates[2].label(),
            "TP 1, PP 1, DP 16, micro-batch 2 x 1, checkpointing, offloading");
  const json doc =
      json::parse(R"({"training": {"schedule": "fsdp", "activation_checkpointing": true,
      "activation_offloading": true}, "points": [{"label": "x"}]})");
  EXPECT_FALSE(
      candidate_document(doc, 0, e.candidates[0])["training"].contains("activation_offloading"));
  EXPECT_FALSE(
      candidate_document(doc, 0, e.candidates[1])["training"].contains("activation_offloading"));
  EXPECT_EQ(candidate_document(doc, 0, e.candidates[2])["training"]["activation_offloading"], true);
  // The point's own offloading is its default.
  s.offloading = true;
  EXPECT_EQ(complete_space({}, s, 6).offloading, (std::vector<bool>{true}));
}

TEST(LayoutCandidates, CheckpointPoliciesAreTriedWhereCheckpointingIsOnAndOffloadingOnlyWithFull) {
  PointShape s = pipelined();  // full checkpointing, no offloading
  s.tp = 1;
  s.pp = 1;
  SearchSpace space = space_of({1}, {1}, {2}, {false, true});
  space.offloading = {false, true};
  space.checkpoint_policy = {"selective_op", "full"};
  space = complete_space(space, s, 6);
  EXPECT_EQ(space.checkpoint_policy, (std::vector<std::string>{"full", "selective_op"}));  // the names' order
  const auto e = enumerate_layouts(space, s);
  // Off once; full with and without offloading; selective_op without.
  ASSERT_EQ(e.candidates.size(), 4u);
  EXPECT_FALSE(e.candidates[0].checkpointing);
  EXPECT_EQ(e.candidates[1].checkpoint_policy, "full");
  EXPECT_TRUE(e.candidates[1].is_original);
  EXPECT_TRUE(e.candidates[2].offloading);
  EXPECT_EQ(e.candidates[3].checkpoint_policy, "selective_op");
  EXPECT_FALSE(e.candidates[3].offloading);
  EXPECT_FALSE(e.candidates[3].is_original);
  EXPECT_EQ(e.candidates[3].label(), "TP 1, PP 1, DP 16, micro-batch 2 x 1, checkpointing selective_op");
  const json doc = json::parse(R"({"training": {"schedule": "fsdp", "activation_checkpointing": true,
      "flash_attention": true}, "points": [{"label": "x"}]})");
  EXPECT_EQ(candidate_document(doc, 0, e.candidates[3])["training"]["checkpoint_policy"], "selective_op");
  EXPECT_EQ(candidate_document(doc, 0, e.candidates[1])["training"]["checkpoint_policy"], "full");
  EXPECT_FALSE(candidate_document(doc, 0, e.candidates[0])["training"].contains("checkpoint_policy"));
  // Without the axis each layout keeps the point's own policy, which its document already says.
  s.checkpoint_policy = "selective_op";
  space.checkpoint_policy.clear();
  space.offloading.clear();
  const auto own = enumerate_layouts(space, s);
  ASSERT_EQ(own.candidates.size(), 2u);
  EXPECT_EQ(own.candidates[1].checkpoint_policy, "selective_op");
  EXPECT_TRUE(own.candidates[1].is_original);
  EXPECT_EQ(own.candidates[1].label(), "TP 1, PP 1, DP 16, micro-batch 2 x 1, checkpointing");
  EXPECT_FALSE(candidate_document(doc, 0, own.candidates[1])["training"].contains("checkpoint_policy"));
}

TEST(LayoutCandidates, GpipeIsTriedOnlyOnPipelinesWithoutVirtualStages) {
  PointShape s = pipelined();
  s.interleavable = true;
  SearchSpace space = space_of({4}, {1, 2}, {2}, {true});
  space.virtual_stages = {1, 2};
  space.pipeline_schedule = {"zb-h1", "1f1b", "gpipe"};
  const auto completed = complete_space(space, s, 6);
  EXPECT_EQ(completed.pipeline_schedule, (std::vector<std::string>{"gpipe", "1f1b", "zb-h1"}));
  const auto e = enumerate_layouts(completed, s);
  // PP 1 once (no pipeline to schedule), PP 2 as GPipe, 1F1B, ZB-H1 and interleaved x 2.
  ASSERT_EQ(e.candidates.size(), 5u);
  EXPECT_EQ(e.candidates[0].pp, 1);
  EXPECT_EQ(e.candidates[0].pipeline, "1f1b");
  EXPECT_EQ(e.candidates[1].pipeline, "gpipe");
  EXPECT_EQ(e.candidates[1].label(), "TP 4, PP 2, DP 2, micro-batch 2 x 8, checkpointing, GPipe");
  EXPECT_FALSE(e.candidates[1].is_original);
  EXPECT_EQ(e.candidates[2].pipeline, "1f1b");
  EXPECT_TRUE(e.candidates[2].is_original);  // the point runs 1F1B
  EXPECT_EQ(e.candidates[3].pipeline, "zb-h1");
  EXPECT_EQ(e.candidates[3].label(), "TP 4, PP 2, DP 2, micro-batch 2 x 8, checkpointing, ZB-H1");
  EXPECT_EQ(e.candidates[4].virtual_stages, 2);
  EXPECT_EQ(e.candidates[4].pipeline, "1f1b");
  // A GPipe point's own schedule is the default, and its layout is the GPipe one.
  s.pipeline = "gpipe";
  EXPECT_EQ(complete_space({}, s, 6).pipeline_schedule, (std::vector<std::string>{"gpipe"}));
  space.pipeline_schedule = {"gpipe", "1f1b"};
  space.virtual_stages = {1};
  const auto own = enumerate_layouts(space, s);
  ASSERT_EQ(own.candidates.size(), 3u);
  EXPECT_EQ(own.candidates[1].pipeline, "gpipe");
  EXPECT_TRUE(own.candidates[1].is_original);
  EXPECT_FALSE(own.candidates[2].is_original);
}

TEST(LayoutCandidates, ContextParallelismDividesTheAcceleratorsWithTpAndPp) {
  PointShape s = pipelined();  // 16 accelerators, global batch 32
  s.tp = 2;
  s.pp = 1;
  s.context_parallel = 2;
  s.micro_batch = 1;
  s.checkpointing = false;  // (the loader rejects CP with it)
  EXPECT_EQ(complete_space({}, s, 6).cp, (std::vector<long>{2}));  // the point's own
  SearchSpace space = space_of({2, 8}, {1}, {1}, {false});
  space.cp = {4, 1, 3, 2};
  const auto completed = complete_space(space, s, 6);
  EXPECT_EQ(completed.cp, (std::vector<long>{1, 2, 3, 4}));
  const auto e = enumerate_layouts(completed, s);
  std::vector<std::string> labels;
  for (const auto& c : e.candidates) labels.push_back(c.label());
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "TP 2, PP 1, DP 8, micro-batch 1 x 4",
                        "TP 2, CP 2, PP 1, DP 4, micro-batch 1 x 8",
                        "TP 2, CP 4, PP 1, DP 2, micro-batch 1 x 16",
                        "TP 8, PP 1, DP 2, micro-batch 1 x 16",
                        "TP 8, CP 2, PP 1, DP 1, micro-batch 1 x 32",
                    }));
  EXPECT_TRUE(e.candidates[1].is_original);
  EXPECT_EQ(std::count_if(e.candidates.begin(), e.candidates.end(),
                          [](const Candidate& c) { return c.is_original; }),
            1);
  // CP 3 divides nothing here, and TP 8 x CP 4 is more than the accelerators.
  std::vector<std::string> reasons;
  for (const auto& k : e.skipped) reasons.push_back(k.reason);
  EXPECT_EQ(reasons, (std::vector<std::string>{
                         "TP x PP x CP = 6 does not divide the 16 accelerators",
                         "TP x PP x CP = 24 does not divide the 16 accelerators",
                         "TP x PP x CP = 32 does not divide the 16 accelerators",
                     }));

  // The document: the candidate's CP, also back to 1 where the point had more.
  const json doc = json::parse(R"({"training": {"schedule": "zero1", "context_parallel": 2},
                                   "points": [{"nodes": 2, "label": "mine"}]})");
  Candidate c = e.candidates[2];
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["context_parallel"], 4);
  c = e.candidates[0];
  EXPECT_EQ(candidate_document(doc, 0, c)["training"]["context_parallel"], 1);
  const json none = json::parse(R"({"training": {}, "points": [{"label": "x"}]})");
  EXPECT_FALSE(candidate_document(none, 0, c)["training"].contains("context_parallel"));
  // A layout axis, not a setting another schedule changes.
  EXPECT_TRUE(
      changed_settings(doc["training"], candidate_document(doc, 0, e.candidates[2])["training"])
          .empty());
}

}  // namespace
}  // namespace trainsim::search

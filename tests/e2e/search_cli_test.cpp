// `trainsim search` as a user runs it: the fastest layouts first, the point's own layout simulated
// exactly as `trainsim run` simulates that point, what does not fit reported and not simulated,
// byte-identical output run to run, and exit status 2 with a message on bad usage or input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
namespace ts = trainsim::testing_support;

ts::CommandRun trainsim(const std::string& args) { return ts::run_shell(ts::trainsim_bin() + " " + args); }

const std::string kFigure17 = "scenarios/megatron-figure17.json";
const std::string kSmallSearch = " --point 'recompute batch 64' --tp 4,8 --pp 8,16 --micro-batch 1,2";

TEST(CliSearch, RanksTheLayoutsThatFitAndMarksThePointsOwn) {
  const auto r = trainsim("search " + kFigure17 + kSmallSearch + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["accelerators"], 128);
  EXPECT_EQ(j["global_batch"], 64);
  const auto& ranked = j["ranked"];
  ASSERT_GE(ranked.size(), 2u);
  int originals = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& t = ranked[i];
    EXPECT_EQ(t["outcome"], "simulated");
    EXPECT_LE(t["memory_peak_bytes"].get<double>(), t["memory_capacity_bytes"].get<double>());
    EXPECT_EQ(t["micro_batch"].get<long>() * t["gradient_accumulation"].get<long>() * t["data_parallel"].get<long>(), 64);
    if (i > 0) {
      EXPECT_GE(ranked[i - 1]["samples_per_s"].get<double>(), t["samples_per_s"].get<double>());
    }
    if (t["original"].get<bool>()) ++originals;
  }
  EXPECT_EQ(originals, 1);
  // Layouts that do not fit are reported with their peak, not simulated.
  int oom = 0;
  for (const auto& t : j["not_ranked"]) {
    if (t["outcome"] != "oom") continue;
    ++oom;
    EXPECT_GT(t["memory_peak_bytes"].get<double>(), t["memory_capacity_bytes"].get<double>());
    EXPECT_FALSE(t.contains("samples_per_s"));
  }
  EXPECT_GT(oom, 0);
}

TEST(CliSearch, ThePointsOwnLayoutGivesWhatRunGivesForThatPoint) {
  // The figure's one point as a scenario of its own (absolute topology: it lives in a temp dir).
  json s = json::parse(ts::read_text_file(kFigure17));
  s["topology"] = (fs::current_path() / "topologies/dgx-a100-80g-ib.json").string();
  json point;
  for (const auto& p : s["points"])
    if (p["label"] == "recompute batch 64") point = p;
  ASSERT_FALSE(point.is_null());
  s["points"] = json::array({point});
  const std::string file = ts::test_temp_path(".json");
  std::ofstream(file) << s.dump();
  const auto run = trainsim("run " + file + " --format json --no-wall-time");
  ASSERT_EQ(run.status, 0) << run.err;
  const double run_samples = json::parse(run.out)["points"][0]["samples_per_s"].get<double>();

  const auto search = trainsim("search " + file + " --tp 8 --pp 16 --micro-batch 1 --checkpointing on --format json");
  ASSERT_EQ(search.status, 0) << search.err;
  const json j = json::parse(search.out);
  ASSERT_EQ(j["ranked"].size(), 1u);
  EXPECT_TRUE(j["ranked"][0]["original"].get<bool>());
  EXPECT_DOUBLE_EQ(j["ranked"][0]["samples_per_s"].get<double>(), run_samples);
}

TEST(CliSearch, TableNamesTheBestAgainstThePointsLayoutAndTheOutOfMemoryOnes) {
  const auto r = trainsim("search " + kFigure17 + kSmallSearch + " --top 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("global batch 64 sequences per step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<- the point's layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the best is"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out of memory: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("more simulated layouts"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("to simulate"), std::string::npos) << r.err;  // progress on stderr
}

TEST(CliSearch, OutputIsByteIdenticalRunToRunWithParallelJobs) {
  const std::string args = "search scenarios/llmfoundry-fsdp-a100.json --point '40GB 13B seq 2048 x 8' --jobs 2";
  const auto a = trainsim(args + " --format csv");
  const auto b = trainsim(args + " --format csv");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  // The source's own micro-batch (4) is the largest that fits 40 GB; 8 is out of memory.
  // (TP, CP, PP, pipeline schedule, chunks, DP, micro-batch, accumulation, checkpointing, its
  // policy, offloading, SP, shard, original, outcome)
  EXPECT_NE(a.out.find(",1,1,1,,1,8,4,16,true,full,false,false,,true,simulated"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find(",1,1,1,,1,8,8,8,true,full,false,false,,false,oom"), std::string::npos) << a.out;
}

TEST(CliSearch, SeveralNodeCountsGiveTheFastestLayoutAtEachAndWhyNoneWhereNone) {
  // Llama 2 7B under SMP v2's FSDP on p4d at a global batch of 64: one, two and four nodes run,
  // at sixteen nodes (128 GPUs) the batch does not divide over the data-parallel ranks.
  const std::string args = "search scenarios/p4d-llama2-7b-smp.json --nodes 4,1,2,16,2 --global-batch 64 --jobs 2";
  const auto r = trainsim(args + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const auto& rows = j["scaling"];
  ASSERT_EQ(rows.size(), 4u);  // sorted, the repeated 2 once
  const long nodes[] = {1, 2, 4, 16};
  double first_rate = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row["nodes"], nodes[i]);
    EXPECT_EQ(row["accelerators"], 8 * nodes[i]);
    if (nodes[i] == 16) {
      EXPECT_TRUE(row["fastest"].is_null());
      EXPECT_NE(row["reason"].get<std::string>().find("does not divide over DP 128"), std::string::npos) << row;
      continue;
    }
    // The fastest is its own search's first ranked layout, and the figures follow from it.
    const auto& best = row["fastest"];
    ASSERT_FALSE(best.is_null()) << row;
    EXPECT_EQ(best, row["search"]["ranked"][0]);
    const double rate = best["samples_per_s"].get<double>();
    if (i == 0) first_rate = rate;
    EXPECT_DOUBLE_EQ(row["speedup"].get<double>(), rate / first_rate);
    EXPECT_DOUBLE_EQ(row["efficiency"].get<double>(), rate / first_rate / static_cast<double>(nodes[i]));
    EXPECT_NEAR(row["accelerator_hours_per_million_samples"].get<double>(), 8.0 * static_cast<double>(nodes[i]) * 1e6 / rate / 3600,
                1e-9 * rate);
    EXPECT_EQ(best["micro_batch"].get<long>() * best["gradient_accumulation"].get<long>() *
                  best["data_parallel"].get<long>(),
              64);
  }
  EXPECT_GT(rows[2]["speedup"].get<double>(), rows[1]["speedup"].get<double>());  // more nodes, faster
  EXPECT_EQ(j["fewest_nodes"], 1);
  EXPECT_EQ(j["fastest_nodes"], 4);
  // The table names each count's fastest layout; the CSV lists every layout of every count.
  const auto table = trainsim(args);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("the fastest layout at each node count"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("every layout set aside"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("fewest nodes that fit: 1;"), std::string::npos) << table.out;
  const auto csv = trainsim(args + " --format csv");
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("nodes,accelerators,rank,schedule,tensor_parallel", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find("\n4,32,1,fsdp,1,1,1,,1,32,"), std::string::npos) << csv.out;  // 4 nodes' fastest, DP 32
}

TEST(CliSearch, SchedulesCompareOnTheSameBatchWithoutTheFrameworksOwnOptions) {
  // MPT-13B on one node of 40 GB A100s under llm-foundry's FSDP: DDP and ZeRO-1/2 keep 16 B per
  // parameter unsharded (or the weights and gradients) and cannot fit; ZeRO-3 and FSDP can.
  const std::string args = "search scenarios/llmfoundry-fsdp-a100.json --point '40GB 13B seq 2048 x 8' "
                           "--schedule all --micro-batch 1,2,4 --checkpointing on --jobs 2";
  const auto r = trainsim(args + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schedule"], "fsdp");
  std::set<std::string> ranked_schedules;
  int originals = 0;
  for (const auto& t : j["ranked"]) {
    ranked_schedules.insert(t["schedule"].get<std::string>());
    EXPECT_EQ(t["micro_batch"].get<long>() * t["gradient_accumulation"].get<long>() * 8, 512);
    if (t["original"].get<bool>()) {
      ++originals;
      EXPECT_EQ(t["schedule"], "fsdp");
      EXPECT_TRUE(t["left_out_options"].empty());
    }
  }
  EXPECT_EQ(originals, 1);
  EXPECT_EQ(ranked_schedules, (std::set<std::string>{"fsdp", "zero3"}));
  for (const auto& t : j["not_ranked"]) {
    const std::string schedule = t["schedule"];
    if (schedule == "ddp" || schedule == "zero1" || schedule == "zero2") {
      EXPECT_EQ(t["outcome"], "oom") << t;
    }
    // A layout whose memory model fits but whose simulated allocator does not is not ranked.
    if (!t["reason"].is_null() && t["reason"].get<std::string>().find("caching allocator") != std::string::npos) {
      EXPECT_EQ(t["outcome"], "oom") << t;
      EXPECT_FALSE(t.contains("samples_per_s")) << t;
      EXPECT_GT(t["allocator_retries"].get<long>(), 0) << t;
    }
    // Composer's metrics are modelled with FSDP only: the others run without them, and say so.
    if (schedule != "fsdp") {
      EXPECT_EQ(t["changed_options"], json::array({"precision: \"fsdp_mixed\" -> \"amp\""})) << t;
      ASSERT_FALSE(t["left_out_options"].empty()) << t;
      EXPECT_EQ(t["left_out_options"][0].get<std::string>().rfind("composer_train_metrics: ", 0), 0u) << t;
    }
  }
  const auto table = trainsim(args);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("rank  schedule  TP"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("left out under DDP, ZeRO-1, ZeRO-2, ZeRO-3: composer_train_metrics: "), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("changed under DDP, ZeRO-1, ZeRO-2, ZeRO-3: precision: \"fsdp_mixed\" -> \"amp\"\n"),
            std::string::npos)
      << table.out;
  const auto bad = trainsim("search " + kFigure17 + " --schedule zero4");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--schedule expects ddp, zero1, zero2, zero3, fsdp or all, not \"zero4\""), std::string::npos)
      << bad.err;
}

TEST(CliSearch, SequenceParallelismIsAnAxisAtTensorParallelDegrees) {
  // Figure 17's 145.6B at batch 64 on TP 8 x PP 16: Megatron's sequence parallelism (2022) splits
  // the norms' and dropouts' activations over TP, so each layout with it needs less memory.
  const auto r = trainsim("search " + kFigure17 +
                          " --point 'recompute batch 64' --tp 8 --pp 16 --micro-batch 1 --sequence-parallel on,off"
                          " --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::map<std::pair<bool, bool>, double> peak;  // (checkpointing, SP) -> memory model's peak
  for (const auto* list : {&j["ranked"], &j["not_ranked"]})
    for (const auto& t : *list)
      if (t.contains("memory_peak_bytes"))
        peak[{t["activation_checkpointing"].get<bool>(), t["sequence_parallel"].get<bool>()}] =
            t["memory_peak_bytes"].get<double>();
  ASSERT_EQ(peak.size(), 4u) << r.out;
  for (const bool checkpointing : {false, true}) {
    const double with_sp = peak[{checkpointing, true}], without = peak[{checkpointing, false}];
    EXPECT_LT(with_sp, without) << "checkpointing " << checkpointing;
  }
}

TEST(CliSearch, CheckpointPoliciesAreAnAxisWhereCheckpointingIsOn) {
  // Figure 17's 145.6B at batch 64 on TP 8 x PP 16: Megatron's selective recomputation keeps all
  // but the core attention's s x s tensors, so it needs more memory than full recompute and
  // recomputes less.
  const auto r = trainsim("search " + kFigure17 +
                          " --point 'recompute batch 64' --tp 8 --pp 16 --virtual-stages 1 --micro-batch 1 --sequence-parallel on"
                          " --checkpointing on --checkpoint-policy full,selective_attention --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::map<std::string, json> by_policy;
  for (const auto* list : {&j["ranked"], &j["not_ranked"]})
    for (const auto& t : *list) by_policy[t["checkpoint_policy"].get<std::string>()] = t;
  ASSERT_EQ(by_policy.size(), 2u) << r.out;
  const auto& full = by_policy["full"];
  const auto& selective = by_policy["selective_attention"];
  EXPECT_GT(selective["memory_peak_bytes"].get<double>(), full["memory_peak_bytes"].get<double>());
  ASSERT_EQ(full["outcome"], "simulated") << full;
  ASSERT_EQ(selective["outcome"], "simulated") << selective;
  EXPECT_GT(selective["samples_per_s"].get<double>(), full["samples_per_s"].get<double>());
  EXPECT_NE(selective["label"].get<std::string>().find("checkpointing selective_attention"), std::string::npos)
      << selective["label"];
  const auto csv = trainsim("search " + kFigure17 +
                            " --point 'recompute batch 64' --tp 8 --pp 16 --virtual-stages 1 --micro-batch 1"
                            " --sequence-parallel on --checkpointing on --checkpoint-policy selective_attention --format csv");
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_NE(csv.out.find(",activation_checkpointing,checkpoint_policy,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",true,selective_attention,"), std::string::npos) << csv.out;
  const auto bad = trainsim("search " + kFigure17 + " --checkpoint-policy some");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--checkpoint-policy expects full, selective_op and/or selective_attention, not \"some\""),
            std::string::npos)
      << bad.err;
}

TEST(CliSearch, ContextParallelismSplitsEachSequencesActivations) {
  // NeMo's Llama 3 8B at sequence 8,192 on one DGX H100 (its table row runs CP 2): each rank of a
  // CP group keeps 1/CP of every sequence's activations; full recompute with CP keeps less again
  // and costs time (its backward runs the forward's ring again).
  const auto r = trainsim(
      "search scenarios/nemo-h100-fp8.json --point 'Llama3-8B, 8 GPUs, CP2' --cp 1,2,4 --micro-batch 1"
      " --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::map<long, double> peak;           // CP -> memory model's peak without checkpointing
  std::map<long, json> recomputed;       // CP > 1 -> the layout with checkpointing
  int original = 0;
  for (const auto* list : {&j["ranked"], &j["not_ranked"]})
    for (const auto& t : *list) {
      if (t["original"].get<bool>()) {
        ++original;
        EXPECT_EQ(t["context_parallel"], 2) << t.dump();
        EXPECT_EQ(t["outcome"], "simulated") << t.dump();
      }
      if (t["activation_checkpointing"].get<bool>()) {
        if (t["context_parallel"].get<long>() > 1) recomputed[t["context_parallel"].get<long>()] = t;
      } else {
        peak[t["context_parallel"].get<long>()] = t["memory_peak_bytes"].get<double>();
      }
    }
  EXPECT_EQ(original, 1);
  EXPECT_NE(r.out.find("\"label\": \"TP 1, CP 4, PP 1, DP 2, micro-batch 1 x 64\""), std::string::npos) << r.out;
  ASSERT_EQ(peak.size(), 3u) << r.out;
  EXPECT_GT(peak[1], peak[2]);
  EXPECT_GT(peak[2], peak[4]);
  ASSERT_EQ(recomputed.size(), 2u) << r.out;
  for (const long cp : {2L, 4L}) {
    const json& t = recomputed[cp];
    ASSERT_EQ(t["outcome"], "simulated") << t.dump();
    EXPECT_LT(t["memory_peak_bytes"].get<double>(), peak[cp]) << t.dump();
  }
  const auto table = trainsim(
      "search scenarios/nemo-h100-fp8.json --point 'Llama3-8B, 8 GPUs, CP2' --cp 2,4 --micro-batch 1"
      " --checkpointing off");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("  TP  CP  PP    DP"), std::string::npos) << table.out;
}

TEST(CliSearch, CpCommTypeIsAnAxisAtEachContextParallelDegree) {
  // NeMo's Llama 3 8B row at CP 2 and 4 with each of Megatron-core's exchanges: the ring, the
  // all-to-alls and the all-gather, one layout each, named in the label and the JSON.
  const auto r = trainsim(
      "search scenarios/nemo-h100-fp8.json --point 'Llama3-8B, 8 GPUs, CP2' --cp 2,4 --cp-comm-type p2p,a2a,all_gather"
      " --checkpointing off --micro-batch 1 --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::map<std::pair<long, std::string>, double> rate;
  int original = 0;
  for (const auto& t : j["ranked"]) {
    rate[{t["context_parallel"].get<long>(), t["cp_comm_type"].get<std::string>()}] = t["samples_per_s"].get<double>();
    EXPECT_NE(t["label"].get<std::string>().find(" " + t["cp_comm_type"].get<std::string>()), std::string::npos) << t;
    if (t["original"].get<bool>()) {
      ++original;
      EXPECT_EQ(t["cp_comm_type"], "p2p");
      EXPECT_EQ(t["context_parallel"], 2);
    }
  }
  EXPECT_EQ(original, 1);
  ASSERT_EQ(rate.size(), 6u) << r.out;
  for (const long cp : {2L, 4L})
    for (const char* comm : {"p2p", "a2a", "all_gather"}) EXPECT_GT((rate[{cp, comm}]), 0) << cp << comm;
  const auto bad = trainsim("search scenarios/nemo-h100-fp8.json --cp-comm-type ring");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--cp-comm-type expects p2p, a2a and/or all_gather"), std::string::npos) << bad.err;
}

TEST(CliSearch, GpipeHoldsEveryMicroBatchsActivationsWhere1F1BHoldsAStagesWorth) {
  // Source 002's 10B model under SMP v1's pipeline (its "simple" schedule is GPipe): at the same
  // layout GPipe keeps all 16 micro-batches' activations until their backward, 1F1B at most PP.
  const auto r = trainsim("search scenarios/p4d-10b-smp-v1-pipeline.json --tp 2 --pp 4 --micro-batch 1"
                          " --pipeline-schedule gpipe,1f1b --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::map<std::pair<std::string, bool>, double> peak;  // (schedule, checkpointing) -> peak
  for (const auto* list : {&j["ranked"], &j["not_ranked"]})
    for (const auto& t : *list)
      peak[{t["pipeline_schedule"].get<std::string>(), t["activation_checkpointing"].get<bool>()}] =
          t["memory_peak_bytes"].get<double>();
  ASSERT_EQ(peak.size(), 4u) << r.out;
  for (const bool checkpointing : {false, true})
    EXPECT_GT((peak[{"gpipe", checkpointing}]), (peak[{"1f1b", checkpointing}])) << checkpointing;
  const auto table = trainsim("search scenarios/p4d-10b-smp-v1-pipeline.json --tp 2 --pp 4 --micro-batch 1"
                              " --pipeline-schedule gpipe,1f1b --checkpointing on");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("  PP     pipeline    DP"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("   2   4        gpipe     4"), std::string::npos) << table.out;
}

TEST(CliSearch, ZeroBubbleH1IsAPipelineScheduleOfAboutTheSameMemoryAndLessBubble) {
  // The zero-bubble paper's 6.2B on 8 A100s: ZB-H1 keeps 1F1B's micro-batches in flight and
  // moves weight gradients into the cool-down, so the same layout fits about alike and runs faster.
  const auto r = trainsim("search scenarios/zero-bubble-a100.json --point '6.2B 1F1B 24 micro-batches' --tp 1"
                          " --pp 8 --virtual-stages 1 --micro-batch 3 --pipeline-schedule 1f1b,zb-h1"
                          " --checkpointing off --format json --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["ranked"].size(), 2u) << r.out;
  EXPECT_EQ(j["ranked"][0]["pipeline_schedule"], "zb-h1");
  EXPECT_EQ(j["ranked"][1]["pipeline_schedule"], "1f1b");
  EXPECT_TRUE(j["ranked"][1]["original"].get<bool>());
  EXPECT_GT(j["ranked"][0]["samples_per_s"].get<double>(), 1.05 * j["ranked"][1]["samples_per_s"].get<double>());
  // The W it queues keeps a few per cent more than 1F1B's peak.
  EXPECT_GT(j["ranked"][0]["memory_peak_bytes"].get<double>(), j["ranked"][1]["memory_peak_bytes"].get<double>());
  EXPECT_LT(j["ranked"][0]["memory_peak_bytes"].get<double>(), 1.1 * j["ranked"][1]["memory_peak_bytes"].get<double>());
}

TEST(CliSearch, BadUsageAndUnknownPointsExitWithStatus2) {
  const auto unknown = trainsim("search " + kFigure17 + " --point 'no such point'");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find(kFigure17 + ": at /points: no point labelled \"no such point\""), std::string::npos)
      << unknown.err;
  const auto zero = trainsim("search " + kFigure17 + " --tp 0");
  EXPECT_EQ(zero.status, 2);
  EXPECT_NE(zero.err.find("--tp expects positive integers, not \"0\""), std::string::npos) << zero.err;
  const auto ckpt = trainsim("search " + kFigure17 + " --checkpointing maybe");
  EXPECT_EQ(ckpt.status, 2);
  EXPECT_NE(ckpt.err.find("--checkpointing expects on and/or off"), std::string::npos) << ckpt.err;
  const auto sp = trainsim("search " + kFigure17 + " --sequence-parallel yes");
  EXPECT_EQ(sp.status, 2);
  EXPECT_NE(sp.err.find("--sequence-parallel expects on and/or off, not \"yes\""), std::string::npos) << sp.err;
  const auto pipeline = trainsim("search " + kFigure17 + " --pipeline-schedule interleaved");
  EXPECT_EQ(pipeline.status, 2);
  EXPECT_NE(pipeline.err.find("--pipeline-schedule expects gpipe, 1f1b, zb-h1 and/or zb-v, not \"interleaved\""
                              " (interleaving: --virtual-stages)"),
            std::string::npos)
      << pipeline.err;
  const auto cp = trainsim("search " + kFigure17 + " --cp 0");
  EXPECT_EQ(cp.status, 2);
  EXPECT_NE(cp.err.find("--cp expects positive integers, not \"0\""), std::string::npos) << cp.err;
  const auto none = trainsim("search " + kFigure17 + " --point 'recompute batch 1' --tp 3 --pp 1");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no layout to search"), std::string::npos) << none.err;
}

}  // namespace

// Which ranks read the training data, end to end: a TP 4 x PP 2 job on two p4d nodes asks FSx
// for a quarter of the bytes per step that a data-parallel job of the same ranks and micro-batch
// does, and a bad "data.readers" is a ConfigError naming the file and JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
namespace ts = trainsim::testing_support;

/// The token scenario (Llama 2 7B, 8 KiB samples, 1.2 TiB SCRATCH_2) on 2 nodes, a 64 MiB slice,
/// as a DP 16 FSDP job (every rank reads) and a Megatron-core TP 4 x PP 2 x DP 2 job; the
/// same micro-batch (4) and one micro-batch per step in both.
json two_jobs() {
  json s = json::parse(ts::read_text_file("scenarios/p4d-llama2-7b-tokens-fsx.json"));
  s["topology"] = (fs::current_path() / "topologies/p4d.24xlarge.json").string();
  s["data"]["storage"]["spec"] = (fs::current_path() / "topologies/storage/fsx-lustre.json").string();
  s["data"]["dataset"]["size"] = "64MiB";
  s["data"]["dataset"].erase("samples");
  s["training"] = {{"schedule", "ddp"},          {"precision", "amp"},
                   {"optimizer", "adamw"},       {"micro_batch", 4},
                   {"activation_checkpointing", true}, {"flash_attention", true},
                   {"tensor_parallel", 4},       {"pipeline_parallel", 2},
                   {"sequence_parallel", true}};
  s["points"] = json::array(
      {{{"nodes", 2},
        {"label", "FSDP DP16"},
        {"training", {{"schedule", "fsdp"}, {"precision", "fsdp_mixed"}, {"hybrid_shard_degree", 8},
                      {"tensor_parallel", 1}, {"pipeline_parallel", 1}, {"sequence_parallel", false}}}},
       {{"nodes", 2}, {"label", "TP4 PP2 DP2"}}});
  return s;
}

ts::CommandRun run(const json& scenario, const std::string& name) {
  const std::string file = ts::test_temp_path(name);
  std::ofstream(file) << scenario.dump(2);
  return ts::run_shell(ts::trainsim_bin() + " run '" + file + "' --format json --no-wall-time");
}

/// Bytes per step a job's nodes get from FSx (its disks and its servers' memory), epoch 1.
double fsx_bytes_per_step(const json& point) {
  const json& p = point.at("pipeline");
  const json& e = p.at("epochs").at(0);
  return (e.at("bytes_disk").get<double>() + e.at("bytes_server_cache").get<double>()) /
         p.at("steps_per_epoch").get<double>();
}

TEST(CliDataReaders, Tp4Pp2ReadsAQuarterOfTheDataParallelJobsBytesPerStep) {
  const auto r = run(two_jobs(), "data-readers.json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  const json& dp = doc.at("points").at(0);
  const json& mp = doc.at("points").at(1);
  // 64 MiB of 8 KiB samples = 8192. DP 16 x 4 = 64 samples per step: 128 steps. TP 4 x PP 2
  // leaves DP 2: 8 samples per step, 1024 steps.
  EXPECT_EQ(dp.at("pipeline").at("steps_per_epoch").get<long>(), 128);
  EXPECT_EQ(mp.at("pipeline").at("steps_per_epoch").get<long>(), 1024);
  EXPECT_EQ(mp.at("global_batch").at("samples").get<double>(), 8);
  // Per step: DP 16 reads 16 replicas' 4 samples; TP 4 x PP 2 reads 2 replicas' on TP rank 0 of
  // the first stage (node 0) and again on the last (node 1): 4 of 16 = 1/TP (2 / (TP x PP)).
  const double ratio = fsx_bytes_per_step(mp) / fsx_bytes_per_step(dp);
  EXPECT_NEAR(ratio, 0.25, 1e-9) << "expected 2 x 2 x 4 / (16 x 4) of the data-parallel bytes";
  // The last stage's node reads the first stage's files just after it: from the servers' memory,
  // so the disks serve each sample once, 1/(TP x PP) of the data-parallel step's.
  const json& e = mp.at("pipeline").at("epochs").at(0);
  EXPECT_NEAR(e.at("bytes_disk").get<double>(), 64.0 * 1024 * 1024, 1);
  EXPECT_NEAR(e.at("bytes_server_cache").get<double>(), 64.0 * 1024 * 1024, 1);
  // The job's samples/s counts each replica's samples once (DP x micro-batch per step).
  EXPECT_NEAR(mp.at("samples_per_s").get<double>() * mp.at("pipeline").at("epochs").at(0).at("time_s").get<double>(),
              8192, 1);
}

TEST(CliDataReaders, EveryRankReadingStillAsksFsxForEachReplicaOncePerNode) {
  // SMP v2 / torchtitan style: all four TP ranks of a replica read its samples; the node's page
  // cache serves the repeats, so FSx sees the same bytes, while the pre-processing is 4x.
  json s = two_jobs();
  const auto core = run(s, "readers-core.json");
  s["data"]["readers"] = "every_rank";
  const auto every = run(s, "readers-every.json");
  ASSERT_EQ(core.status, 0) << core.err;
  ASSERT_EQ(every.status, 0) << every.err;
  const json a = json::parse(core.out).at("points").at(1);
  const json b = json::parse(every.out).at("points").at(1);
  EXPECT_DOUBLE_EQ(fsx_bytes_per_step(a), fsx_bytes_per_step(b));
  EXPECT_NE(b.at("pipeline").at("readers").get<std::string>().find("16 of 16 ranks"), std::string::npos)
      << b.at("pipeline").at("readers");
  EXPECT_NE(a.at("pipeline").at("readers").get<std::string>().find("4 of 16 ranks"), std::string::npos)
      << a.at("pipeline").at("readers");
}

TEST(CliDataReaders, MiddleStagesReadUnderMegatron2021OnlyNotUnderMegatronCore) {
  // TP 8 x PP 4 on 4 nodes, a stage per node, DP 1. Megatron-core reads on the first and last
  // stages' nodes, Megatron-LM 2021 (tp_rank0) on all four: twice the bytes per step.
  json s = two_jobs();
  s["training"]["tensor_parallel"] = 8;
  s["training"]["pipeline_parallel"] = 4;
  // 64 MiB samples (an image-sized record, not tokens) so that the reads stall: 512 samples,
  // 4 per step, 128 steps.
  s["data"]["dataset"] = {{"size", "32GiB"}, {"bytes_per_sample", "64MiB"}, {"file_size", "64MiB"}};
  s["points"] = json::array({{{"nodes", 4}, {"label", "TP8 PP4"}}});
  const auto core = run(s, "readers-pp4-core.json");
  s["data"]["readers"] = "tp_rank0";
  const auto legacy = run(s, "readers-pp4-2021.json");
  ASSERT_EQ(core.status, 0) << core.err;
  ASSERT_EQ(legacy.status, 0) << legacy.err;
  const json a = json::parse(core.out).at("points").at(0);
  const json b = json::parse(legacy.out).at("points").at(0);
  EXPECT_EQ(a.at("pipeline").at("steps_per_epoch").get<long>(), 128);
  EXPECT_NEAR(fsx_bytes_per_step(b) / fsx_bytes_per_step(a), 2.0, 1e-9) << "4 reading nodes against 2";
  EXPECT_NE(a.at("pipeline").at("readers").get<std::string>().find("2 of 32 ranks on 2 of 4 nodes"), std::string::npos)
      << a.at("pipeline").at("readers");
  // The middle stages' nodes never wait for data: the least-waiting node is a reading one (the
  // last stage's, whose files the servers' memory serves after the first stage read them).
  const json& e = a.at("pipeline").at("epochs").at(0);
  EXPECT_GT(e.at("max_node_wait_fraction").get<double>(), 0.1);
  EXPECT_GT(e.at("min_node_wait_fraction").get<double>(), 0) << "a middle stage's node counted";
}

TEST(CliDataReaders, AccumulationBeyondThePrefetchDepthFinishes) {
  // 2 workers x prefetch 2 = 4 batches in flight per rank, and 5 micro-batches per step: the
  // workers used to stop one short of the step while the trainer waited for all of it, and the
  // FSx burst-credit actor kept the deadlocked simulation running for ever. Now every
  // micro-batch frees its slots as it is taken. DP 16 x 4 x 5 = 320 samples of 8192 per step:
  // 25 steps (rounded down).
  json s = two_jobs();
  s["points"].erase(1);  // the FSDP DP 16 point
  s["training"]["gradient_accumulation"] = 5;
  const std::string file = ts::test_temp_path("accumulation.json");
  std::ofstream(file) << s.dump(2);
  const auto r = ts::run_shell("timeout 60 " + ts::trainsim_bin() + " run '" + file + "' --format json --no-wall-time");
  ASSERT_EQ(r.status, 0) << "124: still running after 60 s; " << r.err;
  const json doc = json::parse(r.out);
  const json& p = doc.at("points").at(0).at("pipeline");
  EXPECT_EQ(p.at("steps_per_epoch").get<long>(), 25);
  EXPECT_GT(p.at("epochs").at(0).at("samples_per_s").get<double>(), 0);
}

TEST(CliDataReaders, UnknownReadersAreAConfigError) {
  json s = two_jobs();
  s["data"]["readers"] = "rank0";
  const auto r = run(s, "readers-bad.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("readers-bad.json: at /data/readers: unknown value \"rank0\"; expected one of: every_rank, "
                       "tp_rank0, tp_rank0_first_last_stage"),
            std::string::npos)
      << r.err;
}

}  // namespace

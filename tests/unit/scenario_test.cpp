// Scenario loading (scenario/scenario.hpp): the shipped scenarios, and errors on temporary
// copies of dl1-bert-large-zero1.json, each checked for the file and JSON path it names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/fixtures.hpp"
#include "core/error.hpp"
#include "model/device_profile.hpp"
#include "core/json_reader.hpp"
#include "engine/platform_builder.hpp"
#include "model/nccl_memory_traffic.hpp"
#include "topology/topology.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::scenario {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBertLarge = "scenarios/dl1-bert-large-zero1.json";
const std::string kBert15b = "scenarios/dl1-bert-1.5b-zero1.json";

std::string absolute(const std::string& repo_path) { return fs::absolute(repo_path).string(); }

/// A temporary file named after the running test.
std::string temp_file(const std::string& kind) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  return testing::TempDir() + "scenario_test_" + info->name() + "_" + kind + ".json";
}

std::string write(const json& doc, const std::string& file) {
  std::ofstream(file) << doc.dump(2);
  return file;
}

/// dl1-bert-large-zero1.json with its topology named by absolute path, so it loads from /tmp.
json bert_large_doc() {
  json doc = read_json_file(kBertLarge);
  doc["topology"] = absolute("topologies/dl1.24xlarge.json");
  return doc;
}

/// The same on p4d.24xlarge: its NCCL calibration plans the send_recv of pipeline stages, which
/// DL1's schema-1 HCCL calibration does not.
json bert_large_nccl_doc() {
  json doc = bert_large_doc();
  doc["topology"] = absolute("topologies/p4d.24xlarge.json");
  return doc;
}

ConfigError load_error(const std::string& file) {
  return testing_support::config_error_of([](const std::string& f) { return load_scenario(f); }, file);
}

/// The ConfigError of `doc` written to the temp file `name` and loaded.
ConfigError error_of(const json& doc, const std::string& name = "scenario") {
  return load_error(write(doc, temp_file(name)));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Whether a fitted entry of the scenario's device profile or collective calibration names
/// "<scenario>#<label>" as one of its rows.
bool named_as_fitted(const Scenario& s, const std::string& label) {
  const std::string row = s.name + "#" + label;
  for (const auto& f : s.machine->device.fitted)
    for (const auto& r : f.rows)
      if (r == row) return true;
  for (const auto& line : s.machine->collectives.fitted)
    if (contains(line + " ", " " + row + " ")) return true;
  return false;
}

// ---- Shipped scenarios -----------------------------------------------------------------------

TEST(ShippedScenario, BertLarge) {
  const Scenario s = load_scenario(kBertLarge);
  EXPECT_EQ(s.name, "dl1-bert-large-zero1");
  EXPECT_EQ(s.machine->topology.name, "dl1.24xlarge");
  EXPECT_EQ(s.machine->topology.file, "topologies/dl1.24xlarge.json");  // resolved against scenarios/
  EXPECT_EQ(s.model.layers, 24);
  EXPECT_EQ(s.model.hidden, 1024);
  EXPECT_EQ(s.model.heads, 16);
  EXPECT_TRUE(s.model.mlm_head);
  EXPECT_FALSE(s.model.causal);  // an encoder: a fused attention kernel computes every block
  EXPECT_EQ(s.training.sharding, plan::Sharding::zero1);
  EXPECT_EQ(s.training.micro_batch, 64);
  EXPECT_EQ(s.training.accumulation, 16);
  EXPECT_DOUBLE_EQ(s.training.bucket_elements, 5e8);
  EXPECT_DOUBLE_EQ(s.training.gradient_wire_bytes, 4);   // fp32
  EXPECT_DOUBLE_EQ(s.training.parameter_wire_bytes, 2);  // bf16
  EXPECT_FALSE(s.assumptions.empty());

  const std::vector<int> nodes = {1, 2, 4, 8};
  const std::vector<double> reference = {1379.76, 2705.57, 5291.58, 9977.54};
  const std::vector<std::string> labels = {"1 instance", "2 instances", "4 instances",
                                           "8 instances"};
  ASSERT_EQ(s.points.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.points[i].nodes, nodes[i]);
    EXPECT_EQ(s.points[i].label, labels[i]);
    ASSERT_TRUE(s.points[i].reference_samples_per_s);
    EXPECT_DOUBLE_EQ(*s.points[i].reference_samples_per_s, reference[i]);
    EXPECT_EQ(s.points[i].fitted, named_as_fitted(s, labels[i])) << labels[i];
  }
  // topologies/devices/gaudi1.json fits /gemm_efficiency to the 1-instance row.
  EXPECT_TRUE(s.points[0].fitted);
}

TEST(ShippedScenario, Bert1_5B) {
  const Scenario s = load_scenario(kBert15b);
  EXPECT_EQ(s.name, "dl1-bert-1.5b-zero1");
  EXPECT_EQ(s.model.layers, 48);
  EXPECT_EQ(s.model.hidden, 1600);
  EXPECT_EQ(s.model.heads, 25);
  EXPECT_EQ(s.model.ffn_hidden, 6400);
  EXPECT_EQ(s.training.micro_batch, 16);
  EXPECT_EQ(s.training.accumulation, 24);
  const std::vector<int> nodes = {1, 8, 16};
  const std::vector<double> reference = {276.66, 1883.63, 3659.15};
  ASSERT_EQ(s.points.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.points[i].nodes, nodes[i]);
    EXPECT_DOUBLE_EQ(*s.points[i].reference_samples_per_s, reference[i]);
    EXPECT_EQ(s.points[i].fitted, named_as_fitted(s, s.points[i].label)) << s.points[i].label;
  }
}

TEST(ShippedScenario, DecodersAreCausalAndTorchDdpRowsOverlapTheirAllReduce) {
  const Scenario s = load_scenario("scenarios/megatron-table1.json");
  EXPECT_TRUE(s.model.causal);
  for (const auto& p : s.points) {
    const bool torch_ddp = p.training.pp == 1;  // run_table_1.sh: --DDP-impl torch up to 18.4B
    EXPECT_EQ(p.training.overlap_grad_reduce, torch_ddp) << p.label;
    if (torch_ddp) {
      EXPECT_EQ(p.training.bucket_elements, 25 * 1024 * 1024 / 2) << p.label;  // 25 MiB of fp16
    }
  }
}

TEST(ShippedScenario, EveryScenarioLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const Scenario s = load_scenario(entry.path().string());
    EXPECT_EQ(s.name, entry.path().stem().string()) << "a scenario's name is its file name";
    EXPECT_FALSE(s.points.empty());
    ++count;
  }
  EXPECT_GE(count, 2);
}

TEST(TrainingFor, WorldIsNodesTimesAccelerators) {
  const Scenario s = load_scenario(kBertLarge);
  const program::DataParallelConfig t = training_for(s, s.points[3]);
  EXPECT_EQ(t.ranks_per_node, 8);
  EXPECT_EQ(t.world, 8 * 8);
  EXPECT_EQ(t.micro_batch, 64);
}

TEST(SimulatePoint, RunsInAChildProcessAndReportsThroughput) {
  const Scenario s = load_scenario(kBertLarge);
  for (int run = 0; run < 2; ++run) {  // no Engine is left in this process: a second run works
    const PointResult r = simulate_point(s, s.points[0], false);
    EXPECT_TRUE(r.completed);
    EXPECT_EQ(r.accelerators, 8);
    EXPECT_GT(r.step_time, 0);
    // One step processes micro-batch 64 x accumulation 16 x 8 accelerators sequences.
    EXPECT_NEAR(r.samples_per_s * r.step_time, 64.0 * 16 * 8, 1e-9 * 8192);
    EXPECT_TRUE(r.spans.empty());
  }
}

// ---- Errors ----------------------------------------------------------------------------------

TEST(ScenarioErrors, UnknownKey) {
  json doc = bert_large_doc();
  doc["training"]["bogus"] = 1;
  const std::string file = write(doc, temp_file("scenario"));
  const ConfigError e = load_error(file);
  EXPECT_EQ(e.file(), file);
  EXPECT_EQ(e.json_path(), "/training/bogus");
  EXPECT_TRUE(contains(e.what(), "unknown key \"bogus\"")) << e.what();
}

TEST(ScenarioErrors, MissingTopologyFile) {
  json doc = bert_large_doc();
  doc["topology"] = "no-such-topology.json";
  const std::string file = write(doc, temp_file("scenario"));
  const ConfigError e = load_error(file);
  EXPECT_EQ(e.file(), file);
  EXPECT_EQ(e.json_path(), "/topology");
  EXPECT_TRUE(contains(e.what(), "topology file not found")) << e.what();
  EXPECT_TRUE(contains(e.what(), "no-such-topology.json")) << e.what();
}

// ---- a point's own topology: one table measured on several instance types -----------------

TEST(PointTopology, APointMayRunOnAnotherMachine) {
  json doc = bert_large_doc();
  json other = doc["points"][0];
  other["label"] = "on p4d";
  other["topology"] = absolute("topologies/p4d.24xlarge.json");
  doc["points"].push_back(other);
  const Scenario s = load_scenario(write(doc, temp_file("scenario")));
  ASSERT_GE(s.points.size(), 2U);
  EXPECT_EQ(s.points.front().machine, s.machine);  // no topology of its own: the scenario's
  const auto& mine = *s.points.back().machine;
  EXPECT_EQ(mine.topology.name, "p4d.24xlarge");
  EXPECT_NE(mine.device.file, s.machine->device.file);  // its device profile and calibration
  EXPECT_NE(mine.collectives.file, s.machine->collectives.file);
  EXPECT_EQ(s.points.back().layout.ranks_per_node, 8);
  EXPECT_EQ(memory_inputs(s, s.points.back()).capacity, mine.topology.accelerator.memory);
}

TEST(PointTopology, PointsNamingOneFileShareItsMachine) {
  json doc = bert_large_doc();
  for (auto& p : doc["points"]) p["topology"] = absolute("topologies/p4d.24xlarge.json");
  const Scenario s = load_scenario(write(doc, temp_file("scenario")));
  ASSERT_GE(s.points.size(), 2U);
  EXPECT_EQ(s.points[0].machine, s.points[1].machine);
  EXPECT_NE(s.points[0].machine, s.machine);
}

TEST(LowerBoundReference, TheFsdpPapersBoundsLoadOnTheirPoints) {
  // The paper's text: "more than 173" at batch 1 on 128-512 GPUs, "more than 186" at batch 2 on
  // 192-512; batch 2 x 128 and the prefetch-off points have no bound.
  const Scenario s = load_scenario("scenarios/fsdp-paper-a100.json");
  int bounded = 0;
  for (const auto& p : s.points) {
    EXPECT_FALSE(p.reference_tflops_per_accelerator) << p.label << ": bounds only";
    if (!p.reference_tflops_per_accelerator_at_least) continue;
    ++bounded;
    EXPECT_DOUBLE_EQ(*p.reference_tflops_per_accelerator_at_least, p.training.micro_batch == 1 ? 173.0 : 186.0)
        << p.label;
    EXPECT_GE(p.nodes * 8, p.training.micro_batch == 1 ? 128 : 192) << p.label;
  }
  EXPECT_EQ(bounded, 6);
}

TEST(LowerBoundReference, MustBePositiveAndNotBesideAMeasuredValue) {
  json doc = bert_large_doc();
  doc["points"][0]["reference_tflops_per_accelerator_at_least"] = 0;
  ConfigError e = error_of(doc, "zero");
  EXPECT_EQ(e.json_path(), "/points/0/reference_tflops_per_accelerator_at_least");
  EXPECT_TRUE(contains(e.what(), "expected a positive value")) << e.what();

  doc["points"][0]["reference_tflops_per_accelerator_at_least"] = "173";
  EXPECT_EQ(error_of(doc, "string").json_path(), "/points/0/reference_tflops_per_accelerator_at_least");

  doc["points"][0]["reference_tflops_per_accelerator_at_least"] = 173;
  doc["points"][0]["reference_tflops_per_accelerator"] = 180;
  e = error_of(doc, "both");
  EXPECT_EQ(e.json_path(), "/points/0/reference_tflops_per_accelerator_at_least");
  EXPECT_TRUE(contains(e.what(), "not both")) << e.what();

  doc["points"][0].erase("reference_tflops_per_accelerator");
  const Scenario s = load_scenario(write(doc, temp_file("ok")));
  ASSERT_TRUE(s.points[0].reference_tflops_per_accelerator_at_least);
  EXPECT_DOUBLE_EQ(*s.points[0].reference_tflops_per_accelerator_at_least, 173.0);
}

TEST(PointTopology, ErrorsNameThePointsPath) {
  json doc = bert_large_doc();
  doc["points"][1]["topology"] = "no-such-topology.json";
  const ConfigError e = error_of(doc, "missing");
  EXPECT_EQ(e.json_path(), "/points/1/topology");
  EXPECT_TRUE(contains(e.what(), "topology file not found")) << e.what();

  doc = bert_large_doc();
  doc["points"][0]["topology"] = 7;
  EXPECT_EQ(error_of(doc, "type").json_path(), "/points/0/topology");
}

TEST(ScenarioErrors, BadUnitInTheTopologyItNames) {
  // Scenarios carry no units themselves; their topology does, and its error names that file.
  json topo = read_json_file("topologies/dl1.24xlarge.json");
  topo["node"]["links"][0]["bandwidth"] = "100Gbit";
  topo["accelerator"]["device"] = absolute("topologies/devices/gaudi1.json");
  topo["collective_calibration"] = absolute("topologies/calibration/dl1-hccl.json");
  const std::string topo_file = write(topo, temp_file("topology"));
  json doc = bert_large_doc();
  doc["topology"] = topo_file;
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.file(), topo_file);
  EXPECT_EQ(e.json_path(), "/node/links/0/bandwidth");
  EXPECT_TRUE(contains(e.what(), "bad unit")) << e.what();
}

TEST(ScenarioErrors, OffloadingNeedsACpuVertex) {
  // Offloading copies layer inputs to the node's CPU: a topology without one cannot run it.
  json topo = read_json_file("topologies/dl1.24xlarge.json");
  for (auto& v : topo["node"]["vertices"])
    if (v["kind"] == "cpu") v["kind"] = "switch";
  topo["accelerator"]["device"] = absolute("topologies/devices/gaudi1.json");
  topo["collective_calibration"] = absolute("topologies/calibration/dl1-hccl.json");
  json doc = bert_large_doc();
  doc["topology"] = write(topo, temp_file("topology"));
  doc["training"]["activation_checkpointing"] = true;
  doc["training"]["activation_offloading"] = true;
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "has no vertex of kind cpu")) << e.what();
}

TEST(ScenarioErrors, AttentionKernelMustBeOneOfTheDevicesAndNeedsFlashAttention) {
  json doc = read_json_file("scenarios/flashattention2-gpt3-a100.json");
  doc["topology"] = absolute("topologies/p4de.24xlarge.json");
  doc["training"]["attention_kernel"] = "flash-attention-9";
  ConfigError e = error_of(doc, "unknown");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "flash-attention-2, flash-attn-triton")) << e.what();
  // Gaudi's profile has no fused attention kernel.
  json dl1 = bert_large_doc();
  dl1["training"]["flash_attention"] = true;
  dl1["training"]["attention_kernel"] = "flash-attention-2";
  e = error_of(dl1, "none");
  EXPECT_TRUE(contains(e.what(), "it has none")) << e.what();
  doc["training"]["flash_attention"] = false;
  doc["training"]["attention_kernel"] = "flash-attention-2";
  e = error_of(doc, "no_flash");
  EXPECT_EQ(e.json_path(), "/training/attention_kernel");
  EXPECT_TRUE(contains(e.what(), "enable flash_attention")) << e.what();
}

TEST(ScenarioErrors, MptFlashModuleKernelsNeedFlashAttention) {
  json doc = read_json_file("scenarios/flashattention2-gpt3-a100.json");
  doc["topology"] = absolute("topologies/p4de.24xlarge.json");
  doc["training"]["flash_attention"] = false;
  doc["training"].erase("attention_kernel");
  doc["training"]["module_kernels"] = "mpt-flash";
  const ConfigError e = error_of(doc, "mpt_flash");
  EXPECT_EQ(e.json_path(), "/training/module_kernels");
  EXPECT_TRUE(contains(e.what(), "enable flash_attention")) << e.what();
}

TEST(ScenarioErrors, FusedCrossEntropyInplaceNeedsTheFusedLoss) {
  json doc = read_json_file("scenarios/flashattention2-gpt3-a100.json");
  doc["topology"] = absolute("topologies/p4de.24xlarge.json");
  doc["training"]["fused_cross_entropy"] = false;
  doc["training"]["fused_cross_entropy_inplace"] = false;
  ConfigError e = error_of(doc, "xent_unfused");
  EXPECT_EQ(e.json_path(), "/training/fused_cross_entropy_inplace");
  EXPECT_TRUE(contains(e.what(), "enable fused_cross_entropy")) << e.what();
  doc["training"]["fused_cross_entropy"] = true;
  doc["training"]["fused_cross_entropy_inplace"] = "no";
  e = error_of(doc, "xent_type");
  EXPECT_EQ(e.json_path(), "/training/fused_cross_entropy_inplace");
}

TEST(ScenarioErrors, AllocatorRetryStallsNeedTheCudaCachingAllocator) {
  // Gaudi's profile gives no caching-allocator retry cost: SynapseAI's allocator is not modelled.
  json dl1 = bert_large_doc();
  dl1["training"]["allocator_retry_stalls"] = true;
  const ConfigError e = error_of(dl1, "gaudi_alloc");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "gaudi1.json gives no allocator_retry")) << e.what();
}

TEST(ScenarioErrors, TheRateLimiterIsAnArgumentOfFsdp1) {
  json dl1 = bert_large_doc();
  dl1["training"]["fsdp_limit_all_gathers"] = false;
  const ConfigError e = error_of(dl1, "ddp_limiter");
  EXPECT_EQ(e.json_path(), "/training/fsdp_limit_all_gathers");
  EXPECT_TRUE(contains(e.what(), "FullyShardedDataParallel")) << e.what();
}

TEST(ScenarioErrors, HcclCalibrationRejectsSchedulesNeedingOtherCollectives) {
  // dl1-hccl.json is schema 1: all_reduce, reduce_scatter and all_gather only. A pipeline's
  // send_recv used to fail inside the simulation (exit 1, "simulation of point ... failed").
  json pp = bert_large_doc();
  pp["training"]["pipeline_parallel"] = 2;
  ConfigError e = error_of(pp, "hccl_pp");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "send_recv")) << e.what();
  EXPECT_TRUE(contains(e.what(), "dl1-hccl.json")) << e.what();
  // The same scenario on an NCCL calibration (schema 2) loads.
  pp["topology"] = absolute("topologies/p4d.24xlarge.json");
  EXPECT_NO_THROW(load_scenario(write(pp, temp_file("nccl_pp"))));
}

TEST(ScenarioErrors, AllocatorTensorRequestsNeedTheShardedScheduleWithFullOrNoCheckpointing) {
  json dl1 = bert_large_doc();
  dl1["training"]["allocator_tensor_requests"] = true;
  ConfigError e = error_of(dl1, "ddp_tensors");
  EXPECT_EQ(e.json_path(), "/training/allocator_tensor_requests");
  EXPECT_TRUE(contains(e.what(), "sharded schedule only")) << e.what();
  // torchtitan's selective op checkpointing keeps its lumps.
  json tt = read_json_file("scenarios/p5-llama3-8b-torchtitan.json");
  tt["topology"] = absolute("topologies/p5.48xlarge.json");
  tt["training"]["allocator_tensor_requests"] = true;
  e = error_of(tt, "selective_tensors");
  EXPECT_EQ(e.json_path(), "/training/allocator_tensor_requests");
  EXPECT_TRUE(contains(e.what(), "full checkpointing")) << e.what();
}

TEST(ScenarioErrors, Fp8NeedsFp8GemmSamplesAndAnImplementation) {
  // An A100 (no FP8 tensor cores, no fp8 samples): rejected, naming the device profile.
  json doc = read_json_file("scenarios/flashattention2-gpt3-a100.json");
  doc["topology"] = absolute("topologies/p4de.24xlarge.json");
  doc["training"]["linear_precision"] = "fp8";
  doc["training"]["fp8_implementation"] = "transformer-engine";
  ConfigError e = error_of(doc, "a100");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "a100-80gb.json has none")) << e.what();
  // Gaudi likewise.
  json dl1 = bert_large_doc();
  dl1["training"]["linear_precision"] = "fp8";
  dl1["training"]["fp8_implementation"] = "transformer-engine";
  e = error_of(dl1, "gaudi");
  EXPECT_TRUE(contains(e.what(), "gaudi1.json has none")) << e.what();
  // FP8 without saying whose, and an implementation without FP8.
  doc["training"].erase("fp8_implementation");
  e = error_of(doc, "no_impl");
  EXPECT_EQ(e.json_path(), "/training/fp8_implementation");
  doc["training"]["linear_precision"] = "bf16";
  doc["training"]["fp8_implementation"] = "torchao";
  e = error_of(doc, "impl_only");
  EXPECT_EQ(e.json_path(), "/training/fp8_implementation");
  EXPECT_TRUE(contains(e.what(), "linear_precision")) << e.what();
}

TEST(ScenarioErrors, Fp8UserbuffersNeedTheOverlapAndTransformerEnginesFp8AndAPipelinedScatter) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["tp_comm_overlap_fp8_buf"] = json::array({"proj_fprop"});
  ConfigError e = error_of(doc, "no_overlap");
  EXPECT_EQ(e.json_path(), "/training/tp_comm_overlap_fp8_buf");
  EXPECT_TRUE(contains(e.what(), "tp_comm_overlap true")) << e.what();
  doc["training"]["tensor_parallel"] = 2;
  doc["training"]["sequence_parallel"] = true;
  doc["training"]["tp_comm_overlap"] = true;
  doc["training"]["tp_comm_overlap_fp8_buf"] = json::array({"qkv_fprop"});
  e = error_of(doc, "gather_buffer");
  EXPECT_EQ(e.json_path(), "/training/tp_comm_overlap_fp8_buf");
  EXPECT_TRUE(contains(e.what(), "\"qkv_fprop\"")) << e.what();
  doc["training"]["tp_comm_overlap_fp8_buf"] = json::array({"fc2_fprop"});
  doc["training"]["fp8_implementation"] = "torchao";
  e = error_of(doc, "torchao");
  EXPECT_EQ(e.json_path(), "/training/tp_comm_overlap_fp8_buf");
}

TEST(ScenarioErrors, DeferredHeadWeightGradientsNeedAPipeline) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["defer_embedding_wgrad_compute"] = true;  // the shared training object: no pipeline
  ConfigError e = error_of(doc, "defer_no_pipeline");
  EXPECT_EQ(e.json_path(), "/training/defer_embedding_wgrad_compute");
  EXPECT_TRUE(contains(e.what(), "pipeline_parallel > 1")) << e.what();
  doc["training"].erase("defer_embedding_wgrad_compute");
  doc["training"]["wgrad_deferral_limit"] = 22;
  e = error_of(doc, "limit_alone");
  EXPECT_EQ(e.json_path(), "/training/wgrad_deferral_limit");
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["defer_embedding_wgrad_compute"] = true;
  doc["training"]["wgrad_deferral_limit"] = -1;
  e = error_of(doc, "limit_negative");
  EXPECT_EQ(e.json_path(), "/training/wgrad_deferral_limit");
  EXPECT_TRUE(contains(e.what(), "non-negative integer")) << e.what();
}

TEST(ScenarioErrors, ParameterGatherWithOptimizerStepNeedsOverlappedGatherAndInterleaving) {
  json doc = bert_large_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["schedule"] = "zero1";
  doc["training"]["overlap_param_gather_with_optimizer_step"] = true;
  ConfigError e = error_of(doc, "opgwos");
  EXPECT_EQ(e.json_path(), "/training/overlap_param_gather_with_optimizer_step");
  EXPECT_TRUE(contains(e.what(), "overlap_param_gather true")) << e.what();
  doc["training"]["overlap_grad_reduce"] = true;
  doc["training"]["overlap_param_gather"] = true;
  e = error_of(doc, "opgwos_1f1b");
  EXPECT_EQ(e.json_path(), "/training/overlap_param_gather_with_optimizer_step");
  EXPECT_TRUE(contains(e.what(), "interleaved")) << e.what();
}

TEST(ScenarioErrors, TpOverlapModelIsCoarseOrPerStep) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["tp_comm_overlap_model"] = "fine";
  const ConfigError e = error_of(doc, "unknown_model");
  EXPECT_EQ(e.json_path(), "/training/tp_comm_overlap_model");
  EXPECT_TRUE(contains(e.what(), "per_step")) << e.what();
}

TEST(ScenarioErrors, AutogradAccumulationIsMegatron2021sPlainPasses) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["gradient_accumulation_add"] = "autograd";
  doc["training"]["tensor_parallel"] = 2;
  doc["training"]["sequence_parallel"] = true;
  doc["training"]["tp_comm_overlap"] = true;
  ConfigError e = error_of(doc, "tp_overlap");
  EXPECT_EQ(e.json_path(), "/training/gradient_accumulation_add");
  EXPECT_TRUE(contains(e.what(), "tp_comm_overlap")) << e.what();
  doc["training"]["gradient_accumulation_add"] = "sum";
  e = error_of(doc, "unknown_choice");
  EXPECT_EQ(e.json_path(), "/training/gradient_accumulation_add");
}

TEST(ScenarioErrors, OverlappedPipelineExchangesNeedMegatronCoresInterleavedSchedule) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["overlap_p2p_comm"] = true;  // the shared training object: no pipeline
  ConfigError e = error_of(doc, "no_pipeline");
  EXPECT_EQ(e.json_path(), "/training/overlap_p2p_comm");
  EXPECT_TRUE(contains(e.what(), "virtual_stages > 1")) << e.what();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["pipeline_schedule"] = "1f1b";
  e = error_of(doc, "one_f_one_b");
  EXPECT_EQ(e.json_path(), "/training/overlap_p2p_comm");
  doc["training"]["pipeline_schedule"] = "interleaved";
  doc["training"]["virtual_stages"] = 2;
  doc["training"]["tensor_parallel"] = 2;  // TP without SP: 2021's scatter/gather, not Megatron-core's
  e = error_of(doc, "scatter_gather");
  EXPECT_EQ(e.json_path(), "/training/overlap_p2p_comm");
  EXPECT_TRUE(contains(e.what(), "sequence_parallel")) << e.what();
}

TEST(ScenarioErrors, MegatronStepSyncsNeedItsDataParallelism) {
  // Megatron-LM 2021's training loop reduces gradients with its local or torch DDP only.
  json doc = read_json_file("scenarios/megatron-figure15.json");
  doc["topology"] = absolute("topologies/dgx-a100-80g-ib.json");
  ASSERT_EQ(doc["training"]["megatron_step_syncs"], true);
  doc["training"]["schedule"] = "fsdp";
  ConfigError e = error_of(doc, "fsdp");
  EXPECT_EQ(e.json_path(), "/training/megatron_step_syncs");
  EXPECT_TRUE(contains(e.what(), "\"ddp\"")) << e.what();
}

TEST(ScenarioErrors, KeptPipelineOutputsAreMegatronsSchedules) {
  // DeepSpeed's pipeline engine keeps its own stage outputs (memory/deepspeed_pipe_buffers.hpp).
  json doc = bert_large_nccl_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["pipeline_outputs_kept"] = true;
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("kept"))));
  doc["training"]["pipeline_engine"] = "deepspeed";
  ConfigError e = error_of(doc, "kept");
  EXPECT_EQ(e.json_path(), "/training/pipeline_outputs_kept");
  EXPECT_TRUE(contains(e.what(), "pipeline_engine \"megatron\"")) << e.what();
}

TEST(ScenarioErrors, HuggingFaceBertAndTrainerNeedWhatTheyModel) {
  // hf-bert is BertLayer's unfused attention under torch.cuda.amp; hf-4.21 the Trainer with --fp16
  // around PyTorch DDP.
  json doc = read_json_file("scenarios/hf-bert-base-gaudi-a100.json");
  doc["topology"] = absolute("topologies/dl1.24xlarge.json");
  doc["points"] = json::array({doc["points"][0]});
  doc["training"]["module_kernels"] = "hf-bert";
  doc["training"]["flash_attention"] = true;
  ConfigError e = error_of(doc, "hf_bert_flash");
  EXPECT_EQ(e.json_path(), "/training/module_kernels");
  EXPECT_TRUE(contains(e.what(), "flash_attention")) << e.what();
  doc["training"].erase("flash_attention");
  doc["training"]["schedule"] = "zero1";
  e = error_of(doc, "hf_bert_zero1");
  EXPECT_EQ(e.json_path(), "/training/module_kernels");
  doc["training"]["schedule"] = "ddp";
  doc["model"]["mlm_head"] = false;  // BertForMaskedLM's op lists on a model without its head
  e = error_of(doc, "hf_bert_no_head");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "mlm_head")) << e.what();
  doc["model"]["mlm_head"] = true;
  doc["training"].erase("module_kernels");
  doc["training"]["trainer"] = "hf-4.22";
  e = error_of(doc, "trainer_unknown");
  EXPECT_EQ(e.json_path(), "/training/trainer");
  EXPECT_TRUE(contains(e.what(), "hf-4.21")) << e.what();
  doc["training"]["trainer"] = "hf-4.21";
  doc["training"]["precision"] = "fp32";
  e = error_of(doc, "trainer_fp32");
  EXPECT_EQ(e.json_path(), "/training/trainer");
  EXPECT_TRUE(contains(e.what(), "amp")) << e.what();
}

TEST(ScenarioErrors, CudaLaunchBlockingIsABoolAndNeedsHostDispatch) {
  json doc = read_json_file("scenarios/bloom-176b-jean-zay.json");
  doc["topology"] = absolute("topologies/jean-zay-a100-80g-opa.json");
  ASSERT_EQ(doc["training"]["cuda_launch_blocking"], true);
  doc["training"]["cuda_launch_blocking"] = 1;
  ConfigError e = error_of(doc, "launch_blocking_int");
  EXPECT_EQ(e.json_path(), "/training/cuda_launch_blocking");
  doc["training"]["cuda_launch_blocking"] = true;
  doc["training"]["host_dispatch"] = false;
  e = error_of(doc, "launch_blocking_no_host");
  EXPECT_EQ(e.json_path(), "/training/cuda_launch_blocking");
  EXPECT_TRUE(contains(e.what(), "host_dispatch")) << e.what();
}

TEST(ScenarioErrors, DeepSpeedStepWorkNeedsItsBf16Optimizer) {
  json doc = read_json_file("scenarios/bloom-176b-jean-zay.json");
  doc["topology"] = absolute("topologies/jean-zay-a100-80g-opa.json");
  ASSERT_EQ(doc["training"]["deepspeed_step_work"], true);
  doc["training"]["gradient_buffers"] = "generic";
  doc["training"]["pipeline_engine"] = "megatron";
  ConfigError e = error_of(doc, "generic");
  EXPECT_EQ(e.json_path(), "/training/deepspeed_step_work");
  EXPECT_TRUE(contains(e.what(), "deepspeed-bf16-optimizer")) << e.what();
}

TEST(ScenarioErrors, TensorParallelAmaxReductionNeedsTransformerEnginesFp8) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  doc["training"]["tp_only_amax_red"] = true;
  doc["training"]["fp8_implementation"] = "torchao";
  ConfigError e = error_of(doc, "torchao");
  EXPECT_EQ(e.json_path(), "/training/tp_only_amax_red");
  EXPECT_TRUE(contains(e.what(), "transformer-engine")) << e.what();
}

TEST(ScenarioErrors, ContextParallelMustDivideTheRanksAndTwiceItTheSequence) {
  json doc = read_json_file("scenarios/nemo-h100-fp8.json");
  doc["topology"] = absolute("topologies/dgx-h100-ib.json");
  json& point = doc["points"][7];
  ASSERT_EQ(point["training"]["context_parallel"], 2);
  point["training"]["context_parallel"] = 3;
  ConfigError e = error_of(doc, "cp3");
  EXPECT_EQ(e.json_path(), "/points/7/nodes");
  EXPECT_TRUE(contains(e.what(), "context (3)")) << e.what();
  point["training"]["context_parallel"] = 2;
  point["model"]["seq_len"] = 8190;
  e = error_of(doc, "seq");
  EXPECT_EQ(e.json_path(), "/points/7/training");
  EXPECT_TRUE(contains(e.what(), "2 x CP = 4")) << e.what();
  point["model"]["seq_len"] = 8192;
  point["data_parallel_degree"] = 8;
  e = error_of(doc, "dp");
  EXPECT_EQ(e.json_path(), "/points/7/data_parallel_degree");
  EXPECT_TRUE(contains(e.what(), "context 2")) << e.what();
  point["data_parallel_degree"] = 4;
  point["training"]["flash_attention"] = false;
  point["training"].erase("attention_kernel");
  doc["training"].erase("attention_kernel");
  e = error_of(doc, "flash");
  EXPECT_EQ(e.json_path(), "/points/7/training/context_parallel");
  EXPECT_TRUE(contains(e.what(), "flash_attention")) << e.what();
  // Whole layers recomputed run the ring again (modelled); a selective policy is not.
  point["training"]["flash_attention"] = true;
  json& pipelined = doc["points"][8];  // TP 4, PP 4, CP 2
  ASSERT_EQ(pipelined["training"]["context_parallel"], 2);
  pipelined["training"]["activation_checkpointing"] = true;
  pipelined["training"]["checkpoint_policy"] = "selective_attention";
  e = error_of(doc, "selective");
  EXPECT_EQ(e.json_path(), "/points/8/training/context_parallel");
  EXPECT_TRUE(contains(e.what(), "checkpoint_policy \"full\"")) << e.what();
  // The all-to-all exchange splits a TP rank's heads over CP: the 70B row's 2 KV heads (8 / TP 4)
  // do not divide over CP 4 (nor the 8B row's 8 over CP 16).
  pipelined["training"].erase("activation_checkpointing");
  pipelined["training"].erase("checkpoint_policy");
  pipelined["training"]["cp_comm_type"] = "a2a";
  EXPECT_NO_THROW(load_scenario(write(doc, temp_file("a2a_cp2"))));
  pipelined["training"]["context_parallel"] = 4;
  pipelined["data_parallel_degree"] = 1;
  e = error_of(doc, "a2a_cp4");
  EXPECT_EQ(e.json_path(), "/points/8/training");
  EXPECT_TRUE(contains(e.what(), "2 KV heads")) << e.what();
}

TEST(ScenarioErrors, ContextParallelUnderFsdpIsTorchtitansWithFsdp2) {
  // torchtitan's defaults (FSDP2, selective op checkpointing) take CP 2 as they are.
  json doc = read_json_file("scenarios/p5-llama3-8b-torchtitan.json");
  doc["topology"] = absolute("topologies/p5.48xlarge.json");
  doc["points"] = json::array({doc["points"][0]});
  json& point = doc["points"][0];
  point["training"]["context_parallel"] = 2;
  point["data_parallel_degree"] = 16;
  EXPECT_NO_THROW(load_scenario(write(doc, temp_file("tt_cp2"))));
  point["training"]["context_parallel_rotate_method"] = "alltoall";
  EXPECT_NO_THROW(load_scenario(write(doc, temp_file("tt_cp2_a2a"))));
  point["training"]["context_parallel_rotate_method"] = "ring";
  ConfigError e = error_of(doc, "tt_rotate");
  EXPECT_EQ(e.json_path(), "/points/0/training/context_parallel_rotate_method");
  point["training"].erase("context_parallel_rotate_method");
  point["training"]["fsdp_implementation"] = "torch-fsdp1";
  e = error_of(doc, "tt_fsdp1");
  EXPECT_EQ(e.json_path(), "/points/0/training/context_parallel");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp2")) << e.what();
  // Megatron's exchange choice is not PyTorch's ring's.
  point["training"].erase("fsdp_implementation");
  point["training"]["cp_comm_type"] = "a2a";
  e = error_of(doc, "tt_cp_comm_type");
  EXPECT_EQ(e.json_path(), "/points/0/training/cp_comm_type");
  point["training"].erase("cp_comm_type");
  // The rotation is PyTorch's: without CP (or under Megatron's CP) the key is an error.
  point["training"].erase("fsdp_implementation");
  point["training"]["context_parallel"] = 1;
  point["data_parallel_degree"] = 32;
  point["training"]["context_parallel_rotate_method"] = "allgather";
  e = error_of(doc, "tt_no_cp");
  EXPECT_EQ(e.json_path(), "/points/0/training/context_parallel_rotate_method");
}

TEST(ScenarioErrors, Float8AllGatherNeedsTorchaoFp8UnderFsdp2) {
  json doc = read_json_file("scenarios/p5-llama3-8b-torchtitan.json");
  doc["topology"] = absolute("topologies/p5.48xlarge.json");
  doc["training"]["float8_precompute_scale"] = true;
  ConfigError e = error_of(doc, "precompute_only");
  EXPECT_EQ(e.json_path(), "/training/float8_precompute_scale");
  EXPECT_TRUE(contains(e.what(), "fsdp_float8_all_gather")) << e.what();
  doc["training"].erase("float8_precompute_scale");
  doc["training"]["fsdp_float8_all_gather"] = true;  // the bf16 points: no FP8 linears
  e = error_of(doc, "bf16");
  EXPECT_EQ(e.json_path(), "/training/fsdp_float8_all_gather");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp2")) << e.what();
  doc["training"]["linear_precision"] = "fp8";
  doc["training"]["fp8_implementation"] = "transformer-engine";
  e = error_of(doc, "te");
  EXPECT_EQ(e.json_path(), "/training/fsdp_float8_all_gather");
  doc["training"]["fp8_implementation"] = "torchao";
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  e = error_of(doc, "fsdp1");
  EXPECT_EQ(e.json_path(), "/training/fsdp_float8_all_gather");
}

TEST(ShippedScenario, H100ProfileHasFp8SamplesFromItsSecondCalibration) {
  const auto dev = model::load_device_profile("topologies/devices/h100-80gb.json");
  ASSERT_NE(model::gemm_curve(dev, model::Dtype::fp8), nullptr);
  ASSERT_NE(model::gemm_curve(dev, model::Dtype::fp8, model::Accumulation::fast), nullptr);
  ASSERT_NE(model::gemm_curve(dev, model::Dtype::bf16), nullptr);
  ASSERT_EQ(dev.extra_gemm_calibrations.size(), 2u);
}

TEST(ScenarioErrors, PipelineParallelismWithZero2Or3OrFsdp1IsRejectedWithTheReason) {
  json doc = bert_large_nccl_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["schedule"] = "zero3";
  ConfigError e = error_of(doc, "zero3");
  EXPECT_EQ(e.json_path(), "/training/pipeline_parallel");
  EXPECT_TRUE(contains(e.what(), "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism")) << e.what();
  doc["training"]["schedule"] = "zero2";
  e = error_of(doc, "zero2");
  EXPECT_EQ(e.json_path(), "/training/pipeline_parallel");
  // FSDP inside the stages is torchtitan's: FSDP2 only.
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["precision"] = "fsdp_mixed";
  e = error_of(doc, "fsdp");
  EXPECT_EQ(e.json_path(), "/training/pipeline_parallel");
  EXPECT_TRUE(contains(e.what(), "fsdp_implementation \"torch-fsdp2\"")) << e.what();
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  e = error_of(doc, "fsdp1");
  EXPECT_EQ(e.json_path(), "/training/pipeline_parallel");
  doc["training"]["fsdp_implementation"] = "torch-fsdp2";
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("fsdp2"))));
  doc["training"]["allocator_tensor_requests"] = true;
  e = error_of(doc, "fsdp2-requests");
  EXPECT_EQ(e.json_path(), "/training/allocator_tensor_requests");
  EXPECT_TRUE(contains(e.what(), "without pipeline_parallel")) << e.what();
  doc["training"].erase("allocator_tensor_requests");
  doc["training"]["overlap_grad_reduce"] = true;
  e = error_of(doc, "fsdp2-overlap");
  EXPECT_EQ(e.json_path(), "/training/overlap_grad_reduce");
  EXPECT_TRUE(contains(e.what(), "after the stage's last backward")) << e.what();
  doc["training"].erase("overlap_grad_reduce");
  doc["training"].erase("fsdp_implementation");
  // Optimizer-state sharding per stage is what pipelines combine with.
  doc["training"]["schedule"] = "zero1";
  doc["training"]["precision"] = "amp";
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("zero1"))));
}

TEST(ScenarioErrors, OverlappedParameterGatherNeedsZero1AndOverlappedReduce) {
  json doc = bert_large_nccl_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["schedule"] = "zero1";
  doc["training"]["overlap_param_gather"] = true;
  ConfigError e = error_of(doc, "opg");
  EXPECT_EQ(e.json_path(), "/training/overlap_param_gather");
  EXPECT_TRUE(contains(e.what(), "overlap_grad_reduce")) << e.what();
  doc["training"]["overlap_grad_reduce"] = true;
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("opg"))));
  doc["training"]["schedule"] = "ddp";
  e = error_of(doc, "opg");
  EXPECT_EQ(e.json_path(), "/training/overlap_param_gather");
  EXPECT_TRUE(contains(e.what(), "zero1")) << e.what();
  // Without stages, Megatron's data-parallel job runs in the same schedule (build_program).
  doc["training"]["schedule"] = "zero1";
  doc["training"]["pipeline_parallel"] = 1;
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("opg"))));
}

TEST(ScenarioErrors, Zero1GradientAllReduceNeedsZero1UnderAPipeline) {
  json doc = bert_large_nccl_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["schedule"] = "zero1";
  doc["training"]["zero1_gradient_collective"] = "all_reduce";
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("bf16opt"))));
  doc["training"]["zero1_gradient_collective"] = "all-reduce";
  EXPECT_EQ(error_of(doc, "bf16opt").json_path(), "/training/zero1_gradient_collective");
  doc["training"]["zero1_gradient_collective"] = "all_reduce";
  doc["training"]["pipeline_parallel"] = 1;
  ConfigError e = error_of(doc, "bf16opt");
  EXPECT_EQ(e.json_path(), "/training/zero1_gradient_collective");
  EXPECT_TRUE(contains(e.what(), "pipeline_parallel > 1")) << e.what();
}

TEST(ScenarioErrors, DeepSpeedPipelineEngineNeedsA1F1BPipelineReducedAfterTheFlush) {
  json doc = bert_large_nccl_doc();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["pipeline_engine"] = "deepspeed";
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("dspipe"))));
  doc["training"]["pipeline_engine"] = "DeepSpeed";
  ConfigError e = error_of(doc, "dspipe");
  EXPECT_EQ(e.json_path(), "/training/pipeline_engine");
  EXPECT_TRUE(contains(e.what(), "megatron")) << e.what();
  doc["training"]["pipeline_engine"] = "deepspeed";
  doc["training"]["pipeline_schedule"] = "gpipe";
  e = error_of(doc, "dspipe");
  EXPECT_EQ(e.json_path(), "/training/pipeline_engine");
  EXPECT_TRUE(contains(e.what(), "1f1b")) << e.what();
  doc["training"]["pipeline_schedule"] = "1f1b";
  doc["training"]["overlap_grad_reduce"] = true;
  e = error_of(doc, "dspipe");
  EXPECT_TRUE(contains(e.what(), "overlap_grad_reduce false")) << e.what();
  doc["training"]["overlap_grad_reduce"] = false;
  doc["training"]["pipeline_parallel"] = 1;
  e = error_of(doc, "dspipe");
  EXPECT_EQ(e.json_path(), "/training/pipeline_engine");
  EXPECT_TRUE(contains(e.what(), "pipeline_parallel > 1")) << e.what();
}

TEST(ScenarioErrors, DataParallelDegreeMustUseEveryAccelerator) {
  json doc = bert_large_doc();
  doc["points"][0]["data_parallel_degree"] = 16;  // 1 node x 8 accelerators
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/points/0/data_parallel_degree");
  EXPECT_TRUE(contains(e.what(), "degree 16 does not match the 8 = 8 accelerators")) << e.what();

  doc["points"][0]["data_parallel_degree"] = 8;
  doc["points"][3]["data_parallel_degree"] = 64;  // 8 nodes x 8
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("matching"))));
}

TEST(ScenarioErrors, HeadsMustDivideHidden) {
  json doc = bert_large_doc();
  doc["model"]["heads"] = 15;  // 1024 / 15 is not an integer
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/model/heads");
  EXPECT_TRUE(contains(e.what(), "divisible")) << e.what();
}

TEST(ScenarioErrors, OtherBadValues) {
  auto path_of_error = [](const json& doc) {
    return error_of(doc).json_path();
  };
  json doc = bert_large_doc();
  doc["training"]["gradient_dtype"] = "int8";
  EXPECT_EQ(path_of_error(doc), "/training/gradient_dtype");
  doc = bert_large_doc();
  doc["training"]["bucket_elements"] = -1;
  EXPECT_EQ(path_of_error(doc), "/training/bucket_elements");
  doc = bert_large_doc();
  doc["points"][1]["reference_samples_per_s"] = -1;
  EXPECT_EQ(path_of_error(doc), "/points/1/reference_samples_per_s");
  doc = bert_large_doc();
  doc["points"] = json::array();
  EXPECT_EQ(path_of_error(doc), "/points");
  doc = bert_large_doc();
  doc["schema_version"] = 2;
  EXPECT_EQ(path_of_error(doc), "/schema_version");
  doc = bert_large_doc();
  doc["model"].erase("layers");
  EXPECT_EQ(path_of_error(doc), "/model/layers");
}

TEST(ScenarioErrors, UnknownMlpActivationNamesThePathAndTheChoices) {
  json doc = bert_large_doc();
  doc["model"]["mlp"] = "relu2";
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/model/mlp");
  EXPECT_TRUE(contains(e.what(), "squared_relu")) << e.what();
  doc["model"]["mlp"] = "squared_relu";
  EXPECT_EQ(load_scenario(write(doc, temp_file("valid"))).model.mlp, model::MlpKind::squared_relu);
}

TEST(ScenarioErrors, Bf16OptimizerStateNeedsAdamUnderZero1WithBf16Weights) {
  json doc = bert_large_doc();  // zero1, adam
  doc["training"]["precision"] = "bf16_fp32_grads";
  doc["training"]["optimizer_state_dtype"] = "bf16";
  doc["training"]["gradient_buffers"] = "apex-distributed-fused-adam";
  const Scenario s = load_scenario(write(doc, temp_file("valid")));
  EXPECT_DOUBLE_EQ(s.training.optimizer_state_element_bytes, 2);
  EXPECT_DOUBLE_EQ(s.training.precision.master_weights, 2);
  doc["training"]["optimizer_state_dtype"] = "fp8";
  EXPECT_EQ(error_of(doc).json_path(), "/training/optimizer_state_dtype");
  doc["training"]["optimizer_state_dtype"] = "bf16";
  doc["training"]["precision"] = "amp";
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/gradient_buffers");
  EXPECT_TRUE(contains(e.what(), "bf16_fp32_grads")) << e.what();
}

// training.gradient_buffers: no default where the implementations' copies differ, and each named
// implementation only with the schedule, recipe, pipeline engine and collective its code runs.
TEST(ScenarioErrors, GradientBuffersNameTheOptimizerWhereTheCopiesDiffer) {
  json doc = bert_large_nccl_doc();  // zero1, amp, adam
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers, plan::GradientBuffers::generic);
  doc["training"]["precision"] = "bf16_fp32_grads";
  ConfigError e = error_of(doc, "gb");
  EXPECT_EQ(e.file(), temp_file("gb"));
  EXPECT_EQ(e.json_path(), "/training/gradient_buffers");
  EXPECT_TRUE(contains(e.what(), "required")) << e.what();
  EXPECT_TRUE(contains(e.what(), "\"megatron-core-distributed-optimizer\"")) << e.what();
  // A DeepSpeed ZeRO-1 job with Megatron's recipe says so (it was counted as Megatron-core's).
  doc["training"]["gradient_buffers"] = "generic";
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers, plan::GradientBuffers::generic);
  doc["training"]["gradient_buffers"] = "megatron-core-distributed-optimizer";
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers,
            plan::GradientBuffers::megatron_core_distributed_optimizer);
  doc["training"]["gradient_buffers"] = "megatron-core";
  e = error_of(doc, "gb");
  EXPECT_EQ(e.json_path(), "/training/gradient_buffers");
  EXPECT_TRUE(contains(e.what(), "deepspeed-bf16-optimizer")) << e.what();
  // bf16 state is Apex's.
  doc["training"]["gradient_buffers"] = "megatron-core-distributed-optimizer";
  doc["training"]["optimizer_state_dtype"] = "bf16";
  e = error_of(doc, "gb");
  EXPECT_EQ(e.json_path(), "/training/optimizer_state_dtype");
  EXPECT_TRUE(contains(e.what(), "apex-distributed-fused-adam")) << e.what();
  doc["training"].erase("optimizer_state_dtype");
  // Megatron-core's and Apex's optimizers shard (ZeRO-1); Megatron-LM's local DDP does not.
  doc["training"]["schedule"] = "ddp";
  e = error_of(doc, "gb");
  EXPECT_EQ(e.json_path(), "/training/gradient_buffers");
  EXPECT_TRUE(contains(e.what(), "needs schedule zero1, got ddp")) << e.what();
  doc["training"]["gradient_buffers"] = "megatron-local-ddp";
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers,
            plan::GradientBuffers::megatron_local_ddp);
  doc["training"]["schedule"] = "zero1";
  e = error_of(doc, "gb");
  EXPECT_TRUE(contains(e.what(), "needs schedule ddp, got zero1")) << e.what();
  // DeepSpeed's BF16_Optimizer with FSDP cannot exist.
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["gradient_buffers"] = "deepspeed-bf16-optimizer";
  e = error_of(doc, "gb");
  EXPECT_EQ(e.json_path(), "/training/gradient_buffers");
  EXPECT_TRUE(contains(e.what(), "needs schedule zero1, got fsdp")) << e.what();
  // ... nor under Megatron's pipeline, nor reduce-scattering.
  doc["training"]["schedule"] = "zero1";
  e = error_of(doc, "gb");
  EXPECT_TRUE(contains(e.what(), "pipeline_engine \"deepspeed\"")) << e.what();
  doc["training"]["pipeline_parallel"] = 2;
  doc["training"]["pipeline_engine"] = "deepspeed";
  e = error_of(doc, "gb");
  EXPECT_TRUE(contains(e.what(), "zero1_gradient_collective \"all_reduce\"")) << e.what();
  doc["training"]["zero1_gradient_collective"] = "all_reduce";
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers,
            plan::GradientBuffers::deepspeed_bf16_optimizer);
  // Megatron-core's optimizer reduce-scatters.
  doc["training"]["pipeline_engine"] = "megatron";
  doc["training"]["gradient_buffers"] = "megatron-core-distributed-optimizer";
  e = error_of(doc, "gb");
  EXPECT_EQ(e.json_path(), "/training/zero1_gradient_collective");
  // Megatron's recipe only; FSDP keeps the recipe's copies whatever the recipe, so no key needed.
  doc["training"].erase("zero1_gradient_collective");
  doc["training"]["precision"] = "amp";
  e = error_of(doc, "gb");
  EXPECT_TRUE(contains(e.what(), "needs precision bf16_fp32_grads, got amp")) << e.what();
  doc["training"].erase("gradient_buffers");
  doc["training"]["pipeline_parallel"] = 1;
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["precision"] = "bf16_fp32_grads";
  EXPECT_EQ(load_scenario(write(doc, temp_file("gb"))).training.gradient_buffers, plan::GradientBuffers::generic);
}

TEST(ScenarioErrors, FsdpImplementationNamesItsPath) {
  json doc = bert_large_doc();  // schedule zero1
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_implementation");
  EXPECT_TRUE(contains(e.what(), "needs schedule fsdp")) << e.what();
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["fsdp_implementation"] = "torch-fsdp3";
  EXPECT_EQ(error_of(doc).json_path(), "/training/fsdp_implementation");
}

TEST(ScenarioErrors, FsdpPrefetchOptionsNeedFsdp1) {
  json doc = bert_large_doc();  // schedule zero1
  doc["training"]["fsdp_backward_prefetch"] = "pre";
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_backward_prefetch");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp1")) << e.what();
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["fsdp_implementation"] = "torch-fsdp2";  // fully_shard has neither argument
  EXPECT_EQ(error_of(doc).json_path(), "/training/fsdp_backward_prefetch");
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  doc["training"]["fsdp_backward_prefetch"] = "BACKWARD_PRE";
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_backward_prefetch");
  EXPECT_TRUE(contains(e.what(), "none")) << e.what();
  doc["training"].erase("fsdp_backward_prefetch");
  doc["training"]["fsdp_forward_prefetch"] = "yes";
  EXPECT_EQ(error_of(doc).json_path(), "/training/fsdp_forward_prefetch");
  doc["training"]["fsdp_implementation"] = "generic";
  doc["training"]["fsdp_forward_prefetch"] = true;
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_forward_prefetch");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp1")) << e.what();
}

TEST(ScenarioErrors, ComposerMetricSyncNeedsTheMetrics) {
  json doc = read_json_file("scenarios/llmfoundry-fsdp-a100.json");
  doc["topology"] = absolute("topologies/mosaicml-a100-40g-roce.json");
  doc["points"] = json::array({doc["points"][0]});
  EXPECT_TRUE(load_scenario(write(doc, temp_file("on"))).points.at(0).training.composer_metric_sync);
  doc["training"].erase("composer_metric_sync");
  EXPECT_FALSE(load_scenario(write(doc, temp_file("default"))).points.at(0).training.composer_metric_sync);
  doc["training"]["composer_metric_sync"] = true;
  doc["training"].erase("composer_train_metrics");
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/composer_metric_sync");
  EXPECT_TRUE(contains(e.what(), "needs composer_train_metrics")) << e.what();
}

TEST(ScenarioErrors, ComposerTrainMetricsAutocastNeedsTheMetrics) {
  json doc = read_json_file("scenarios/llmfoundry-fsdp-a100.json");
  doc["topology"] = absolute("topologies/mosaicml-a100-40g-roce.json");
  doc["points"] = json::array({doc["points"][0]});  // a 40GB row, on the scenario's topology
  EXPECT_TRUE(load_scenario(write(doc, temp_file("default"))).points.at(0).training.composer_train_metrics_autocast);
  doc["training"]["composer_train_metrics_autocast"] = false;
  EXPECT_FALSE(load_scenario(write(doc, temp_file("off"))).points.at(0).training.composer_train_metrics_autocast);
  doc["training"]["composer_train_metrics"] = json::array();
  const ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/composer_train_metrics_autocast");
  EXPECT_TRUE(contains(e.what(), "needs composer_train_metrics")) << e.what();
}

TEST(ScenarioErrors, FsdpPadCopyNeedsFsdp1AndNamesItsValues) {
  json doc = bert_large_doc();  // schedule zero1
  doc["training"]["fsdp_pad_copy"] = "uneven";
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_pad_copy");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp1")) << e.what();
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  doc["training"]["fsdp_pad_copy"] = "sometimes";
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_pad_copy");
  EXPECT_TRUE(contains(e.what(), "uneven")) << e.what();
}

TEST(ScenarioErrors, FsdpShardingStrategyNeedsFsdp1AndNamesItsValues) {
  json doc = bert_large_doc();  // schedule zero1
  doc["training"]["fsdp_sharding_strategy"] = "shard_grad_op";
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_sharding_strategy");
  EXPECT_TRUE(contains(e.what(), "torch-fsdp1")) << e.what();
  doc["training"]["schedule"] = "fsdp";
  doc["training"]["fsdp_implementation"] = "torch-fsdp2";  // fully_shard's reshard_after_forward is not modelled
  EXPECT_EQ(error_of(doc).json_path(), "/training/fsdp_sharding_strategy");
  doc["training"]["fsdp_implementation"] = "torch-fsdp1";
  doc["training"]["fsdp_sharding_strategy"] = "SHARD_GRAD_OP";
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/fsdp_sharding_strategy");
  EXPECT_TRUE(contains(e.what(), "shard_grad_op")) << e.what();
}

TEST(ScenarioErrors, DeepSpeedZero3SettingsNameTheirPath) {
  json doc = bert_large_doc();  // schedule zero1
  doc["training"]["zero3_implementation"] = "deepspeed-0.3";
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/zero3_implementation");
  EXPECT_TRUE(contains(e.what(), "only schedule zero3")) << e.what();
  doc["training"]["schedule"] = "zero3";
  doc["training"]["zero3_implementation"] = "deepspeed-0.4";
  EXPECT_EQ(error_of(doc).json_path(), "/training/zero3_implementation");
  doc["training"]["zero3_implementation"] = "fsdp";
  doc["training"]["deepspeed_zero3"] = {{"reduce_bucket_size", 5e8}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/deepspeed_zero3");
  doc["training"]["zero3_implementation"] = "deepspeed-0.3";
  doc["training"]["deepspeed_zero3"] = {{"stage3_prefetch_bucket_size", -1}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/deepspeed_zero3/stage3_prefetch_bucket_size");
  doc["training"]["deepspeed_zero3"] = {{"stage3_prefetch_bucket", 5e8}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/deepspeed_zero3/stage3_prefetch_bucket");
  doc["training"]["deepspeed_zero3"] = {{"stage3_prefetch_bucket_size", 5e8}};
  EXPECT_NO_THROW((void)load_scenario(write(doc, temp_file("valid"))));
}

// ---- training.collectives: NCCL_ALGO / NCCL_PROTO for a scenario ------------------------------

/// p4d-bert-large-ddp.json (NCCL on p4d: A100 NVSwitch + EFA) loadable from /tmp.
json p4d_doc() {
  json doc = read_json_file("scenarios/p4d-bert-large-ddp.json");
  doc["topology"] = absolute("topologies/p4d.24xlarge.json");
  return doc;
}

TEST(ScenarioCollectives, ForceTheTunerForEveryCollectiveOfThePoint) {
  json doc = p4d_doc();
  doc["training"]["collectives"] = {{"algorithm", "ring"}, {"protocol", "Simple"}};
  doc["points"][0]["training"] = {{"collectives", {{"algorithm", "tree"}}}};
  const Scenario s = load_scenario(write(doc, temp_file("scenario")));
  // The point's object replaces the scenario's key by key: its algorithm, the scenario's protocol.
  ASSERT_TRUE(s.points[0].collectives.algorithm);
  EXPECT_EQ(*s.points[0].collectives.algorithm, collective::Algorithm::tree);
  ASSERT_TRUE(s.points[0].collectives.protocol);
  EXPECT_EQ(*s.points[0].collectives.protocol, collective::Protocol::simple);
  ASSERT_TRUE(s.points[1].collectives.algorithm);
  EXPECT_EQ(*s.points[1].collectives.algorithm, collective::Algorithm::ring);

  // What the override changes: 1 GiB all_reduce over 2 p4d nodes is a tree for the tuner
  // (half the ring's network bytes), a ring when forced.
  std::vector<int> group(16);
  for (int r = 0; r < 16; ++r) group[static_cast<std::size_t>(r)] = r;
  const collective::RankLayout layout{8};
  const collective::FabricRates rates{300e9, 2e-6, 50e9, 20e-6};
  const auto tuned = collective::plan_collective(collective::Op::all_reduce, 1 << 30, group,
                                                 layout, s.machine->collectives, rates);
  EXPECT_EQ(tuned.algorithm, "tree");
  const auto forced = collective::plan_collective(collective::Op::all_reduce, 1 << 30, group,
                                                  layout, s.machine->collectives, rates,
                                                  s.points[1].collectives);
  EXPECT_EQ(forced.algorithm, "ring");
  EXPECT_EQ(forced.protocol, "Simple");
  EXPECT_GT(forced.predicted, tuned.predicted);
}

TEST(ScenarioCollectives, UnknownOrUnavailableChoicesNameTheirPath) {
  json doc = p4d_doc();
  doc["training"]["collectives"] = {{"algorithm", "butterfly"}};
  ConfigError e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/collectives/algorithm");
  EXPECT_TRUE(contains(e.what(), "ring")) << e.what();  // lists the choices

  doc["training"]["collectives"] = {{"algorithm", "nvls"}};  // A100: no NVLink SHARP
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/collectives/algorithm");
  EXPECT_TRUE(contains(e.what(), "not offered")) << e.what();

  doc["training"]["collectives"] = {{"protocol", "simple"}};  // NCCL spells it Simple
  EXPECT_EQ(error_of(doc).json_path(), "/training/collectives/protocol");

  doc["training"]["collectives"] = {{"algoritm", "ring"}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/collectives/algoritm");

  doc = p4d_doc();
  doc["points"][1]["training"] = {{"collectives", {{"protocol", "LL256"}}}};
  EXPECT_EQ(error_of(doc).json_path(), "/points/1/training/collectives/protocol");

  // HCCL (schema-1 calibration) has no tuner to override.
  doc = bert_large_doc();
  doc["training"]["collectives"] = {{"algorithm", "ring"}};
  e = error_of(doc);
  EXPECT_EQ(e.json_path(), "/training/collectives");
  EXPECT_TRUE(contains(e.what(), "no tuner")) << e.what();
}

TEST(ScenarioCollectives, SmSharingIsOnUnlessTurnedOff) {
  json doc = p4d_doc();
  doc["points"][1]["training"] = {{"collectives", {{"sm_sharing", false}}}};
  Scenario s = load_scenario(write(doc, temp_file("scenario")));
  EXPECT_TRUE(s.points[0].sm_sharing);
  EXPECT_FALSE(s.points[1].sm_sharing);
  EXPECT_EQ(s.machine->device.sm_count, 108);  // A100 (devices/a100-40gb.json)

  doc = p4d_doc();
  doc["training"]["collectives"] = {{"sm_sharing", "no"}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/collectives/sm_sharing");

  // HCCL takes it too (a no-op there: no channels), though it has no tuner to override.
  doc = bert_large_doc();
  doc["training"]["collectives"] = {{"sm_sharing", false}};
  s = load_scenario(write(doc, temp_file("scenario")));
  EXPECT_FALSE(s.points[0].sm_sharing);
}

TEST(ScenarioCollectives, HbmSharingIsOnUnlessTurnedOff) {
  json doc = p4d_doc();
  doc["points"][1]["training"] = {{"collectives", {{"hbm_sharing", false}, {"sm_sharing", false}}}};
  Scenario s = load_scenario(write(doc, temp_file("scenario")));
  EXPECT_TRUE(s.points[0].hbm_sharing);
  EXPECT_FALSE(s.points[1].hbm_sharing);
  EXPECT_FALSE(s.points[1].sm_sharing);
  // A100 40GB: 1555 GB/s x 0.79 streaming over 1.5 HBM bytes per link unit.
  EXPECT_NEAR(model::hbm_link_bandwidth(s.machine->device), 1555e9 * 0.79 / 1.5, 1e3);

  doc = p4d_doc();
  doc["training"]["collectives"] = {{"hbm_sharing", 1}};
  EXPECT_EQ(error_of(doc).json_path(), "/training/collectives/hbm_sharing");

  // Gaudi (no SMs: HCCL runs on its RoCE engines) gets no HBM link whatever the switch says.
  doc = bert_large_doc();
  s = load_scenario(write(doc, temp_file("scenario")));
  EXPECT_TRUE(s.points[0].hbm_sharing);
  EXPECT_EQ(model::hbm_link_bandwidth(s.machine->device), 0);
}

TEST(ScenarioCollectives, EveryShippedTopologysHbmLinkCarriesItsOtherLinks) {
  // Folding leaves HBM links out of the flows' components because they never limit a
  // collective alone (engine/program_executor.cpp): checked on every node the project ships.
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator("topologies")) {
    if (entry.path().extension() != ".json") continue;
    const auto topo = topology::load_topology(entry.path().string());
    const auto dev = model::load_device_profile(topo.accelerator.device_file);
    const BytesPerSecond hbm = model::hbm_link_bandwidth(dev);
    if (hbm <= 0) continue;
    EXPECT_NO_THROW(engine::check_hbm_link(topo, hbm)) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 8);
  const auto p4d = topology::load_topology("topologies/p4d.24xlarge.json");
  EXPECT_THROW(engine::check_hbm_link(p4d, 300e9), ConfigError);  // two 300 GB/s NVLink directions
}

// ---- Data pipeline -------------------------------------------------------------------------

/// fsx-sizing-4node.json with its topology and FSx table named by absolute path.
json fsx_doc() {
  json doc = read_json_file("scenarios/fsx-sizing-4node.json");
  doc["topology"] = absolute("topologies/p4d.24xlarge.json");
  doc["data"]["storage"]["spec"] = absolute("topologies/storage/fsx-lustre.json");
  return doc;
}

TEST(DataPipeline, APointMayReadFromLocalNvmeInsteadOfFsx) {
  json doc = fsx_doc();
  doc["points"][3]["storage_kind"] = "local_nvme";
  doc["points"][3].erase("storage_capacity");
  const Scenario s = load_scenario(write(doc, temp_file("scenario")));
  EXPECT_FALSE(s.points[0].storage_kind.has_value());
  ASSERT_TRUE(s.points[3].storage_kind.has_value());
  EXPECT_EQ(*s.points[3].storage_kind, pipeline::SourceKind::local_nvme);
}

TEST(DataPipeline, BadDataSourcesNameTheirPath) {
  json doc = fsx_doc();
  doc["points"][0]["storage_kind"] = "local_nvme";  // and keeps its FSx capacity
  ConfigError e = error_of(doc, "capacity");
  EXPECT_EQ(e.json_path(), "/points/0/storage_capacity");

  doc = fsx_doc();
  doc["data"]["dataset"]["size"] = "9TB";  // p4d holds 8 x 1 TB of NVMe
  doc["data"]["dataset"].erase("samples");
  doc["points"][0].erase("storage_capacity");
  doc["points"][0]["storage_kind"] = "local_nvme";
  e = error_of(doc, "too_big");
  EXPECT_EQ(e.json_path(), "/points/0/storage_kind");
  EXPECT_TRUE(contains(e.what(), "does not fit on the local NVMe")) << e.what();

  doc = fsx_doc();
  doc["points"][0]["storage_kind"] = "s3";
  EXPECT_EQ(error_of(doc, "kind").json_path(), "/points/0/storage_kind");
}

TEST(DataPipeline, PointsShareTheScenariosTopology) {
  json doc = fsx_doc();
  doc["points"][0]["topology"] = absolute("topologies/p4d.24xlarge.json");
  const ConfigError e = error_of(doc, "topology");
  EXPECT_EQ(e.json_path(), "/points/0/topology");
  EXPECT_TRUE(contains(e.what(), "\"data\" section")) << e.what();
}

TEST(DataPipeline, DiagnosisThresholdsDefaultAndMayBeSet) {
  json doc = fsx_doc();
  Scenario s = load_scenario(write(doc, temp_file("defaults")));
  EXPECT_DOUBLE_EQ(s.data->diagnosis.wait, 0.10);
  EXPECT_DOUBLE_EQ(s.data->diagnosis.accelerator_utilisation, 0.70);
  doc["data"]["diagnosis"] = {{"accelerator_utilisation", 0.8}, {"source", "assumption"}};
  s = load_scenario(write(doc, temp_file("set")));
  EXPECT_DOUBLE_EQ(s.data->diagnosis.accelerator_utilisation, 0.8);
  EXPECT_DOUBLE_EQ(s.data->diagnosis.node_spread, 0.10);
  doc["data"]["diagnosis"] = {{"wait", 1.5}};
  const ConfigError e = error_of(doc, "bad");
  EXPECT_EQ(e.json_path(), "/data/diagnosis/wait");
  EXPECT_TRUE(contains(e.what(), "between 0 and 1")) << e.what();
}


TEST(ScenarioErrors, CheckpointPolicyNeedsCheckpointingAndIsModelledWhereTorchtitanRunsIt) {
  const std::string file = "scenarios/p5-llama3-8b-torchtitan.json";
  auto torchtitan = [&] {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/p5.48xlarge.json");
    doc["points"].erase(1);  // the awsome FSDP point overrides the policy
    return doc;
  };
  const Scenario s = load_scenario(file);
  EXPECT_EQ(s.points.at(0).training.checkpoint_policy, plan::CheckpointPolicy::selective_op);
  EXPECT_EQ(s.points.at(1).training.checkpoint_policy, plan::CheckpointPolicy::full);
  struct Case {
    const char* key;
    json value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"activation_checkpointing", false, "enable activation_checkpointing"},
      {"flash_attention", false, "enable flash_attention"},
      {"schedule", "zero1", "PTD-P schedule only"},
      {"schedule", "zero2", "torchtitan's policy"},
      {"checkpoint_policy", "every_other_layer", "checkpoint_policy"},
  };
  for (const auto& c : cases) {
    json doc = torchtitan();
    doc["training"][c.key] = c.value;
    if (std::string(c.key) == "schedule") doc["training"]["precision"] = "amp";
    const ConfigError e = error_of(doc, c.key);
    EXPECT_EQ(e.json_path(), "/training/checkpoint_policy") << c.key << ": " << e.what();
    EXPECT_TRUE(contains(e.what(), c.expected)) << e.what();
  }
}

TEST(Scenario, SelectiveOpIsModelledWithTensorAndPipelineParallelism) {
  const std::string file = "scenarios/p5-llama3-70b-torchtitan-pp.json";
  json doc = read_json_file(file);
  doc["topology"] = absolute("topologies/p5.48xlarge.json");
  doc["training"]["checkpoint_policy"] = "selective_op";
  const Scenario s = load_scenario(write(doc, temp_file("tt-pp-selective")));
  for (const auto& p : s.points) EXPECT_EQ(p.training.checkpoint_policy, plan::CheckpointPolicy::selective_op) << p.label;
  // Not DeepSpeed's pipeline engine: its checkpointing has no op policy.
  json bloom = read_json_file("scenarios/bloom-176b-jean-zay.json");
  bloom["topology"] = absolute("topologies/jean-zay-a100-80g-opa.json");
  bloom["training"]["flash_attention"] = true;
  bloom["training"]["checkpoint_policy"] = "selective_op";
  const ConfigError e = error_of(bloom, "deepspeed");
  EXPECT_EQ(e.json_path(), "/training/pipeline_engine");
  EXPECT_TRUE(contains(e.what(), "selective_op is torchtitan's policy")) << e.what();
}

TEST(Scenario, TheEmbeddingAndHeadPartitionTakesVirtualStages) {
  const std::string file = "scenarios/zero-bubble-a100.json";
  const Scenario s = load_scenario(file);
  const auto& interleaved = s.points.at(3);  // 1.5B 1F1B-I 24 micro-batches
  EXPECT_EQ(interleaved.training.partition, plan::PipelinePartition::transformer_and_embedding);
  EXPECT_EQ(interleaved.training.virtual_stages, 3);
  auto variant = [&](const json& training) {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/dgx-a100-80g-ib.json");
    doc["training"].update(training);
    doc["points"] = json::array({doc["points"][3]});
    return doc;
  };
  // Not with overlap_param_gather, whose buckets follow a chunk's layers, nor with FSDP.
  const ConfigError gather = error_of(variant({{"schedule", "zero1"},
                                               {"gradient_buffers", "megatron-core-distributed-optimizer"},
                                               {"overlap_grad_reduce", true},
                                               {"overlap_param_gather", true},
                                               {"pipeline_schedule", "interleaved"},
                                               {"virtual_stages", 3}}),
                                      "gather");
  EXPECT_EQ(gather.json_path(), "/training/overlap_param_gather");
  json fsdp = variant({{"schedule", "fsdp"}, {"precision", "fsdp_mixed"}, {"fsdp_implementation", "torch-fsdp2"},
                       {"pipeline_schedule", "interleaved"}, {"virtual_stages", 3}});
  for (const char* key : {"gradient_buffers", "optimizer_implementation", "parameter_dtype", "gradient_dtype"})
    fsdp["training"].erase(key);
  const ConfigError e = error_of(fsdp, "fsdp");
  EXPECT_EQ(e.json_path(), "/training/pipeline_partition");
  EXPECT_TRUE(contains(e.what(), "not modelled with FSDP")) << e.what();
}

TEST(ScenarioErrors, ZeroBubbleH1IsModelledInPlainLayerPassesWithGradientsReducedAfterTheFlush) {
  const std::string file = "scenarios/zero-bubble-a100.json";
  const Scenario s = load_scenario(file);
  long zb = 0;
  for (const auto& p : s.points) zb += p.training.pipeline == plan::PipelineSchedule::zero_bubble_h1 ? 1 : 0;
  EXPECT_EQ(zb, 24);  // Table 4 and the arXiv version's Tables 6-7
  struct Case {
    json training;
    const char* path;
  };
  const std::vector<Case> cases = {
      {{{"overlap_grad_reduce", true}}, "/training/overlap_grad_reduce"},
      {{{"tensor_parallel", 2}, {"sequence_parallel", true}}, "/training/sequence_parallel"},
      {{{"activation_checkpointing", true}, {"activation_offloading", true}}, "/training/activation_offloading"},
  };
  for (const auto& c : cases) {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/dgx-a100-80g-ib.json");
    doc["training"]["pipeline_schedule"] = "zb-h1";
    doc["training"].update(c.training);
    const ConfigError e = error_of(doc, "zb");
    EXPECT_EQ(e.json_path(), c.path) << e.what();
    EXPECT_TRUE(contains(e.what(), "\"zb-h1\" is modelled without")) << e.what();
  }
}

TEST(ScenarioErrors, ZeroBubbleVPlacesTwoChunksPerStageAndSendsWholeTensors) {
  const std::string file = "scenarios/zero-bubble-a100.json";
  const Scenario s = load_scenario(file);
  long zbv = 0;
  for (const auto& p : s.points)
    if (p.training.pipeline == plan::PipelineSchedule::zero_bubble_v) {
      ++zbv;
      EXPECT_EQ(p.training.virtual_stages, 2);  // given by the schedule, not the scenario
    }
  EXPECT_EQ(zbv, 12);  // the arXiv version's Tables 6-7
  struct Case {
    json training;
    const char* path;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{{"virtual_stages", 3}}, "/training/virtual_stages", "two model chunks per stage"},
      {{{"tensor_parallel", 2}}, "/training/pipeline_scatter_gather", "no scatter/gather of stage tensors"},
      {{{"tensor_parallel", 2}, {"sequence_parallel", true}}, "/training/sequence_parallel", "\"zb-v\" is modelled without"},
      {{{"overlap_grad_reduce", true}}, "/training/overlap_grad_reduce", "\"zb-v\" is modelled without"},
      {{{"pipeline_parallel", 1}}, "/training/pipeline_schedule", "needs pipeline_parallel > 1"},
  };
  for (const auto& c : cases) {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/dgx-a100-80g-ib.json");
    doc["points"] = json::array({doc["points"][0]});
    doc["points"][0]["training"].erase("pipeline_parallel");
    doc["training"]["pipeline_schedule"] = "zb-v";
    doc["training"].update(c.training);
    const ConfigError e = error_of(doc, "zbv");
    EXPECT_EQ(e.json_path(), c.path) << e.what();
    EXPECT_TRUE(contains(e.what(), c.says)) << e.what();
  }
}

TEST(ScenarioErrors, TorchForeachAdamwAndClipGradNormAreModelledInTheShardedSchedule) {
  const std::string file = "scenarios/p5-llama3-8b-torchtitan.json";
  const Scenario s = load_scenario(file);
  EXPECT_EQ(s.points.at(0).training.optimizer_implementation, plan::OptimizerImplementation::torch_foreach);
  EXPECT_TRUE(s.points.at(0).training.clip_grad_norm);
  auto torchtitan = [&] {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/p5.48xlarge.json");
    doc["points"].erase(1);  // the awsome FSDP point overrides the policy
    doc["training"].erase("checkpoint_policy");
    doc["training"]["activation_checkpointing"] = false;
    return doc;
  };
  {
    json doc = torchtitan();
    doc["training"]["schedule"] = "ddp";
    doc["training"]["precision"] = "amp";
    doc["training"].erase("clip_grad_norm");
    const ConfigError e = error_of(doc, "foreach-ddp");
    EXPECT_EQ(e.json_path(), "/training/optimizer_implementation") << e.what();
    EXPECT_TRUE(contains(e.what(), "schedule fsdp")) << e.what();
  }
  {
    json doc = torchtitan();
    doc["training"]["schedule"] = "ddp";
    doc["training"]["precision"] = "amp";
    doc["training"].erase("optimizer_implementation");
    const ConfigError e = error_of(doc, "clip-ddp");
    EXPECT_EQ(e.json_path(), "/training/clip_grad_norm") << e.what();
    EXPECT_TRUE(contains(e.what(), "schedule fsdp")) << e.what();
  }
  {
    json doc = torchtitan();
    doc["training"]["optimizer"] = "sgd";
    const ConfigError e = error_of(doc, "foreach-sgd");
    EXPECT_EQ(e.json_path(), "/training/optimizer_implementation") << e.what();
    EXPECT_TRUE(contains(e.what(), "AdamW")) << e.what();
  }
  {
    json doc = torchtitan();
    doc["training"]["clip_grad_norm"] = "yes";
    const ConfigError e = error_of(doc, "clip-type");
    EXPECT_EQ(e.json_path(), "/training/clip_grad_norm") << e.what();
  }
}

TEST(ScenarioErrors, ComposerTrainMetricsAreNamedCrossEntropyMetricsOfTheShardedSchedule) {
  EXPECT_EQ(load_scenario("scenarios/llmfoundry-fsdp-a100.json").points.at(0).training.composer_train_metrics, 2);
  const std::string file = "scenarios/p5-llama3-8b-torchtitan.json";
  EXPECT_EQ(load_scenario(file).points.at(0).training.composer_train_metrics, 0);
  auto fsdp = [&](const json& metrics) {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/p5.48xlarge.json");
    doc["points"].erase(1);
    doc["training"]["composer_train_metrics"] = metrics;
    return doc;
  };
  struct Case {
    json metrics;
    std::string key, path, expected;
  };
  const std::string at = "/training/composer_train_metrics";
  for (const Case& c : {Case{json::array({"LanguageCrossEntropy", "TokenAccuracy"}), "unknown", at + "/1", "LanguagePerplexity"},
                        Case{json::array({"LanguagePerplexity", "LanguagePerplexity"}), "repeat", at + "/1", "repeats"},
                        Case{json("LanguageCrossEntropy"), "not-array", at, "array"}}) {
    const ConfigError e = error_of(fsdp(c.metrics), c.key);
    EXPECT_EQ(e.json_path(), c.path) << c.key << ": " << e.what();
    EXPECT_TRUE(contains(e.what(), c.expected)) << e.what();
  }
  json ddp = fsdp(json::array({"LanguageCrossEntropy"}));
  ddp["training"]["schedule"] = "ddp";
  ddp["training"]["precision"] = "amp";
  ddp["training"].erase("clip_grad_norm");
  ddp["training"].erase("optimizer_implementation");
  ddp["training"].erase("checkpoint_policy");
  ddp["training"]["activation_checkpointing"] = false;
  const ConfigError e = error_of(ddp, "metrics-ddp");
  EXPECT_EQ(e.json_path(), "/training/composer_train_metrics") << e.what();
  EXPECT_TRUE(contains(e.what(), "schedule fsdp")) << e.what();
}

TEST(ScenarioErrors, SelectiveAttentionIsModelledInPtdP) {
  const std::string file = "scenarios/megatron-korthikanti.json";
  auto korthikanti = [&] {
    json doc = read_json_file(file);
    doc["topology"] = absolute("topologies/dgx-a100-80g-ib.json");
    return doc;
  };
  const Scenario s = load_scenario(file);
  for (const auto& p : s.points)
    EXPECT_EQ(p.training.checkpoint_policy, plan::CheckpointPolicy::selective_attention) << p.label;
  struct Case {
    const char* key;
    json value;
    const char* path;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"schedule", "zero3", "/training/checkpoint_policy", "PTD-P schedule only"},
      {"activation_checkpointing", false, "/training/checkpoint_policy", "enable activation_checkpointing"},
  };
  for (const auto& c : cases) {
    json doc = korthikanti();
    doc["training"][c.key] = c.value;
    const ConfigError e = error_of(doc, c.key);
    EXPECT_EQ(e.json_path(), c.path) << c.key << ": " << e.what();
    EXPECT_TRUE(contains(e.what(), c.expected)) << e.what();
  }
  // With fused attention Megatron-core checkpoints the kernel call (model/checkpointing.hpp).
  json fused = korthikanti();
  fused["training"]["flash_attention"] = true;
  EXPECT_NO_THROW((void)load_scenario(write(fused, temp_file("fused"))));
  // Without tensor or pipeline parallelism it is the data-parallel schedule: not modelled there.
  json doc = korthikanti();
  doc["training"]["sequence_parallel"] = false;
  doc["training"]["tensor_parallel"] = 1;
  const ConfigError e = error_of(doc, "tp1");
  EXPECT_EQ(e.json_path(), "/training/checkpoint_policy") << e.what();
  EXPECT_TRUE(contains(e.what(), "tensor_parallel or pipeline_parallel > 1")) << e.what();
}

}  // namespace
}  // namespace trainsim::scenario

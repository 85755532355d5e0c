// Streaming rate per memory-bound kernel class (device_profile.hpp, memory_bound_rate): measured
// samples of the framework's file, else of the kernel calibration, else the stream-copy rate;
// the kernel classes the model's operations carry; the trainsim.memory_bound_kernels/1 loader.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "model/compute_cost.hpp"
#include "model/device_profile.hpp"
#include "model/memory_bound_kernels.hpp"
#include "model/transformer.hpp"
#include "support/fixtures.hpp"

using namespace trainsim::model;
using trainsim::testing_support::config_error_of;
using trainsim::testing_support::round_number_device;

namespace {

std::string write_temp(const std::string& text, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

ElementwiseSample sample(const std::string& name, double bytes, double time) {
  ElementwiseSample s;
  s.name = name;
  s.bytes = bytes;
  s.time = time;
  return s;
}

/// The round-number device (0.8 TB/s achieved) with a calibration measuring a 2 TB/s copy and a
/// layer norm at 1 TB/s.
DeviceProfile calibrated_device() {
  DeviceProfile d = round_number_device();
  KernelCalibration c;
  c.memory_bandwidth = 2e12;
  c.elementwise = {sample("layer_norm", 1e9, 1e-3)};
  d.kernels = c;
  return d;
}

const Operation& op_named(const std::vector<Operation>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op;
  ADD_FAILURE() << "no operation " << name;
  return ops.front();
}

TransformerSpec small_gpt() {
  TransformerSpec s;
  s.hidden = 1024;
  s.heads = 16;
  s.ffn_hidden = 4096;
  s.seq_len = 512;
  s.vocab = 50304;
  s.layers = 1;
  return s;
}

const char* kValidFile = R"({"schema": "trainsim.memory_bound_kernels/1",
  "provenance": {"method": "measured", "source": "x", "date": "2026-11-22", "framework": "torch 9"},
  "kernels": [{"name": "layer_norm", "bytes": 4e8, "time_us": 1000},
              {"name": "softmax", "bytes": 1e8, "time_us": 1000, "note": "rows of 1024"}]})";

}  // namespace

TEST(MemoryBoundRate, WithoutSamplesEveryClassStreamsAtTheCopyRate) {
  const DeviceProfile d = round_number_device();
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, ""), 0.8e12);
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm"), 0.8e12);
}

TEST(MemoryBoundRate, CalibrationSampleSetsItsClassOthersFallBackToTheMeasuredCopy) {
  const DeviceProfile d = calibrated_device();
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm"), 1e12);
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm_bwd"), 2e12);  // no sample: copy rate
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, ""), 2e12);
}

TEST(MemoryBoundRate, SamplesOfOneClassPoolTrafficAndTime) {
  DeviceProfile d = calibrated_device();
  d.kernels->elementwise.push_back(sample("layer_norm", 3e9, 1e-3));
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm"), 4e9 / 2e-3);
}

TEST(MemoryBoundRate, FrameworkFileWinsAndIsTheOnlyPerClassSource) {
  DeviceProfile d = calibrated_device();
  d.kernels->elementwise.push_back(sample("gelu", 1e9, 2e-3));
  MemoryBoundKernels k;
  k.kernels = {sample("layer_norm", 1e9, 4e-3)};
  d.memory_bound_kernels = k;
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm"), 0.25e12);
  // The calibration's gelu is the project's own kernel, not the framework's: copy rate.
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "gelu"), 2e12);
}

TEST(OpDuration, MemoryBoundOpStreamsAtItsClassRate) {
  const DeviceProfile d = calibrated_device();
  const Operation norm = make_elementwise("layernorm_1", 1e9, 0, "layer_norm");
  const Operation plain = make_elementwise("residual", 1e9);
  EXPECT_NEAR(op_duration(norm, d), 1e-3 + 5e-6, 1e-15);
  EXPECT_NEAR(op_duration(plain, d), 0.5e-3 + 5e-6, 1e-15);
}

TEST(KernelClasses, LayerOpsNameTheKernelTheyRun) {
  const TransformerSpec s = small_gpt();
  const auto fwd = layer_forward_ops(s, 2);
  EXPECT_EQ(op_named(fwd, "layernorm_1").kernel, "layer_norm");
  EXPECT_EQ(op_named(fwd, "layernorm_2").kernel, "layer_norm");
  EXPECT_EQ(op_named(fwd, "softmax").kernel, "softmax");
  EXPECT_EQ(op_named(fwd, "attn_dropout").kernel, "dropout");
  EXPECT_EQ(op_named(fwd, "gelu").kernel, "gelu");
  EXPECT_EQ(op_named(fwd, "residual_1").kernel, "residual_add");
  EXPECT_EQ(op_named(fwd, "qkv").kernel, "");
  const auto bwd = layer_backward_ops(s, 2);
  EXPECT_EQ(op_named(bwd, "layernorm_1_bwd").kernel, "layer_norm_bwd");
  EXPECT_EQ(op_named(bwd, "softmax_bwd").kernel, "softmax_bwd");
  EXPECT_EQ(op_named(bwd, "attn_dropout_bwd").kernel, "dropout_bwd");
  EXPECT_EQ(op_named(bwd, "residual_2_bwd").kernel, "residual_add_bwd");
  EXPECT_EQ(optimizer_step_op(1e6).kernel, "adamw");
  EXPECT_EQ(gradient_accumulation_op(1e6).kernel, "");
}

TEST(KernelClasses, RmsNormIsNotALayerNormAndTheEmbeddingBackwardIsGeneric) {
  TransformerSpec s = small_gpt();
  s.norm = NormKind::rmsnorm;
  EXPECT_EQ(op_named(layer_forward_ops(s, 1), "rmsnorm_1").kernel, "rms_norm");
  const auto emb = embedding_forward_ops(s, 1);
  EXPECT_EQ(emb.front().kernel, "embedding");
  EXPECT_EQ(backward_of(emb).front().kernel, "");
}

TEST(MemoryBoundKernelsLoader, ReadsKernelsAndProvenance) {
  const auto k = load_memory_bound_kernels(write_temp(kValidFile, "mbk_valid.json"));
  EXPECT_EQ(k.framework, "torch 9");
  ASSERT_EQ(k.kernels.size(), 2u);
  EXPECT_EQ(k.kernels[1].name, "softmax");
  EXPECT_DOUBLE_EQ(k.kernels[0].time, 1e-3);
}

TEST(MemoryBoundKernelsLoader, BadInputNamesItsPath) {
  auto path_of_error = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return config_error_of(load_memory_bound_kernels, write_temp(text, "mbk_bad.json")).json_path();
  };
  const std::string f = kValidFile;
  EXPECT_EQ(path_of_error(f, R"("time_us": 1000,)", R"("time_us": 0,)"), "/kernels/1/time_us");
  EXPECT_EQ(path_of_error(f, R"("name": "softmax")", R"("name": "layer_norm")"), "/kernels/1/name");
  EXPECT_EQ(path_of_error(f, R"("framework": "torch 9")", R"("colour": "red")"), "/provenance/framework");
  EXPECT_EQ(path_of_error(f, R"("note": "rows of 1024")", R"("colour": "red")"), "/kernels/1/colour");
  EXPECT_EQ(path_of_error(f, R"(/1")", R"(/2")"), "/schema");
}

TEST(MemoryBoundKernelsLoader, ProfileEntryWithAnUnknownKeyNamesItsPath) {
  std::ifstream in("topologies/devices/h100-80gb.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("memory_bound_kernels": {"file": "../calibration/h100-sxm-pytorch-kernels.json")";
  ASSERT_NE(text.find(from), std::string::npos);
  // A copy beside the shipped file, so that the relative path still resolves.
  text.replace(text.find(from), from.size(), from + R"(, "colour": "red")");
  const std::string path = "topologies/devices/h100-80gb.mbk-test.json";
  std::ofstream(path) << text;
  const auto e = config_error_of(load_device_profile, path);
  std::remove(path.c_str());
  EXPECT_EQ(e.json_path(), "/memory_bound_kernels/colour");
}

TEST(MemoryBoundKernelsLoader, H100ProfileRunsPyTorchsMeasuredRates) {
  const auto d = load_device_profile("topologies/devices/h100-80gb.json");
  ASSERT_TRUE(d.memory_bound_kernels);
  EXPECT_EQ(d.memory_bound_kernels->framework, "torch 2.11.0+cu130");
  EXPECT_NEAR(memory_bound_rate(d, "layer_norm"), 268435456 / 117.65e-6, 1e3);
  EXPECT_NEAR(memory_bound_rate(d, "layer_norm_bwd"), 402653184 / 334.46e-6, 1e3);
  EXPECT_NEAR(memory_bound_rate(d, "adamw"), 939524096 / 358.4e-6, 1e3);
  EXPECT_DOUBLE_EQ(memory_bound_rate(d, "rms_norm"), achieved_memory_bandwidth(d));
}

TEST(MemoryBoundKernelsLoader, A100AndGaudiProfilesHaveNoPerClassRates) {
  for (const char* f : {"topologies/devices/a100-40gb.json", "topologies/devices/a100-80gb.json",
                        "topologies/devices/gaudi1.json"}) {
    const auto d = load_device_profile(f);
    EXPECT_DOUBLE_EQ(memory_bound_rate(d, "layer_norm"), achieved_memory_bandwidth(d)) << f;
  }
}

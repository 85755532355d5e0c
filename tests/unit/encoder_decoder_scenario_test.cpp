// Reading an encoder-decoder (architecture "t5") from a scenario: its defaults, and the errors
// for fields it does not take or plans it is not modelled under, each naming the JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "model/encoder_decoder.hpp"
#include "scenario/scenario.hpp"
#include "support/fixtures.hpp"

namespace trainsim::scenario {
namespace {

using nlohmann::json;

/// fsdp-paper-a100.json's first point with T5-11B as the model.
json t5_doc() {
  json doc = read_json_file("scenarios/fsdp-paper-a100.json");
  doc["topology"] = std::filesystem::absolute("topologies/fsdp-paper-a100-80g-roce.json").string();
  doc["model"] = {{"architecture", "t5"}, {"name", "T5-11B"}, {"layers", 24},    {"hidden", 1024},
                  {"heads", 128},         {"head_dim", 128},  {"ffn_hidden", 65536}, {"vocab", 32128},
                  {"seq_len", 512}};
  doc["points"] = json::array({doc["points"][0]});
  doc["points"][0].erase("reference_tflops_per_accelerator_at_least");
  return doc;
}

std::string write(const json& doc, const std::string& kind) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const std::string file = testing::TempDir() + "encoder_decoder_" + info->name() + "_" + kind + ".json";
  std::ofstream(file) << doc.dump(2);
  return file;
}

ConfigError error_of(const json& doc, const std::string& kind) {
  return testing_support::config_error_of([](const std::string& f) { return load_scenario(f); }, write(doc, kind));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(EncoderDecoderScenario, T5DefaultsToTwoEqualStacksOfTheT5Block) {
  const Scenario s = load_scenario(write(t5_doc(), "ok"));
  const model::TransformerSpec& m = s.points[0].model;
  EXPECT_TRUE(model::is_encoder_decoder(m));
  EXPECT_EQ(m.decoder_layers, 24);
  EXPECT_EQ(m.decoder_seq_len, 512);
  EXPECT_EQ(m.mlp, model::MlpKind::relu);
  EXPECT_EQ(m.norm, model::NormKind::rmsnorm);
  EXPECT_FALSE(m.bias);
  EXPECT_FALSE(m.learned_positions);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_TRUE(m.relative_position_bias);
  EXPECT_DOUBLE_EQ(model::parameter_count(m), 11307321344.0);
}

TEST(EncoderDecoderScenario, DecoderFieldsAndHeadDimBelongToT5) {
  json doc = t5_doc();
  doc["model"]["architecture"] = "gpt";
  doc["model"].erase("head_dim");
  doc["model"]["decoder_seq_len"] = 128;
  ConfigError e = error_of(doc, "gpt");
  EXPECT_EQ(e.json_path(), "/model/decoder_seq_len");
  EXPECT_TRUE(contains(e.what(), "encoder-decoder")) << e.what();
  doc = t5_doc();
  doc["model"]["architecture"] = "gpt";
  e = error_of(doc, "gpt_head_dim");
  EXPECT_EQ(e.json_path(), "/model/head_dim");
  EXPECT_TRUE(contains(e.what(), "t5")) << e.what();
}

TEST(EncoderDecoderScenario, T5FixesItsMasksAndNeedsPositiveSizes) {
  json doc = t5_doc();
  doc["model"]["causal"] = true;
  ConfigError e = error_of(doc, "causal");
  EXPECT_EQ(e.json_path(), "/model/causal");
  EXPECT_TRUE(contains(e.what(), "fixed for an encoder-decoder")) << e.what();
  doc = t5_doc();
  doc["model"]["decoder_layers"] = 0;
  EXPECT_EQ(error_of(doc, "layers").json_path(), "/model/decoder_layers");
  doc = t5_doc();
  doc["model"]["mlp"] = "relu2";
  EXPECT_EQ(error_of(doc, "mlp").json_path(), "/model/mlp");
}

TEST(EncoderDecoderScenario, IsModelledUnderFsdpWithoutModelParallelismOrFusedAttention) {
  json doc = t5_doc();
  doc["training"]["schedule"] = "ddp";
  doc["training"]["precision"] = "amp";
  for (const char* fsdp_only : {"fsdp_implementation", "fsdp_backward_prefetch"}) doc["training"].erase(fsdp_only);
  ConfigError e = error_of(doc, "ddp");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "sharded schedule only")) << e.what();
  doc = t5_doc();
  doc["training"]["tensor_parallel"] = 2;
  e = error_of(doc, "tp");
  EXPECT_EQ(e.json_path(), "/points/0/training");
  EXPECT_TRUE(contains(e.what(), "without tensor, pipeline or context parallelism")) << e.what();
  doc = t5_doc();
  doc["training"]["flash_attention"] = true;
  e = error_of(doc, "flash");
  EXPECT_TRUE(contains(e.what(), "position bias")) << e.what();
}

}  // namespace
}  // namespace trainsim::scenario

// Strict JSON reading (core/json_reader.hpp): every error is a ConfigError that names the file
// and the JSON path, and unknown keys are caught by finish().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace trainsim {
namespace {

using nlohmann::json;

const std::string kFile = "config.json";  // only used in messages: nothing is read from disk

/// Runs `read`, expects a ConfigError and returns it (an empty one if nothing was thrown).
ConfigError error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("", "", "");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path file = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(file) << text;
  return file.string();
}

TEST(ConfigError, WhatReadsFileAtPathMessage) {
  const ConfigError e("a.json", "/x/0", "bad");
  EXPECT_STREQ(e.what(), "a.json: at /x/0: bad");
  EXPECT_EQ(e.file(), "a.json");
  EXPECT_EQ(e.json_path(), "/x/0");
  EXPECT_STREQ(ConfigError("a.json", "", "bad").what(), "a.json: at /: bad");
}

TEST(JsonObject, ReadsEveryKindOfValue) {
  const json doc = json::parse(R"({"s": "x", "n": 2.5, "i": 3, "b": true, "bw": "100Gbps",
      "lat": "0us", "c": "ring", "o": {"k": 1}, "a": [{"k": 1}, {"k": 2}], "sa": ["p", "q"],
      "ia": [1, 2]})");
  JsonObject o = root_object(doc, kFile);
  EXPECT_EQ(o.string("s"), "x");
  EXPECT_DOUBLE_EQ(o.number("n"), 2.5);
  EXPECT_EQ(o.positive_integer("i"), 3);
  EXPECT_TRUE(o.boolean_or("b", false));
  EXPECT_DOUBLE_EQ(o.quantity("bw", Dimension::bandwidth), 100e9 / 8);
  EXPECT_DOUBLE_EQ(o.non_negative_quantity("lat", Dimension::seconds), 0.0);
  EXPECT_EQ(o.choice("c", {"ring", "direct"}), "ring");
  EXPECT_EQ(o.object("o").path(), "/o");
  const auto items = o.object_array("a");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].path(), "/a/1");
  EXPECT_EQ(o.string_array("sa"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(o.integer_array("ia"), (std::vector<long>{1, 2}));
  EXPECT_NO_THROW(o.finish());
}

TEST(JsonObject, FallbacksApplyOnlyToMissingKeysAndCountAsRead) {
  const json doc = json::parse(R"({"n": 4})");
  JsonObject o = root_object(doc, kFile);
  EXPECT_EQ(o.string_or("s", "dflt"), "dflt");
  EXPECT_DOUBLE_EQ(o.number_or("n", 1.0), 4.0);
  EXPECT_EQ(o.positive_integer_or("i", 7), 7);
  EXPECT_FALSE(o.boolean_or("b", false));
  EXPECT_DOUBLE_EQ(o.quantity_or("bw", Dimension::bandwidth, 5.0), 5.0);
  EXPECT_EQ(o.choice_or("c", {"ring"}, "ring"), "ring");
  EXPECT_NO_THROW(o.finish());
}

TEST(JsonObject, MissingKeyNamesFileAndPath) {
  const json doc = json::parse(R"({"node": {}})");
  JsonObject root = root_object(doc, kFile);
  JsonObject node = root.object("node");
  const ConfigError e = error_of([&] { (void)node.string("name"); });
  EXPECT_EQ(e.file(), kFile);
  EXPECT_EQ(e.json_path(), "/node/name");
  EXPECT_STREQ(e.what(), "config.json: at /node/name: missing required key");
}

TEST(JsonObject, WrongTypeIsRejected) {
  const json doc = json::parse(R"({"s": 1, "n": "1", "i": 1.5, "z": 0, "b": "yes", "o": [],
      "a": {}, "sa": [1], "ia": []})");
  JsonObject o = root_object(doc, kFile);
  EXPECT_TRUE(contains(error_of([&] { (void)o.string("s"); }).what(), "expected a string, got 1"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.number("n"); }).what(), "expected a number"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.positive_integer("i"); }).what(),
                       "expected a positive integer, got 1.5"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.positive_integer("z"); }).what(),
                       "expected a positive integer, got 0"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.boolean_or("b", true); }).what(),
                       "expected true or false"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.object("o"); }).what(), "expected an object"));
  EXPECT_TRUE(contains(error_of([&] { (void)o.object_array("a"); }).what(), "array of objects"));
  EXPECT_EQ(error_of([&] { (void)o.string_array("sa"); }).json_path(), "/sa/0");
  EXPECT_TRUE(contains(error_of([&] { (void)o.integer_array("ia"); }).what(), "non-empty"));
}

TEST(JsonObject, UnknownKeyIsReportedByFinish) {
  const json doc = json::parse(R"({"name": "a", "colour": "blue"})");
  JsonObject o = root_object(doc, kFile);
  (void)o.string("name");
  const ConfigError e = error_of([&] { o.finish(); });
  EXPECT_EQ(e.json_path(), "/colour");
  EXPECT_STREQ(e.what(), "config.json: at /colour: unknown key \"colour\"");
}

TEST(JsonObject, AllowedKeysAreNotUnknown) {
  const json doc = json::parse(R"({"note": "free text"})");
  JsonObject o = root_object(doc, kFile);
  o.allow("note");
  EXPECT_NO_THROW(o.finish());
}

TEST(JsonObject, BadUnitNamesThePathInsideAnArray) {
  const json doc = json::parse(R"({"node": {"links": [{}, {}, {}, {"bandwidth": "16GB"}]}})");
  JsonObject root = root_object(doc, kFile);
  auto links = root.object("node").object_array("links");
  const ConfigError e = error_of([&] { (void)links[3].quantity("bandwidth", Dimension::bandwidth); });
  EXPECT_EQ(e.json_path(), "/node/links/3/bandwidth");
  EXPECT_TRUE(contains(e.what(), "config.json: at /node/links/3/bandwidth: bad unit")) << e.what();
  EXPECT_TRUE(contains(e.what(), "\"100Gbps\"")) << "accepted spellings are listed: " << e.what();
}

TEST(JsonObject, QuantityMustBeAStringWithItsUnit) {
  const json doc = json::parse(R"({"bandwidth": 12.5e9})");
  JsonObject o = root_object(doc, kFile);
  const ConfigError e = error_of([&] { (void)o.quantity("bandwidth", Dimension::bandwidth); });
  EXPECT_TRUE(contains(e.what(), "with its unit as a string")) << e.what();
}

TEST(JsonObject, ZeroBandwidthIsRejectedZeroLatencyIsNot) {
  const json doc = json::parse(R"({"bandwidth": "0Gbps", "neg": "-1GB/s", "latency": "0us"})");
  JsonObject o = root_object(doc, kFile);
  const ConfigError zero = error_of([&] { (void)o.quantity("bandwidth", Dimension::bandwidth); });
  EXPECT_EQ(zero.json_path(), "/bandwidth");
  EXPECT_TRUE(contains(zero.what(), "positive")) << zero.what();
  EXPECT_TRUE(contains(zero.what(), "\"0Gbps\"")) << zero.what();
  EXPECT_TRUE(contains(error_of([&] { (void)o.non_negative_quantity("neg", Dimension::bandwidth); })
                           .what(),
                       "non-negative"));
  EXPECT_DOUBLE_EQ(o.non_negative_quantity("latency", Dimension::seconds), 0.0);
}

TEST(JsonObject, ChoiceListsTheAcceptedValues) {
  const json doc = json::parse(R"({"algorithm": "tree"})");
  JsonObject o = root_object(doc, kFile);
  const ConfigError e = error_of([&] { (void)o.choice("algorithm", {"ring", "direct"}); });
  EXPECT_TRUE(contains(e.what(), "unknown value \"tree\"; expected one of: ring, direct")) << e.what();
}

TEST(JsonObject, MissingChoiceListsTheAcceptedValuesToo) {
  // linear_precision "fp8" without fp8_implementation used to say only "missing required key".
  const json doc = json::parse(R"({})");
  JsonObject o = root_object(doc, kFile);
  const ConfigError e = error_of([&] { (void)o.choice("fp8_implementation", {"transformer-engine", "torchao"}); });
  EXPECT_EQ(e.json_path(), "/fp8_implementation");
  EXPECT_TRUE(contains(e.what(), "missing required key; expected one of: transformer-engine, torchao")) << e.what();
}

TEST(JsonObject, SchemaVersionAndKindMustBeTheExpectedOnes) {
  const json doc = json::parse(R"({"schema_version": 2, "kind": "nccl_fabric"})");
  JsonObject o = root_object(doc, kFile);
  EXPECT_STREQ(error_of([&] { o.require_schema_version(1); }).what(),
               "config.json: at /schema_version: expected 1");
  EXPECT_NO_THROW(o.require_schema_version(2));
  EXPECT_STREQ(error_of([&] { o.require_kind("nccl_protocols"); }).what(),
               "config.json: at /kind: expected \"nccl_protocols\"");
  EXPECT_NO_THROW(o.require_kind("nccl_fabric"));
  EXPECT_NO_THROW(o.finish()) << "both keys count as read";
}

TEST(JsonObject, RootMustBeAnObject) {
  const json doc = json::parse("[1, 2]");
  EXPECT_TRUE(contains(error_of([&] { (void)root_object(doc, kFile); }).what(), "top level"));
}

TEST(ReadJsonFile, ParsesAFile) {
  const std::string file = write_temp("json_reader_ok.json", R"({"a": [1, 2]})");
  EXPECT_EQ(read_json_file(file), json::parse(R"({"a": [1, 2]})"));
}

TEST(ReadJsonFile, MissingFile) {
  const std::string file = testing::TempDir() + "no-such-file.json";
  const ConfigError e = error_of([&] { (void)read_json_file(file); });
  EXPECT_EQ(e.file(), file);
  EXPECT_EQ(std::string(e.what()), file + ": at /: cannot open file");
}

TEST(ReadJsonFile, MalformedJson) {
  const std::string file = write_temp("json_reader_malformed.json", "{\"a\": [1, 2,\n");
  const ConfigError e = error_of([&] { (void)read_json_file(file); });
  EXPECT_EQ(e.file(), file);
  EXPECT_TRUE(contains(e.what(), file + ": at /: malformed JSON")) << e.what();
}

}  // namespace
}  // namespace trainsim

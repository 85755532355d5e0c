// `trainsim collective` end to end: nccl-tests columns, the two-node tree regime, --compare
// against a shipped reference, and bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CliRun {
  int status = -1;
  std::string out;  ///< stdout alone: the JSON / CSV a tool would parse
  std::string err;  ///< stderr: the error messages (and, under ASan, SimGrid's stack warnings)
};

std::string slurp(std::FILE* f) {
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  return text;
}

/// Runs `$TRAINSIM_BIN args`, stdout and stderr kept apart so a sanitizer build's warnings on
/// stderr cannot break the parsing of stdout.
CliRun trainsim(const std::string& args) {
  const char* bin = std::getenv("TRAINSIM_BIN");
  if (bin == nullptr) {
    ADD_FAILURE() << "TRAINSIM_BIN is not set: run through ctest";
    return {};
  }
  CliRun r;
  const std::string err_file = testing::TempDir() + "collective_cli_stderr.txt";
  FILE* pipe = popen(("'" + std::string(bin) + "' " + args + " 2>'" + err_file + "'").c_str(), "r");
  if (pipe == nullptr) return r;
  r.out = slurp(pipe);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (std::FILE* f = std::fopen(err_file.c_str(), "r")) {
    r.err = slurp(f);
    std::fclose(f);
  }
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CollectiveCli, TwoP5NodesAllReduceAboveTheRingLimit) {
  // A ring moves 2(n-1)/n S out of every node, so its busbw cannot pass the 400 GB/s EFA line
  // rate of a p5 (32 x 100 Gbps); the tree moves S, so busbw = 2(n-1)/n S / t can.
  const auto r = trainsim("collective --topology topologies/p5.48xlarge.json --nodes 2 "
                          "--sizes 8G --format json");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["nodes"], 2);
  EXPECT_EQ(row["ranks"], 16);
  EXPECT_EQ(row["size_bytes"], 8589934592.0);
  EXPECT_NE(row["algorithm"].get<std::string>().find("tree"), std::string::npos);
  EXPECT_GT(row["busbw_gbps"].get<double>(), 400.0);
  // busbw = algbw x 2(n-1)/n = algbw x 1.875, algbw = S / t.
  EXPECT_NEAR(row["busbw_gbps"].get<double>(), row["algbw_gbps"].get<double>() * 1.875, 1e-9);
  EXPECT_NEAR(row["algbw_gbps"].get<double>(), 8589934592.0 / row["time_us"].get<double>() / 1e3,
              1e-9);
}

TEST(CollectiveCli, ForcedRingStaysBelowTheLineRate) {
  const auto r = trainsim("collective --topology topologies/p5.48xlarge.json --nodes 2 "
                          "--sizes 8G --algo ring --format csv");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ",ring,Simple")) << r.out;
  const auto j = nlohmann::json::parse(
      trainsim("collective --topology topologies/p5.48xlarge.json --nodes 2 --sizes 8G --algo "
               "ring --format json").out);
  EXPECT_LT(j["rows"][0]["busbw_gbps"].get<double>(), 400.0);
}

TEST(CollectiveCli, SizesDoubleBetweenMinAndMax) {
  const auto j = nlohmann::json::parse(
      trainsim("collective --topology topologies/p4de.24xlarge.json --sizes 1K:8K --format json")
          .out);
  ASSERT_EQ(j["rows"].size(), 4u);  // 1K, 2K, 4K, 8K
  EXPECT_EQ(j["rows"][3]["size_bytes"], 8192.0);
  EXPECT_EQ(j["rows"][3]["count"], 2048.0);  // float32 elements
}

TEST(CollectiveCli, CompareMarksFittedPointsAndReportsBands) {
  const std::string args = "collective --topology topologies/p5.48xlarge.json --compare "
                           "validate/reference/azure-nd-h100-v5.json";
  const auto r = trainsim(args);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "ref busbw")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 - 16 MiB")) << r.out;
  EXPECT_TRUE(contains(r.out, "all >= 1 MiB")) << r.out;
  const auto j = nlohmann::json::parse(trainsim(args + " --format json").out);
  int fitted = 0;
  for (const auto& row : j["rows"]) fitted += row["fitted"].get<bool>() ? 1 : 0;
  EXPECT_EQ(fitted, 3);  // nccl-nvswitch-h100.json fits 3 values, each to one row
  EXPECT_EQ(trainsim(args).out, r.out);  // byte-identical
}

TEST(CollectiveCli, BadInputExitsTwo) {
  auto r = trainsim("collective --topology topologies/p5.48xlarge.json --sizes 1M --op nope");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown --op")) << r.err;
  r = trainsim("collective --topology topologies/p5.48xlarge.json --sizes 1Q");
  EXPECT_EQ(r.status, 2);
  const std::string file = testing::TempDir() + "collective_cli_bad_reference.json";
  std::ofstream(file) << R"({"schema": "trainsim.collective_measurements/1",
    "provenance": {"method": "published", "source": "x", "date": "2026-01-01"},
    "rows": [{"op": "all_reduce", "nodes": 1, "ranks": 8, "size_bytes": 1024, "busbw_gbps": 1,
              "colour": "red"}]})";
  r = trainsim("collective --topology topologies/p5.48xlarge.json --compare " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "/rows/0/colour")) << r.err;
}

}  // namespace

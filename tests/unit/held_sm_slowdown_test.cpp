// What held SMs take of an accelerator's arithmetic (model/held_sm_slowdown.hpp): the
// proportional share without a measurement, the measured slowdown interpolated with one, and
// the device profile's "held_sm_slowdown" loader.
#include "model/held_sm_slowdown.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "model/device_profile.hpp"
#include "support/fixtures.hpp"

using namespace trainsim;
using namespace trainsim::model;

namespace {

const HeldSmSlowdown kCurve{{{4, 1.25}, {16, 1.5}}};

TEST(HeldSmFraction, WithoutPointsItIsTheHeldShare) {
  EXPECT_DOUBLE_EQ(held_sm_fraction({}, 108, 27), 0.25);
  EXPECT_DOUBLE_EQ(held_sm_fraction({}, 108, 0), 0);
  EXPECT_DOUBLE_EQ(held_sm_fraction({}, 108, 200), 107.0 / 108);  // one SM is always left
}

TEST(HeldSmFraction, AtAPointComputeRunsAtOneOverItsSlowdown) {
  EXPECT_DOUBLE_EQ(held_sm_fraction(kCurve, 132, 4), 1 - 1 / 1.25);  // 0.2, not 4/132
  EXPECT_DOUBLE_EQ(held_sm_fraction(kCurve, 132, 16), 1 - 1 / 1.5);
}

TEST(HeldSmFraction, BetweenPointsTheSlowdownIsInterpolatedLinearly) {
  // From slowdown 1 at 0 held: 2 SMs -> 1.125; 10 SMs: halfway from 1.25 to 1.5 -> 1.375.
  EXPECT_NEAR(held_sm_fraction(kCurve, 132, 2), 1 - 1 / 1.125, 1e-12);
  EXPECT_NEAR(held_sm_fraction(kCurve, 132, 10), 1 - 1 / 1.375, 1e-12);
}

TEST(HeldSmFraction, AboveTheLastPointTheFurtherSmsAddTheirShare) {
  // 24 held: the last point's 1/3 plus 8 more of 132 SMs.
  EXPECT_NEAR(held_sm_fraction(kCurve, 132, 24), 1 - 1 / 1.5 + 8.0 / 132, 1e-12);
  EXPECT_DOUBLE_EQ(held_sm_fraction(kCurve, 132, 131), 131.0 / 132);  // capped: one SM left
  EXPECT_DOUBLE_EQ(held_sm_fraction(kCurve, 132, 0), 0);
}

TEST(HeldSmFraction, H100MeasuredPointsHoldFarMoreThanTheirShareOfFewSms) {
  const DeviceProfile d = load_device_profile("topologies/devices/h100-80gb.json");
  ASSERT_EQ(d.sm_count, 132);
  ASSERT_FALSE(d.held_sm_slowdown.points.empty());
  // validate/derive_held_sm_slowdown.py: 1.073 beside 1 SM, 1.332 beside 32.
  EXPECT_NEAR(held_sm_fraction(d.held_sm_slowdown, 132, 1), 1 - 1 / 1.073, 1e-12);
  EXPECT_NEAR(held_sm_fraction(d.held_sm_slowdown, 132, 32), 1 - 1 / 1.332, 1e-12);
  EXPECT_GT(held_sm_fraction(d.held_sm_slowdown, 132, 1), 8.0 / 132);
}

TEST(HeldSmFraction, ProfilesWithoutAMeasurementKeepTheShare) {
  EXPECT_TRUE(
      load_device_profile("topologies/devices/a100-40gb.json").held_sm_slowdown.points.empty());
  EXPECT_TRUE(
      load_device_profile("topologies/devices/a100-80gb.json").held_sm_slowdown.points.empty());
}

// ---- The loader ------------------------------------------------------------------------------

/// gaudi1.json (no files beside it) with 132 SMs and `points` as its held_sm_slowdown.
std::string profile_with(const nlohmann::json& points, bool sm_count = true) {
  nlohmann::json doc = read_json_file("topologies/devices/gaudi1.json");
  if (sm_count) doc["sm_count"] = {{"value", 132}, {"source", "test"}};
  doc["held_sm_slowdown"] = {{"points", points}, {"source", "test"}};
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const std::string file = testing::TempDir() + "held_sm_" + info->name() + ".json";
  std::ofstream(file) << doc.dump(2);
  return file;
}

nlohmann::json point(int sms, double slowdown) { return {{"sms", sms}, {"slowdown", slowdown}}; }

ConfigError load_error(const std::string& file) {
  return testing_support::config_error_of(
      [](const std::string& f) { return load_device_profile(f); }, file);
}

void expect_error(const std::string& file, const std::string& path, const std::string& words) {
  const ConfigError e = load_error(file);
  EXPECT_EQ(e.file(), file);
  EXPECT_EQ(e.json_path(), path);
  EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
}

TEST(HeldSmSlowdownLoader, ReadsItsPoints) {
  const DeviceProfile d =
      load_device_profile(profile_with(nlohmann::json::array({point(1, 1.07), point(32, 1.33)})));
  ASSERT_EQ(d.held_sm_slowdown.points.size(), 2u);
  EXPECT_EQ(d.held_sm_slowdown.points[1].sms, 32);
  EXPECT_DOUBLE_EQ(d.held_sm_slowdown.points[1].slowdown, 1.33);
}

TEST(HeldSmSlowdownLoader, RejectsSmCountsNotStrictlyIncreasing) {
  expect_error(profile_with(nlohmann::json::array({point(4, 1.1), point(4, 1.2)})),
               "/held_sm_slowdown/points/1/sms", "strictly increasing");
}

TEST(HeldSmSlowdownLoader, RejectsASpeedup) {
  expect_error(profile_with(nlohmann::json::array({point(4, 0.9)})),
               "/held_sm_slowdown/points/0/slowdown", "between 1 and 100");
}

TEST(HeldSmSlowdownLoader, RejectsASlowdownThatFallsWithMoreSms) {
  expect_error(profile_with(nlohmann::json::array({point(4, 1.2), point(8, 1.1)})),
               "/held_sm_slowdown/points/1/slowdown", "no smaller");
}

TEST(HeldSmSlowdownLoader, RejectsAllTheDevicesSms) {
  expect_error(profile_with(nlohmann::json::array({point(132, 2.0)})),
               "/held_sm_slowdown/points/0/sms", "fewer held SMs");
}

TEST(HeldSmSlowdownLoader, RejectsNoPoints) {
  expect_error(profile_with(nlohmann::json::array()), "/held_sm_slowdown/points",
               "at least one point");
}

TEST(HeldSmSlowdownLoader, NeedsTheProfilesSmCount) {
  expect_error(profile_with(nlohmann::json::array({point(4, 1.2)}), false),
               "/held_sm_slowdown/points", "sm_count");
}

}  // namespace

// `trainsim sweep` end to end: outputs of a nodes x micro-batch sweep, agreement with
// `trainsim run`, resuming after a kill, a missing --set path (exit 2), and the same sweep over
// 2 MPI ranks (skipped, visibly, in builds without MPI).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace trainsim::testing_support;

const std::string kP4d = "scenarios/p4d-bert-large-ddp.json";
const std::string kAxes = " --set nodes=1,2,4 --set training.micro_batch=32,64";

std::string fresh_dir(const std::string& suffix) {
  const std::string dir = test_temp_path(suffix);
  fs::remove_all(dir);
  return dir;
}

/// results.csv without its last column (sim_wall_s, the one measured value).
std::string csv_without_wall_time(const std::string& dir) {
  std::istringstream in(read_text_file(dir + "/results.csv"));
  std::string out;
  for (std::string line; std::getline(in, line);) out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

TEST(SweepCli, WritesCsvJsonAndPlotAgreeingWithRun) {
  const std::string dir = fresh_dir("_out");
  const CommandRun r = run_shell(trainsim_bin() + " sweep " + kP4d + kAxes + " --jobs 2 --out '" + dir + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("[6/6]"), std::string::npos) << "one progress line per point: " << r.err;
  const json doc = json::parse(read_text_file(dir + "/results.json"));
  ASSERT_EQ(doc.at("points").size(), 3u * 2);  // 3 node counts x 2 micro-batches
  EXPECT_EQ(doc.at("points_total"), 6);
  // Sweep order: nodes outermost; the point (nodes=4, micro_batch=64) is the last one.
  const json& last = doc.at("points")[5];
  EXPECT_EQ(last.at("nodes"), 4);
  EXPECT_EQ(last.at("training.micro_batch"), "64");
  // The scenario itself is micro_batch 64 on 1, 2, 4, 8 nodes: the same simulation as `run`.
  const CommandRun run = run_shell(trainsim_bin() + " run " + kP4d + " --format json");
  ASSERT_EQ(run.status, 0) << run.err;
  const json run_points = json::parse(run.out).at("points");
  EXPECT_EQ(last.at("samples_per_s"), run_points[2].at("samples_per_s"));
  EXPECT_EQ(last.at("scaling_efficiency"), run_points[2].at("scaling_efficiency"));
  EXPECT_EQ(std::count_if(doc.at("points").begin(), doc.at("points").end(),
                          [](const json& p) { return p.at("scaling_efficiency") == 1.0; }),
            2);  // the 1-node point of each micro-batch is its own baseline
  const std::string csv = read_text_file(dir + "/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6);
  const std::string svg = read_text_file(dir + "/plot.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("training.micro_batch=64"), std::string::npos) << "a series per micro-batch";
}

TEST(SweepCli, AKilledSweepResumesWithoutRedoingFinishedPoints) {
  const std::string full = fresh_dir("_full");
  ASSERT_EQ(run_shell(trainsim_bin() + " sweep " + kP4d + kAxes + " --out '" + full + "'").status, 0);
  // What a kill after two points leaves: the manifest, two lines and a third cut short.
  const std::string killed = fresh_dir("_killed");
  fs::create_directories(killed);
  fs::copy_file(full + "/sweep.json", killed + "/sweep.json");
  std::istringstream lines(read_text_file(full + "/points.jsonl"));
  std::string l1, l2, l3;
  std::getline(lines, l1);
  std::getline(lines, l2);
  std::getline(lines, l3);
  std::ofstream(killed + "/points.jsonl") << l1 << "\n" << l2 << "\n" << l3.substr(0, l3.size() / 2);
  const CommandRun r = run_shell(trainsim_bin() + " sweep " + kP4d + kAxes + " --out '" + killed + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("2 already in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4 simulated, 2 resumed"), std::string::npos) << r.err;
  EXPECT_EQ(csv_without_wall_time(killed), csv_without_wall_time(full));
  // A third run has nothing left to do.
  const CommandRun again = run_shell(trainsim_bin() + " sweep " + kP4d + kAxes + " --out '" + killed + "'");
  EXPECT_NE(again.err.find("0 simulated, 6 resumed"), std::string::npos) << again.err;
}

TEST(SweepCli, AMissingPathExitsTwoNamingIt) {
  const CommandRun r = run_shell(trainsim_bin() + " sweep " + kP4d +
                                 " --set training.micro_bach=8 --out '" + fresh_dir("_out") + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("p4d-bert-large-ddp.json: at /training/micro_bach"), std::string::npos) << r.err;
  const CommandRun bad_value = run_shell(trainsim_bin() + " sweep " + kP4d +
                                         " --set training.micro_batch=0 --out '" + fresh_dir("_o2") + "'");
  EXPECT_EQ(bad_value.status, 2) << "the scenario loader checks swept values: " << bad_value.err;
  EXPECT_EQ(run_shell(trainsim_bin() + " sweep " + kP4d).status, 2) << "no --set";
  EXPECT_EQ(run_shell(trainsim_bin() + " sweep " + kP4d + " --set nodes=1 --jobs 0").status, 2);
}

TEST(SweepMpi, TwoRanksShareThePointsAndRankZeroWritesThem) {
#ifndef TRAINSIM_MPIEXEC
  GTEST_SKIP() << "built without MPI (CMake found no MPI; CI installs OpenMPI)";
#else
  const char* mpiexec = TRAINSIM_MPIEXEC;
  const std::string local = fresh_dir("_local");
  ASSERT_EQ(run_shell(trainsim_bin() + " sweep " + kP4d + kAxes + " --out '" + local + "'").status, 0);
  const std::string dir = fresh_dir("_mpi");
  // As root (CI) mpirun needs --allow-run-as-root; 2 ranks on 2 cores need --oversubscribe.
  // ASAN_OPTIONS=detect_leaks=0: in the sanitizer build OpenMPI's own allocations (libmpi,
  // libopen-pal and its dlopen'd components) are still held at exit and LeakSanitizer fails the
  // ranks; the sweep's own code is leak-checked by the SweepCli tests above, without MPI.
  const CommandRun r = run_shell("ASAN_OPTIONS=detect_leaks=0 '" + std::string(mpiexec) +
                                 "' --allow-run-as-root --oversubscribe -n 2 " + trainsim_bin() +
                                 " sweep " + kP4d + kAxes + " --out '" + dir + "'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 1,"), std::string::npos) << "rank 1 simulated some points: " << r.err;
  EXPECT_NE(r.err.find("6 simulated"), std::string::npos) << r.err;
  EXPECT_EQ(csv_without_wall_time(dir), csv_without_wall_time(local));
#endif
}

}  // namespace

// `trainsim sweep`: the cartesian product of --set values over a scenario, each point simulated
// in its own process, locally (--jobs) or over MPI ranks; results and a plot in --out.
#include <iostream>
#include <optional>
#include <stdexcept>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "sweep/mpi_dispatch.hpp"
#include "sweep/sweep_runner.hpp"

namespace trainsim::cli {

const char* const kSweepUsage =
    "trainsim sweep SCENARIO --set PATH=V1,V2,... [--set ...] [--jobs N] [--out DIR]\n"
    "  simulate every combination of the --set values (cartesian product) and every point of\n"
    "  the scenario; each simulation runs in its own process\n"
    "  --set   PATH is a dot-separated path into the scenario file (training.micro_batch,\n"
    "          storage.capacity, points.0.nodes) that must exist there, or `nodes` (replaces the\n"
    "          points by one point of that many nodes); values are JSON (4, true) or strings\n"
    "          (1.2TiB). The first --set path is the plot's x axis\n"
    "  --jobs  simulations at once on this machine (default 1; per rank under MPI)\n"
    "  --out   results folder (default sweep-out): results.csv, results.json, plot.svg,\n"
    "          points.jsonl (one line per finished point: a rerun with the same folder resumes)\n"
    "  under `mpirun -n K trainsim sweep ...` rank 0 hands points out to all K ranks as they\n"
    "  ask for work and writes the results\n";

int sweep_command(const std::vector<std::string>& args) {
  std::string scenario_file;
  sweep::SweepOptions options;
  std::vector<sweep::Axis> axes;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--set") {
      try {
        axes.push_back(sweep::parse_axis(cursor.value("--set")));
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    } else if (a == "--jobs") {
      const std::string v = cursor.value("--jobs");
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 1)
        throw UsageError("--jobs must be a positive integer, not \"" + v + "\"");
      options.jobs = std::stoi(v);
    } else if (a == "--out") {
      options.out_dir = cursor.value("--out");
    } else {
      take_scenario_operand(a, scenario_file);
    }
  }
  if (scenario_file.empty()) throw UsageError("sweep needs a SCENARIO file");
  if (axes.empty()) throw UsageError("sweep needs at least one --set PATH=V1,V2,...");

  // Every rank plans the same sweep (a bad path fails identically on all of them).
  std::optional<sweep::mpi::Session> session;
  if (sweep::mpi::launched_by_mpi()) session.emplace();
  const auto plan = sweep::plan_sweep(scenario_file, axes);
  const bool distributed = session && session->size() > 1;
  if (distributed && session->rank() != 0) {
    sweep::run_sweep_mpi_worker(plan, options);
    return 0;
  }
  sweep::SweepSummary sum;
  try {
    sum = sweep::run_sweep(plan, options, std::cerr, distributed);
  } catch (const ConfigError& e) {
    if (!distributed) throw;
    std::cerr << "trainsim: error: " << e.what() << "\n";
    sweep::mpi::abort_all(2);  // the other ranks are waiting for work that will not come
  }
  std::cerr << "sweep: " << sum.simulated << " simulated, " << sum.resumed << " resumed, "
            << sum.failed << " failed; results in " << options.out_dir << "/results.csv, "
            << "results.json, plot.svg\n";
  if (sum.failed > 0 || sum.incomplete > 0) {
    std::cerr << "trainsim: " << sum.failed << " points failed and " << sum.incomplete
              << " did not complete; rerun with the same --out to retry the failed ones\n";
    return 1;
  }
  return 0;
}

}  // namespace trainsim::cli

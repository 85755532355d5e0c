// `trainsim run`: simulate every point of a scenario and print it beside the reference.
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "report/chrome_trace.hpp"
#include "report/report.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::cli {

const char* const kRunUsage =
    "trainsim run SCENARIO [--format table|json|csv] [--trace FILE] [--no-wall-time] [--no-fold]\n"
    "  simulate every point of a scenario (scenarios/*.json) and print the results\n"
    "  beside the scenario's reference measurements\n"
    "  --format table (default): the source's table with reference and error columns;\n"
    "           json: one object with a points array; csv: one row per point\n"
    "  --trace  write a Chrome/Perfetto trace-event JSON of every rank's streams to FILE\n"
    "  --no-wall-time  write sim_wall_s as null (json) or empty (csv) for byte-identical output\n"
    "  --no-fold  simulate every rank, not one per class of identical ranks (slower; a check)\n";

int run_command(const std::vector<std::string>& args) {
  std::string scenario_file, format = "table", trace_file;
  bool wall_time = true, fold = true;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--format") {
      format = cursor.value("--format");
      if (format != "table" && format != "json" && format != "csv")
        throw UsageError("--format must be table, json or csv, not \"" + format + "\"");
    } else if (a == "--trace") {
      trace_file = cursor.value("--trace");
    } else if (a == "--no-fold") {
      fold = false;
    } else if (a == "--no-wall-time") {
      wall_time = false;
    } else {
      take_scenario_operand(a, scenario_file);
    }
  }
  if (scenario_file.empty()) throw UsageError("run needs a SCENARIO file");

  auto s = scenario::load_scenario(scenario_file);
  s.fold_symmetric_ranks = fold;
  std::vector<scenario::PointResult> results;
  for (const auto& p : s.points) results.push_back(scenario::simulate_point(s, p, !trace_file.empty()));
  bool complete = true;
  // OOM and not-yet-simulated points are results too; only a deadlocked simulation is a failure.
  for (const auto& r : results) complete = complete && (r.completed || r.oom || !r.not_simulated.empty());

  if (format == "table") report::write_table(std::cout, s, results);
  if (format == "json") report::write_json(std::cout, s, results, wall_time);
  if (format == "csv") report::write_csv(std::cout, s, results, wall_time);
  if (!trace_file.empty()) {
    std::ofstream out(trace_file);
    if (!out) throw ConfigError(trace_file, "", "cannot write the trace file");
    report::write_chrome_trace(out, s, results);
  }
  if (!complete) {
    std::cerr << "trainsim: some points did not complete (deadlocked programs)\n";
    return 1;
  }
  return 0;
}

}  // namespace trainsim::cli

// trainsim command line. Exit status: 0 success, 1 simulation failure, 2 bad input or usage.
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "report/chrome_trace.hpp"
#include "report/report.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace {

constexpr const char* kUsage =
    "usage: trainsim run SCENARIO [--format table|json|csv] [--trace FILE] [--no-wall-time]\n"
    "\n"
    "  run      simulate every point of a scenario (scenarios/*.json) and print the results\n"
    "           beside the scenario's reference measurements\n"
    "  --format table (default): the source's table with reference and error columns;\n"
    "           json: one object with a points array; csv: one row per point\n"
    "  --trace  write a Chrome/Perfetto trace-event JSON of every rank's streams to FILE\n"
    "  --no-wall-time  write sim_wall_s as null (json) or empty (csv) for byte-identical output\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int run_command(const std::vector<std::string>& args) {
  std::string scenario_file, format = "table", trace_file;
  bool wall_time = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag) {
      if (i + 1 >= args.size()) throw UsageError(std::string(flag) + " needs a value");
      return args[++i];
    };
    if (a == "--format") {
      format = value("--format");
      if (format != "table" && format != "json" && format != "csv")
        throw UsageError("--format must be table, json or csv, not \"" + format + "\"");
    } else if (a == "--trace") {
      trace_file = value("--trace");
    } else if (a == "--no-wall-time") {
      wall_time = false;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a);
    } else if (scenario_file.empty()) {
      scenario_file = a;
    } else {
      throw UsageError("more than one scenario given");
    }
  }
  if (scenario_file.empty()) throw UsageError("run needs a SCENARIO file");

  const auto s = trainsim::scenario::load_scenario(scenario_file);
  std::vector<trainsim::scenario::PointResult> results;
  for (const auto& p : s.points)
    results.push_back(trainsim::scenario::simulate_point(s, p, !trace_file.empty()));
  bool complete = true;
  for (const auto& r : results) complete = complete && r.completed;

  if (format == "table") trainsim::report::write_table(std::cout, s, results);
  if (format == "json") trainsim::report::write_json(std::cout, s, results, wall_time);
  if (format == "csv") trainsim::report::write_csv(std::cout, s, results, wall_time);
  if (!trace_file.empty()) {
    std::ofstream out(trace_file);
    if (!out) throw trainsim::ConfigError(trace_file, "", "cannot write the trace file");
    trainsim::report::write_chrome_trace(out, s, results);
  }
  if (!complete) {
    std::cerr << "trainsim: some points did not complete (deadlocked programs)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? 2 : 0;
    }
    const std::string cmd = args[0];
    args.erase(args.begin());
    if (cmd == "run") return run_command(args);
    throw UsageError("unknown command \"" + cmd + "\"");
  } catch (const UsageError& e) {
    std::cerr << "trainsim: " << e.what() << "\n\n" << kUsage;
    return 2;
  } catch (const trainsim::ConfigError& e) {
    std::cerr << "trainsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainsim: failed: " << e.what() << "\n";
    return 1;
  }
}

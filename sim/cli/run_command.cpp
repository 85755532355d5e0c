// `trainsim run`: simulate every point of a scenario and print it beside the reference.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/rank_list.hpp"
#include "report/chrome_trace.hpp"
#include "report/report.hpp"
#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::cli {

const char* const kRunUsage =
    "trainsim run SCENARIO [--format table|json|csv] [--trace FILE] [--trace-ranks LIST] [--no-wall-time]\n"
    "             [--no-fold]\n"
    "  simulate every point of a scenario (scenarios/*.json) and print the results\n"
    "  beside the scenario's reference measurements\n"
    "  --format table (default): the source's table with reference and error columns;\n"
    "           json: one object with a points array; csv: one row per point\n"
    "  --trace  write a Chrome/Perfetto trace-event JSON of every rank's streams to FILE\n"
    "  --trace-ranks  only these ranks' tracks, e.g. 0,8-15: for large runs (one 384-rank\n"
    "           point of bloom-176b-jean-zay writes 0.2 GB of trace, of bloom-prequel 0.75 GB)\n"
    "  --no-wall-time  write sim_wall_s as null (json) or empty (csv) for byte-identical output\n"
    "  --no-fold  simulate every rank, not one per class of identical ranks (slower; a check)\n";

int run_command(const std::vector<std::string>& args) {
  std::string scenario_file, format = "table", trace_file;
  bool wall_time = true, fold = true;
  RankList trace_ranks;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--format") {
      format = cursor.value("--format");
      if (format != "table" && format != "json" && format != "csv")
        throw UsageError("--format must be table, json or csv, not \"" + format + "\"");
    } else if (a == "--trace") {
      trace_file = cursor.value("--trace");
    } else if (a == "--trace-ranks") {
      const std::string& list = cursor.value("--trace-ranks");
      try {
        trace_ranks = parse_rank_list(list);
      } catch (const std::invalid_argument& e) {
        throw UsageError("--trace-ranks \"" + list + "\": " + e.what());
      }
    } else if (a == "--no-fold") {
      fold = false;
    } else if (a == "--no-wall-time") {
      wall_time = false;
    } else {
      take_scenario_operand(a, scenario_file);
    }
  }
  if (scenario_file.empty()) throw UsageError("run needs a SCENARIO file");
  if (!trace_ranks.all() && trace_file.empty()) throw UsageError("--trace-ranks needs --trace FILE");

  auto s = scenario::load_scenario(scenario_file);
  if (!trace_ranks.all()) {
    // A list naming no rank of any point would write an empty trace without a word.
    long largest = 0;
    for (const auto& p : s.points) largest = std::max(largest, static_cast<long>(p.layout.world));
    if (trace_ranks.first() >= largest)
      throw UsageError("--trace-ranks names no rank of " + scenario_file + ": its largest point has " +
                       std::to_string(largest) + " ranks (0-" + std::to_string(largest - 1) + ")");
  }
  s.fold_symmetric_ranks = fold;
  s.trace_ranks = trace_ranks;
  std::ofstream trace_out;
  std::optional<report::ChromeTraceWriter> trace;
  if (!trace_file.empty()) {
    trace_out.open(trace_file);
    if (!trace_out) throw ConfigError(trace_file, "", "cannot write the trace file");
    trace.emplace(trace_out);
  }
  std::vector<scenario::PointResult> results;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    results.push_back(scenario::simulate_point(s, s.points[i], trace.has_value()));
    if (!trace) continue;
    // Written as each point finishes: only one point's spans are in memory at a time.
    auto& r = results.back();
    trace->add_point(s, i, r);
    r.spans = {};
    r.memory_samples = {};
  }
  if (trace) trace->finish();
  bool complete = true;
  // OOM and not-yet-simulated points are results too; only a deadlocked simulation is a failure.
  for (const auto& r : results) complete = complete && (r.completed || r.oom || !r.not_simulated.empty());

  if (format == "table") report::write_table(std::cout, s, results);
  if (format == "json") report::write_json(std::cout, s, results, wall_time);
  if (format == "csv") report::write_csv(std::cout, s, results, wall_time);
  if (!complete) {
    std::cerr << "trainsim: some points did not complete (deadlocked programs)\n";
    return 1;
  }
  return 0;
}

}  // namespace trainsim::cli

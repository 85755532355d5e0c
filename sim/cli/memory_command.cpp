// `trainsim memory`: what each rank holds at the peak of a step, whether it fits, and what to
// change first. Pure arithmetic, no simulation: answers in milliseconds.
#include <iostream>

#include "cli/commands.hpp"
#include "report/memory_report.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::cli {

const char* const kMemoryUsage =
    "trainsim memory SCENARIO [--format table|json]\n"
    "  per point: device memory of each distinct rank kind term by term (model states by\n"
    "  precision and sharding, gathered FSDP units, buffers, activations, workspace, runtime),\n"
    "  the verdict (fits, or OOM by how much on which rank), the smallest sharding degree that\n"
    "  fits and, when nothing fits, what to change first (source 000: batch, then TP)\n";

int memory_command(const std::vector<std::string>& args) {
  std::string scenario_file, format = "table";
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string& a = cursor.next();
    if (a == "--format") {
      format = cursor.value("--format");
      if (format != "table" && format != "json")
        throw UsageError("--format must be table or json, not \"" + format + "\"");
    } else {
      take_scenario_operand(a, scenario_file);
    }
  }
  if (scenario_file.empty()) throw UsageError("memory needs a SCENARIO file");
  const auto s = scenario::load_scenario(scenario_file);
  if (format == "json")
    report::write_memory_json(std::cout, s);
  else
    report::write_memory_table(std::cout, s);
  return 0;
}

}  // namespace trainsim::cli

// trainsim command line: dispatches to a subcommand and maps errors to exit codes
// (0 success, 1 simulation failure, 2 bad input or usage).
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/error.hpp"

namespace {

using trainsim::cli::Command;

// One line per subcommand; a new command adds its file and its line here.
const Command kCommands[] = {
    {"run", trainsim::cli::kRunUsage, trainsim::cli::run_command},
    {"sweep", trainsim::cli::kSweepUsage, trainsim::cli::sweep_command},
    {"memory", trainsim::cli::kMemoryUsage, trainsim::cli::memory_command},
    {"search", trainsim::cli::kSearchUsage, trainsim::cli::search_command},
    {"collective", trainsim::cli::kCollectiveUsage, trainsim::cli::collective_command},
};

void print_usage(std::ostream& out) {
  out << "usage: trainsim COMMAND [ARGS]\n";
  for (const auto& c : kCommands) out << "\n" << c.usage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      print_usage(std::cout);
      return args.empty() ? 2 : 0;
    }
    const std::string name = args[0];
    args.erase(args.begin());
    for (const auto& c : kCommands)
      if (name == c.name) return c.run(args);
    throw trainsim::cli::UsageError("unknown command \"" + name + "\"");
  } catch (const trainsim::cli::UsageError& e) {
    std::cerr << "trainsim: " << e.what() << "\n\n";
    print_usage(std::cerr);
    return 2;
  } catch (const trainsim::ConfigError& e) {
    std::cerr << "trainsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainsim: failed: " << e.what() << "\n";
    return 1;
  }
}

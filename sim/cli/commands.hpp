// The trainsim subcommands. Each lives in its own file; main.cpp only dispatches and maps
// errors to exit codes (0 success, 1 simulation failure, 2 bad input or usage).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::cli {

// Bad command-line usage: main prints the message and the usage text, and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Walks an argument list; `value` takes the argument after a flag or throws UsageError.
class ArgCursor {
 public:
  explicit ArgCursor(const std::vector<std::string>& args) : args_(args) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& next() { return args_[i_++]; }
  const std::string& value(const std::string& flag) {
    if (done()) throw UsageError(flag + " needs a value");
    return next();
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

/// An argument no option of the command took: the command's one SCENARIO operand. UsageError
/// for an unknown option or a second scenario.
inline void take_scenario_operand(const std::string& arg, std::string& scenario_file) {
  if (!arg.empty() && arg[0] == '-') throw UsageError("unknown option " + arg);
  if (!scenario_file.empty()) throw UsageError("more than one scenario given");
  scenario_file = arg;
}

struct Command {
  const char* name;
  const char* usage;  // one or more lines, shown by `trainsim help`
  int (*run)(const std::vector<std::string>& args);
};

int run_command(const std::vector<std::string>& args);
extern const char* const kRunUsage;
int sweep_command(const std::vector<std::string>& args);
extern const char* const kSweepUsage;
int memory_command(const std::vector<std::string>& args);
extern const char* const kMemoryUsage;
int collective_command(const std::vector<std::string>& args);
extern const char* const kCollectiveUsage;
int search_command(const std::vector<std::string>& args);
extern const char* const kSearchUsage;

}  // namespace trainsim::cli

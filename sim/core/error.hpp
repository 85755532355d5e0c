#pragma once
// Error types. Configuration errors name the file, the JSON path and what was expected;
// `main` maps them to exit status 2. Library code never exits.
#include <stdexcept>
#include <string>

namespace trainsim {

/// Bad user input: a file that cannot be read, malformed JSON, an unknown key, a bad unit,
/// inconsistent degrees. `what()` reads "FILE: at JSON_PATH: MESSAGE".
class ConfigError : public std::runtime_error {
public:
  ConfigError(const std::string& file, const std::string& json_path, const std::string& message);
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& json_path() const { return json_path_; }

private:
  std::string file_;
  std::string json_path_;
};

/// A broken internal invariant (a bug, not bad input). Stays on in release builds.
class InvariantError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

#define TRAINSIM_CHECK(cond, msg)                                                                  \
  do {                                                                                             \
    if (!(cond)) throw ::trainsim::InvariantError(std::string(__FILE__) + ":" +                    \
                                                  std::to_string(__LINE__) + ": " + (msg));        \
  } while (0)

}  // namespace trainsim

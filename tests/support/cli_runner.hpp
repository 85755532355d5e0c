#pragma once
// Runs the trainsim executable (TRAINSIM_BIN, set by ctest) as a user would, capturing exit
// status, stdout and stderr; for end-to-end tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace trainsim::testing_support {

struct CommandRun {
  int status = -1;  ///< exit status, or -1 when the process did not exit normally
  std::string out;
  std::string err;
};

inline std::string read_text_file(const std::string& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A path in the test temp dir unique to the running test and process: test suites of two
/// checkouts run at once on one machine must not share files.
inline std::string test_temp_path(const std::string& suffix) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name)
    if (c == '/') c = '_';  // parameterized tests are named Suite/Test/param
  return testing::TempDir() + name + "_" + std::to_string(::getpid()) + suffix;
}

/// Runs a shell command line, capturing stdout and stderr.
inline CommandRun run_shell(const std::string& command) {
  const std::string err_file = test_temp_path(".stderr");
  CommandRun r;
  FILE* pipe = popen((command + " 2>'" + err_file + "'").c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    return r;
  }
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_text_file(err_file);
  return r;
}

/// The trainsim executable, quoted for the shell ("" and a test failure when not set).
inline std::string trainsim_bin() {
  const char* bin = std::getenv("TRAINSIM_BIN");
  if (bin == nullptr) {
    ADD_FAILURE() << "TRAINSIM_BIN is not set: run through ctest, or set it to build/sim/trainsim";
    return "false";
  }
  return "'" + std::string(bin) + "'";
}

}  // namespace trainsim::testing_support

// trainsim-validate as a user runs it: usage errors exit 2; on a machine without a GPU every
// subcommand exits 1 with a message saying so and writes nothing (on a GPU machine those tests
// skip: the message cannot be reached there).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct CliRun {
  int status = -1;
  std::string output;  ///< stdout and stderr together
};

CliRun run(const std::string& args) {
  const std::string cmd = std::string(TRAINSIM_VALIDATE_BIN) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) r.output += buf.data();
  const int s = pclose(p);
  if (WIFEXITED(s)) r.status = WEXITSTATUS(s);
  return r;
}

bool has_cuda_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace

TEST(ValidateCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run("").status, 2);
  const CliRun r = run("kernels");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("kernels needs --out FILE"), std::string::npos) << r.output;
  EXPECT_EQ(run("layer --model gpt-99").status, 2);
  EXPECT_EQ(run("frobnicate").status, 2);
  EXPECT_EQ(run("--help").status, 0);
}

TEST(ValidateCli, WithoutAGpuEverySubcommandSaysSoAndWritesNothing) {
  if (has_cuda_device())
    GTEST_SKIP() << "this machine has a CUDA device: the no-GPU path is not reachable";
  const std::string out = testing::TempDir() + "validate_cli_no_gpu.json";
  for (const std::string& args :
       {"kernels --out " + out, "nccl --out " + out, std::string("layer --model bert-large")}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("no CUDA device"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Nothing was written"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

// trainsim-validate: measures real kernels and NCCL collectives on the GPUs of this machine and
// writes the calibration files the simulator reads (validate/README.md).
// Exit codes: 0 success, 1 failure (including no GPU, or a kernel failing its CPU check),
// 2 bad usage or input.
#include <iostream>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "core/error.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
};

const Command kCommands[] = {
    {"kernels", trainsim::validate::kernels_command},
    {"nccl", trainsim::validate::nccl_command},
    {"layer", trainsim::validate::layer_command},
};

}  // namespace

int main(int argc, char** argv) {
  using trainsim::validate::kUsage;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? 2 : 0;
    }
    const std::string name = args[0];
    args.erase(args.begin());
    for (const auto& c : kCommands)
      if (name == c.name) return c.run(args);
    throw trainsim::validate::UsageError("unknown command \"" + name + "\"");
  } catch (const trainsim::validate::UsageError& e) {
    std::cerr << "trainsim-validate: " << e.what() << "\n\n" << kUsage;
    return 2;
  } catch (const trainsim::ConfigError& e) {
    std::cerr << "trainsim-validate: error: " << e.what() << "\n";
    return 2;
  } catch (const trainsim::validate::NoDeviceError& e) {
    std::cerr << "trainsim-validate: " << e.what()
              << "\nThis harness measures real GPUs; run it on a machine with an NVIDIA GPU and "
                 "driver (validate/README.md). Nothing was written.\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "trainsim-validate: failed: " << e.what() << "\n";
    return 1;
  }
}

#pragma once
// The trainsim-validate subcommands, one file each; main.cpp dispatches and maps errors to exit
// codes (0 success, 1 failure or no GPU, 2 bad usage or input).
#include <string>
#include <vector>

namespace trainsim::validate {

int kernels_command(const std::vector<std::string>& args);
int nccl_command(const std::vector<std::string>& args);
int layer_command(const std::vector<std::string>& args);

}  // namespace trainsim::validate

#include "commands.hpp"
namespace trainsim::validate {
int layer_command(const std::vector<std::string>&) { return 1; }
}

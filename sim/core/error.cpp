#include "core/error.hpp"

namespace trainsim {

ConfigError::ConfigError(const std::string& file, const std::string& json_path,
                         const std::string& message)
    : std::runtime_error(file + ": at " + (json_path.empty() ? std::string("/") : json_path) +
                         ": " + message),
      file_(file), json_path_(json_path) {}

}  // namespace trainsim

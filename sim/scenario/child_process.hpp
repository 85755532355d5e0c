#pragma once
// SimGrid allows one Engine per process: work that builds one runs in a forked child, which
// sends its result back as JSON through a pipe, so the calling process stays SimGrid-free.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim::scenario {

/// Runs `work` in a forked child and returns the JSON it produced. An exception in the child
/// comes back as std::runtime_error("<what> failed: <message>"); a crash as "<what> crashed".
[[nodiscard]] nlohmann::json run_in_child(const std::function<nlohmann::json()>& work,
                                          const std::string& what);

}  // namespace trainsim::scenario

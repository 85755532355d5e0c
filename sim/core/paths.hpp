#pragma once
// Files name other files relative to themselves (a scenario its topology, a topology its device
// profiles), so a repository can be checked out anywhere and run from any directory.
#include <filesystem>
#include <string>

namespace trainsim {

/// `ref` resolved against the directory holding `file`; absolute refs are returned unchanged.
[[nodiscard]] inline std::string relative_to(const std::string& file, const std::string& ref) {
  const std::filesystem::path p(ref);
  if (p.is_absolute()) return ref;
  return (std::filesystem::path(file).parent_path() / p).lexically_normal().string();
}

}  // namespace trainsim

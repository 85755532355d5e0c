#pragma once
// Finding a rank's stream and a stream's task by name, for schedule tests that check the order
// and dependencies of named tasks.
#include <string>

#include "program/program.hpp"

namespace trainsim::testing_support {

/// The stream of `r` called `name` (its index in `*index` if given), or nullptr.
inline const program::Stream* stream_named(const program::RankProgram& r, const std::string& name,
                                           int* index = nullptr) {
  for (std::size_t s = 0; s < r.streams.size(); ++s)
    if (r.streams[s].name == name) {
      if (index) *index = static_cast<int>(s);
      return &r.streams[s];
    }
  return nullptr;
}

/// The index in `s` of the task called `name`, or -1.
inline int task_named(const program::Stream& s, const std::string& name) {
  for (std::size_t i = 0; i < s.tasks.size(); ++i)
    if (std::string(s.tasks[i].name) == name) return static_cast<int>(i);
  return -1;
}

}  // namespace trainsim::testing_support

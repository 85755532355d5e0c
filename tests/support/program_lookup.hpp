#pragma once
// Reading a rank's program in schedule tests: its streams and tasks by name, a task's
// dependencies, and the bytes its tasks allocate and release.
#include <gtest/gtest.h>

#include <algorithm>
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

/// The task of `s` called `name`. A missing one fails the test (and gives a blank task, so the
/// test's other checks still run).
inline const program::Task& find_task(const program::Stream& s, const std::string& name) {
  const int i = task_named(s, name);
  if (i >= 0) return s.tasks[static_cast<std::size_t>(i)];
  ADD_FAILURE() << "no task " << name << " on " << s.name;
  static const program::Task none{};
  return none;
}

/// The index in `s` of the task called `name`; a missing one fails the test (and gives -1).
inline int index_of(const program::Stream& s, const std::string& name) {
  const int i = task_named(s, name);
  if (i < 0) ADD_FAILURE() << "no task " << name << " on " << s.name;
  return i;
}

/// Whether `t` waits for task `index` of stream `stream`.
inline bool waits_for(const program::Task& t, int stream, int index) {
  return std::find(t.deps.begin(), t.deps.end(), program::TaskRef{stream, index}) != t.deps.end();
}

/// The bytes the tasks of `r` allocate, over all its streams.
inline double allocated_bytes(const program::RankProgram& r) {
  double bytes = 0;
  for (const auto& s : r.streams)
    for (const auto& t : s.tasks) bytes += t.alloc;
  return bytes;
}

/// The bytes the tasks of `r` release, their own allocations and borrowed ones, over all its
/// streams.
inline double released_bytes(const program::RankProgram& r) {
  double bytes = 0;
  for (const auto& s : r.streams)
    for (const auto& t : s.tasks) bytes += t.release + t.release_borrowed;
  return bytes;
}

}  // namespace trainsim::testing_support

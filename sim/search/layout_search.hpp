#pragma once
// `trainsim search`: which layout of a point trains fastest on its cluster. Every candidate of
// layout_candidates is loaded as a scenario of its own (the loader's error is why it is invalid),
// judged by the memory model (out of memory is a result, not simulated) and, when it fits,
// simulated like a `run` point, several at once in child processes.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memory/memory_advice.hpp"
#include "scenario/point_runner.hpp"
#include "search/layout_candidates.hpp"

namespace trainsim::search {

struct SearchOptions {
  std::string point_label;           ///< empty: the scenario's first point
  std::optional<int> nodes;          ///< default: the point's
  std::optional<long> global_batch;  ///< sequences per step; default: the point's
  SearchSpace space;                 ///< axes the user gave (the rest: complete_space's defaults)
  int jobs = 1;
  /// A search whose every combination is set aside returns no trials instead of a ConfigError
  /// (a node count among several that the global batch does not divide over).
  bool allow_no_candidates = false;
};

enum class Outcome { simulated, out_of_memory, invalid, not_simulated, failed };
[[nodiscard]] const char* outcome_name(Outcome o);

struct Trial {
  Candidate candidate;
  Outcome outcome = Outcome::invalid;
  std::string reason;  ///< why invalid, not simulated or failed
  /// Options of the point's schedule this candidate of another schedule runs without, each
  /// "key: the loader's reason"
  std::vector<std::string> left_out_options;
  /// Settings it runs with other values than the point's beyond its layout (changed_settings)
  std::vector<std::string> changed_options;
  memory::MemoryVerdict memory;                 ///< judged for every loaded candidate
  std::optional<scenario::PointResult> result;  ///< simulated candidates
  double tflops_per_accelerator = 0;
};

struct SearchResult {
  std::string scenario_file;
  std::string title;
  std::string point_label;
  std::string topology;
  std::string model;
  std::string schedule;  ///< the point's training.schedule
  int nodes = 0;
  long accelerators = 0;
  long global_batch = 0;
  std::vector<Trial> trials;  ///< in enumeration order
  std::vector<Skipped> skipped;
};

/// Loads the scenario, enumerates, judges and simulates. ConfigError for a bad scenario, an
/// unknown point label or a search with no candidate at all; `progress` gets a line per
/// simulated candidate.
[[nodiscard]] SearchResult run_search(const std::string& scenario_file,
                                      const SearchOptions& options, std::ostream& progress);

/// Simulated trials, fastest first (ties: the smaller memory peak, then enumeration order).
[[nodiscard]] std::vector<const Trial*> ranked(const SearchResult& r);

}  // namespace trainsim::search

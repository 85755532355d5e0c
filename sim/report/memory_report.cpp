#include "report/memory_report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <string>

#include "memory/memory_advice.hpp"

namespace trainsim::report {

namespace {

std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", b / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

/// One line describing the plan, so a table can be read without the scenario file.
std::string describe(const scenario::Point& p) {
  const auto& t = p.training;
  std::string d = p.model.name + ", " + std::to_string(p.layout.world) + " accelerators: ";
  d += std::string(plan::sharding_name(t.sharding));
  // Under context parallelism the distributed optimizer spans the DP x CP group.
  if (t.sharding != plan::Sharding::none)
    d += " over " + std::to_string(plan::context_parallel_rank_layout(p.layout).shard);
  d += ", DP " + std::to_string(p.layout.dp) + (t.cp > 1 ? ", CP " + std::to_string(t.cp) : std::string()) +
       ", TP " + std::to_string(t.tp) + ", PP " +
       std::to_string(t.pp) + ", micro-batch " + std::to_string(t.micro_batch) + " x seq " +
       std::to_string(p.model.seq_len) + ", " + t.precision.name;
  if (t.activation_checkpointing)
    d += t.checkpoint_policy == plan::CheckpointPolicy::selective_op ? ", selective checkpointing (op policy)"
         : t.checkpoint_policy == plan::CheckpointPolicy::selective_attention
             ? ", selective recomputation (core attention)"
             : ", checkpointing";
  if (t.activation_offloading) d += ", offloading";
  if (t.flash_attention)
    d += ", flash attention" + (t.attention_kernel.empty() ? std::string() : " (" + t.attention_kernel + ")");
  return d;
}

}  // namespace

void write_memory_table(std::ostream& os, const scenario::Scenario& s) {
  os << s.title << "\n";
  for (const auto& p : s.points) {
    const auto v = memory::judge_memory(scenario::memory_inputs(s, p));
    os << "\n" << p.label << " (" << describe(p) << ")\n";
    os << std::left << std::setw(24) << "term (GiB)";
    for (const auto& r : v.ranks) os << std::right << std::setw(18) << r.kind;
    os << "   how (" << v.ranks.back().kind << ")\n";
    for (std::size_t t = 0; t < v.ranks.front().terms.size(); ++t) {
      os << std::left << std::setw(24) << v.ranks.front().terms[t].name;
      for (const auto& r : v.ranks) os << std::right << std::setw(18) << gib(r.terms[t].bytes);
      os << "   " << v.ranks.back().terms[t].formula << "\n";
    }
    os << std::left << std::setw(24) << "(model states)";
    for (const auto& r : v.ranks) {
      const Bytes states = r.term("weights") + r.term("gradients") + r.term("master_weights") +
                           r.term("master_gradients") + r.term("optimizer_states");
      os << std::right << std::setw(18) << gib(states);
    }
    {
      const auto& r = v.ranks.front();
      const Bytes states = r.term("weights") + r.term("gradients") + r.term("master_weights") +
                           r.term("master_gradients") + r.term("optimizer_states");
      char buf[96];
      std::snprintf(buf, sizeof buf, "   = %.1f GB (decimal) on %s", states / 1e9, r.kind.c_str());
      os << buf << "\n";
    }
    os << std::left << std::setw(24) << "peak";
    for (const auto& r : v.ranks) os << std::right << std::setw(18) << gib(r.peak);
    os << "\n" << std::left << std::setw(24) << "capacity";
    for (const auto& r : v.ranks) os << std::right << std::setw(18) << gib(r.capacity);
    os << "\n";
    const auto& worst = *std::max_element(v.ranks.begin(), v.ranks.end(),
                                          [](const auto& a, const auto& b) { return a.peak < b.peak; });
    if (v.fits) {
      os << "verdict: fits (" << v.worst_rank << ": " << gib(v.worst_peak) << " of "
         << gib(worst.capacity) << " GiB, " << gib(worst.capacity - v.worst_peak) << " GiB free)\n";
    } else {
      os << "verdict: OOM on " << v.worst_rank << " by " << gib(v.worst_peak - worst.capacity)
         << " GiB (largest term: " << worst.largest().name << ", " << gib(worst.largest().bytes)
         << " GiB)\n";
    }
    if (v.smallest_fitting_shard)
      os << "smallest sharding degree that fits: " << *v.smallest_fitting_shard << "\n";
    else if (p.training.sharding != plan::Sharding::none)
      os << "smallest sharding degree that fits: none up to " << p.layout.dp << "\n";
    if (!v.advice.empty()) os << "change first: " << v.advice << "\n";
  }
}

void write_memory_json(std::ostream& os, const scenario::Scenario& s) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : s.points) {
    const auto v = memory::judge_memory(scenario::memory_inputs(s, p));
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const auto& r : v.ranks) {
      nlohmann::ordered_json terms;
      for (const auto& t : r.terms) terms[t.name] = t.bytes;
      ranks.push_back({{"kind", r.kind},
                       {"terms", terms},
                       {"peak_bytes", r.peak},
                       {"capacity_bytes", r.capacity},
                       {"fits", r.fits()},
                       {"largest_term", r.largest().name}});
    }
    nlohmann::ordered_json j;
    j["label"] = p.label;
    j["nodes"] = p.nodes;
    j["accelerators"] = p.layout.world;
    j["plan"] = describe(p);
    j["fits"] = v.fits;
    j["ranks"] = ranks;
    j["smallest_fitting_shard_degree"] =
        v.smallest_fitting_shard ? nlohmann::ordered_json(*v.smallest_fitting_shard) : nlohmann::ordered_json();
    j["advice"] = v.advice;
    points.push_back(j);
  }
  nlohmann::ordered_json doc;
  doc["scenario"] = s.name;
  doc["title"] = s.title;
  doc["points"] = points;
  os << doc.dump(2) << "\n";
}

}  // namespace trainsim::report

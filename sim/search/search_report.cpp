#include "search/search_report.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/text_format.hpp"

namespace trainsim::search {

namespace {

using text::fmt;
using text::pad;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// As `run` prints it: the peak the simulation followed where there is one, else the model's.
/// The checkpointing column: yes / no, or the policy where the search tried policies.
std::string checkpointing_text(const Candidate& c) {
  if (!c.checkpointing) return "no";
  if (!c.policy_searched) return "yes";
  if (c.checkpoint_policy == "selective_op") return "selective op";
  if (c.checkpoint_policy == "selective_attention") return "selective attn";
  return c.checkpoint_policy;
}

std::string memory_text(const Trial& t) {
  if (t.memory.ranks.empty()) return "-";
  const double peak =
      t.result && t.result->peak_memory > 0 ? t.result->peak_memory : t.memory.worst_peak;
  return fmt("%.1f", peak / kGiB) + "/" + fmt("%.1f", t.memory.ranks.front().capacity / kGiB);
}

/// As training.pipeline_schedule says it (empty without a pipeline).
std::string pipeline_schedule_of(const Candidate& c) {
  if (c.pp == 1) return "";
  return c.virtual_stages > 1 ? "interleaved" : c.pipeline;
}

nlohmann::ordered_json pipeline_schedule_json(const Candidate& c) {
  return c.pp == 1 ? nlohmann::ordered_json(nullptr)
                   : nlohmann::ordered_json(pipeline_schedule_of(c));
}

/// Whether some layout of the search has `has` (a column the table shows only then).
template <typename Has>
bool any_candidate(const SearchResult& r, Has has) {
  return std::any_of(r.trials.begin(), r.trials.end(),
                     [&](const Trial& t) { return has(t.candidate); });
}

std::size_t count(const SearchResult& r, Outcome o) {
  return static_cast<std::size_t>(std::count_if(r.trials.begin(), r.trials.end(),
                                                [o](const Trial& t) { return t.outcome == o; }));
}

void write_setting_notes(std::ostream& os, const SearchResult& r, const char* what,
                         std::vector<std::string> Trial::*notes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> lines;
  for (const auto& t : r.trials)
    for (const auto& note : t.*notes) {
      auto it = std::find_if(lines.begin(), lines.end(),
                             [&](const auto& line) { return line.first == note; });
      if (it == lines.end()) it = lines.insert(lines.end(), {note, {}});
      if (std::find(it->second.begin(), it->second.end(), t.candidate.schedule) == it->second.end())
        it->second.push_back(t.candidate.schedule);
    }
  for (const auto& [note, schedules] : lines) {
    os << what;
    for (std::size_t i = 0; i < schedules.size(); ++i)
      os << (i == 0 ? " " : ", ") << schedule_label(schedules[i]);
    os << ": " << note << "\n";
  }
}

}  // namespace

void write_search_table(std::ostream& os, const SearchResult& r, std::size_t top) {
  const auto best = ranked(r);
  os << "search: " << r.title << "\n"
     << "point \"" << r.point_label << "\": " << r.model << " on " << r.nodes << " x " << r.topology
     << " (" << r.accelerators << " accelerators), global batch " << r.global_batch
     << " sequences per step\n"
     << r.trials.size() << " layouts: " << count(r, Outcome::simulated) << " simulated, "
     << count(r, Outcome::out_of_memory) << " out of memory, " << count(r, Outcome::invalid)
     << " invalid, " << count(r, Outcome::not_simulated) << " not simulated, "
     << count(r, Outcome::failed) << " failed";
  if (!r.skipped.empty()) os << "; " << r.skipped.size() << " combinations set aside";
  os << "\n\n";

  const bool shard = any_candidate(r, [](const Candidate& c) { return c.shard > 0; });
  const bool interleaved =
      any_candidate(r, [](const Candidate& c) { return c.virtual_stages > 1; });
  const bool schedules = any_candidate(r, [](const Candidate& c) { return c.schedule_searched; });
  const bool sequence_parallel =
      any_candidate(r, [](const Candidate& c) { return c.sequence_parallel; });
  const bool offloading = any_candidate(r, [](const Candidate& c) { return c.offloading; });
  const bool context = any_candidate(r, [](const Candidate& c) { return c.cp > 1; });
  const bool comm = any_candidate(r, [](const Candidate& c) { return c.cp > 1 && (c.cp_comm_searched || c.cp_comm != "p2p"); });
  const bool gpipe = any_candidate(r, [](const Candidate& c) { return c.pp > 1 && c.pipeline != "1f1b"; });
  if (!best.empty()) {
    os << "rank" << (schedules ? "  schedule" : "") << "  TP" << (sequence_parallel ? "  SP" : "")
       << (context ? "  CP" : "") << (comm ? "    CP comm" : "") << "  PP" << (gpipe ? "     pipeline" : "")
       << (interleaved ? "  chunks" : "") << "    DP  micro-batch  accumulation  checkpointing"
       << (offloading ? "  offloading" : "") << (shard ? "  shard" : "")
       << "  memory (GiB)    samples/s  TFLOP/s/acc    step (s)\n";
    const std::size_t shown = top == 0 ? best.size() : std::min(top, best.size());
    auto row = [&](std::size_t rank, const Trial& t) {
      const auto& c = t.candidate;
      os << pad(std::to_string(rank), 4);
      if (schedules) os << pad(schedule_label(c.schedule), 10);
      os << pad(std::to_string(c.tp), 4);
      if (sequence_parallel) os << pad(c.sequence_parallel ? "yes" : "no", 4);
      if (context) os << pad(std::to_string(c.cp), 4);
      if (comm) os << pad(c.cp > 1 ? c.cp_comm : "-", 11);
      os << pad(std::to_string(c.pp), 4);
      if (gpipe) os << pad(c.pp == 1 ? "-" : pipeline_schedule_of(c), 13);  // "interleaved" fits
      if (interleaved) os << pad(std::to_string(c.virtual_stages), 8);
      os << pad(std::to_string(c.dp), 6) << pad(std::to_string(c.micro_batch), 13)
         << pad(std::to_string(c.accumulation), 14) << pad(checkpointing_text(c), 15);
      if (offloading) os << pad(c.offloading ? "yes" : "no", 12);
      if (shard) os << pad(c.shard > 0 ? std::to_string(c.shard) : "-", 7);
      os << pad(memory_text(t), 14) << pad(fmt("%.2f", t.result->samples_per_s), 13)
         << pad(fmt("%.1f", t.tflops_per_accelerator), 13)
         << pad(fmt("%.4f", t.result->step_time), 12)
         << (c.is_original ? "  <- the point's layout" : "") << "\n";
    };
    for (std::size_t i = 0; i < shown; ++i) row(i + 1, *best[i]);
    for (std::size_t i = shown; i < best.size(); ++i)
      if (best[i]->candidate.is_original) {
        os << "  ...\n";
        row(i + 1, *best[i]);
      }
    if (shown < best.size())
      os << "(" << best.size() - shown << " more simulated "
         << (best.size() - shown == 1 ? "layout" : "layouts") << " in --format json/csv)\n";
    os << "(TFLOP/s per accelerator counts the recomputed forward under checkpointing, as `run` "
          "does)\n";
  } else {
    os << "no layout fits and simulates\n";
  }

  const auto original = std::find_if(r.trials.begin(), r.trials.end(),
                                     [](const Trial& t) { return t.candidate.is_original; });
  if (original == r.trials.end()) {
    os << "\nthe point's own layout is not among the candidates (other axes or another node "
          "count)\n";
  } else if (original->outcome == Outcome::simulated && !best.empty()) {
    const double gain = best.front()->result->samples_per_s / original->result->samples_per_s;
    os << "\nthe point's layout (" << original->candidate.label()
       << "): " << fmt("%.2f", original->result->samples_per_s) << " samples/s; the best is "
       << fmt("%.2f", gain) << "x it\n";
  } else {
    os << "\nthe point's layout (" << original->candidate.label()
       << "): " << outcome_name(original->outcome)
       << (original->reason.empty() ? "" : ": " + original->reason) << "\n";
  }

  // What the other schedules changed of the point's settings: a line per setting, naming them.
  write_setting_notes(os, r, "changed under", &Trial::changed_options);
  write_setting_notes(os, r, "left out under", &Trial::left_out_options);

  std::vector<const Trial*> oom;
  for (const auto& t : r.trials)
    if (t.outcome == Outcome::out_of_memory && t.reason.empty()) oom.push_back(&t);
  if (!oom.empty()) {
    const auto closest = *std::min_element(
        oom.begin(), oom.end(),
        [](const Trial* a, const Trial* b) { return a->memory.worst_peak < b->memory.worst_peak; });
    os << "out of memory: " << oom.size() << (oom.size() == 1 ? " layout" : " layouts")
       << "; the closest to fitting: " << closest->candidate.label() << ", peak "
       << memory_text(*closest) << " GiB on " << closest->memory.worst_rank << "\n";
  }
  // Invalid layouts grouped by reason (the first layout of each named), so a user sees which
  // rule excluded them without a line per layout.
  std::map<std::string, std::pair<std::size_t, const Trial*>> reasons;
  std::vector<std::string> order;
  for (const auto& t : r.trials) {
    // (out of memory with a reason: the memory model's peak fits, the simulated allocator not)
    if (t.outcome == Outcome::simulated ||
        (t.outcome == Outcome::out_of_memory && t.reason.empty()))
      continue;
    auto [it, added] = reasons.try_emplace(t.reason, 0, &t);
    if (added) order.push_back(t.reason);
    ++it->second.first;
  }
  for (const auto& why : order) {
    const auto& [n, first] = reasons.at(why);
    os << (first->outcome == Outcome::out_of_memory ? "out of memory"
                                                    : outcome_name(first->outcome))
       << ": " << n << (n == 1 ? " layout" : " layouts") << " (e.g. " << first->candidate.label()
       << "): " << why << "\n";
  }
  std::map<std::string, std::size_t> set_aside;
  for (const auto& s : r.skipped) ++set_aside[s.reason];
  for (const auto& [why, n] : set_aside)
    os << "set aside: " << n << (n == 1 ? " combination: " : " combinations: ") << why << "\n";
}

nlohmann::ordered_json trial_json(const Trial& t) {
  const auto& c = t.candidate;
  nlohmann::ordered_json j;
  j["label"] = c.label();
  j["schedule"] = c.schedule;
  j["tensor_parallel"] = c.tp;
  j["context_parallel"] = c.cp;
  j["cp_comm_type"] = c.cp > 1 ? nlohmann::ordered_json(c.cp_comm) : nlohmann::ordered_json(nullptr);
  j["pipeline_parallel"] = c.pp;
  j["pipeline_schedule"] = pipeline_schedule_json(c);
  j["virtual_stages"] = c.virtual_stages;
  j["data_parallel"] = c.dp;
  j["micro_batch"] = c.micro_batch;
  j["gradient_accumulation"] = c.accumulation;
  j["activation_checkpointing"] = c.checkpointing;
  j["checkpoint_policy"] = c.checkpointing ? nlohmann::ordered_json(c.checkpoint_policy) : nlohmann::ordered_json(nullptr);
  j["activation_offloading"] = c.offloading;
  j["sequence_parallel"] = c.sequence_parallel;
  j["hybrid_shard_degree"] =
      c.shard > 0 ? nlohmann::ordered_json(c.shard) : nlohmann::ordered_json(nullptr);
  j["original"] = c.is_original;
  j["outcome"] = outcome_name(t.outcome);
  j["reason"] =
      t.reason.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.reason);
  j["left_out_options"] = t.left_out_options;
  j["changed_options"] = t.changed_options;
  if (!t.memory.ranks.empty()) {
    j["memory_peak_bytes"] = t.memory.worst_peak;
    j["memory_capacity_bytes"] = t.memory.ranks.front().capacity;
    j["memory_worst_rank"] = t.memory.worst_rank;
  }
  if (t.result) {
    j["simulated_peak_bytes"] = t.result->peak_memory;
    if (t.result->peak_reserved > 0) {
      j["simulated_reserved_peak_bytes"] = t.result->peak_reserved;
      j["allocator_retries"] = t.result->allocator_retries;
    }
  }
  if (t.result && t.outcome != Outcome::out_of_memory) {
    j["samples_per_s"] = t.result->samples_per_s;
    j["tflops_per_accelerator"] = t.tflops_per_accelerator;
    j["step_time_s"] = t.result->step_time;
  }
  return j;
}

nlohmann::ordered_json searched_point_json(const SearchResult& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario_file;
  j["point"] = r.point_label;
  j["model"] = r.model;
  j["topology"] = r.topology;
  j["schedule"] = r.schedule;
  return j;
}

nlohmann::ordered_json search_json(const SearchResult& r) {
  nlohmann::ordered_json j = searched_point_json(r);
  j["nodes"] = r.nodes;
  j["accelerators"] = r.accelerators;
  j["global_batch"] = r.global_batch;
  nlohmann::ordered_json ranked_layouts = nlohmann::ordered_json::array();
  for (const auto* t : ranked(r)) ranked_layouts.push_back(trial_json(*t));
  j["ranked"] = ranked_layouts;
  nlohmann::ordered_json others = nlohmann::ordered_json::array();
  for (const auto& t : r.trials)
    if (t.outcome != Outcome::simulated) others.push_back(trial_json(t));
  j["not_ranked"] = others;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& s : r.skipped)
    skipped.push_back({{"schedule", s.candidate.schedule},
                       {"tensor_parallel", s.candidate.tp},
                       {"context_parallel", s.candidate.cp},
                       {"pipeline_parallel", s.candidate.pp},
                       {"pipeline_schedule", pipeline_schedule_json(s.candidate)},
                       {"virtual_stages", s.candidate.virtual_stages},
                       {"micro_batch", s.candidate.micro_batch},
                       {"reason", s.reason}});
  j["set_aside"] = skipped;
  return j;
}

void write_search_json(std::ostream& os, const SearchResult& r) {
  os << search_json(r).dump(1) << "\n";
}

std::string search_csv_header() {
  return "rank,schedule,tensor_parallel,context_parallel,pipeline_parallel,pipeline_schedule,"
         "virtual_stages,data_parallel,micro_batch,"
         "gradient_accumulation,activation_checkpointing,checkpoint_policy,activation_offloading,sequence_parallel,"
         "hybrid_shard_degree,"
         "original,outcome,"
         "memory_peak_gib,memory_capacity_gib,samples_per_s,tflops_per_accelerator,step_time_s,"
         "reason,cp_comm_type";  // the last column since session 27 (earlier columns keep their places)
}

void write_search_csv(std::ostream& os, const SearchResult& r) {
  os << search_csv_header() << "\n";
  write_search_csv_rows(os, r, "");
}

void write_search_csv_rows(std::ostream& os, const SearchResult& r, const std::string& prefix) {
  auto line = [&](const std::string& rank, const Trial& t) {
    const auto& c = t.candidate;
    std::string reason = t.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    const bool ranked_result = t.result && t.outcome != Outcome::out_of_memory;
    os << prefix << rank << "," << c.schedule << "," << c.tp << "," << c.cp << "," << c.pp << ","
       << pipeline_schedule_of(c) << "," << c.virtual_stages << "," << c.dp << "," << c.micro_batch
       << "," << c.accumulation << "," << (c.checkpointing ? "true" : "false") << ","
       << (c.checkpointing ? c.checkpoint_policy : "") << "," << (c.offloading ? "true" : "false") << "," << (c.sequence_parallel ? "true" : "false")
       << "," << (c.shard > 0 ? std::to_string(c.shard) : "") << ","
       << (c.is_original ? "true" : "false") << "," << outcome_name(t.outcome) << ","
       << (t.memory.ranks.empty() ? "" : fmt("%.3f", t.memory.worst_peak / kGiB)) << ","
       << (t.memory.ranks.empty() ? "" : fmt("%.3f", t.memory.ranks.front().capacity / kGiB)) << ","
       << (ranked_result ? fmt("%.6g", t.result->samples_per_s) : "") << ","
       << (ranked_result ? fmt("%.6g", t.tflops_per_accelerator) : "") << ","
       << (ranked_result ? fmt("%.6g", t.result->step_time) : "") << ",\"" << reason << "\","
       << (c.cp > 1 ? c.cp_comm : "") << "\n";
  };
  std::size_t k = 0;
  for (const auto* t : ranked(r)) line(std::to_string(++k), *t);
  for (const auto& t : r.trials)
    if (t.outcome != Outcome::simulated) line("", t);
}

}  // namespace trainsim::search

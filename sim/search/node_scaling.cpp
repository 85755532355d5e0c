#include "search/node_scaling.hpp"

#include <algorithm>

#include "core/text_format.hpp"
#include "search/search_report.hpp"

namespace trainsim::search {

namespace {

using text::fmt;
using text::pad;

std::size_t count(const SearchResult& r, Outcome o) {
  return static_cast<std::size_t>(std::count_if(r.trials.begin(), r.trials.end(),
                                                [o](const Trial& t) { return t.outcome == o; }));
}

/// Why a node count has no fastest layout.
std::string why_none(const SearchResult& r) {
  if (r.trials.empty())
    return "every layout set aside" +
           (r.skipped.empty() ? std::string() : ": " + r.skipped.front().reason);
  return "no layout fits and simulates (" + std::to_string(count(r, Outcome::out_of_memory)) +
         " out of memory)";
}

std::string original_text(const ScalingRow& row) {
  if (!row.original) return "-";
  if (row.original->outcome != Outcome::simulated) return outcome_name(row.original->outcome);
  return fmt("%.2f", row.original->result->samples_per_s);
}

}  // namespace

NodeScaling run_node_scaling(const std::string& scenario_file, SearchOptions options,
                             std::vector<int> node_counts, std::ostream& progress) {
  std::sort(node_counts.begin(), node_counts.end());
  node_counts.erase(std::unique(node_counts.begin(), node_counts.end()), node_counts.end());
  NodeScaling out;
  options.allow_no_candidates = true;
  for (const int nodes : node_counts) {
    options.nodes = nodes;
    out.rows.push_back({run_search(scenario_file, options, progress)});
  }
  summarise(out);
  return out;
}

void summarise(NodeScaling& scaling) {
  const ScalingRow* base = nullptr;
  for (auto& row : scaling.rows) {
    const auto best = ranked(row.search);
    row.best = best.empty() ? nullptr : best.front();
    const auto own = std::find_if(row.search.trials.begin(), row.search.trials.end(),
                                  [](const Trial& t) { return t.candidate.is_original; });
    row.original = own == row.search.trials.end() ? nullptr : &*own;
    if (!row.best) continue;
    const double rate = row.best->result->samples_per_s;
    row.accelerator_hours_per_million_samples =
        rate > 0 ? static_cast<double>(row.search.accelerators) * 1e6 / rate / 3600.0 : 0;
    if (!base) base = &row;
    row.speedup = rate / base->best->result->samples_per_s;
    row.efficiency = row.speedup * static_cast<double>(base->search.accelerators) /
                     static_cast<double>(row.search.accelerators);
  }
  const ScalingRow* cheapest = nullptr;
  const ScalingRow* fastest = nullptr;
  for (const auto& row : scaling.rows) {
    if (!row.best) continue;
    if (scaling.fewest_nodes < 0) scaling.fewest_nodes = row.search.nodes;
    if (!cheapest ||
        row.accelerator_hours_per_million_samples < cheapest->accelerator_hours_per_million_samples)
      cheapest = &row;
    if (!fastest || row.best->result->samples_per_s > fastest->best->result->samples_per_s)
      fastest = &row;
  }
  if (cheapest) scaling.cheapest_nodes = cheapest->search.nodes;
  if (fastest) scaling.fastest_nodes = fastest->search.nodes;
}

void write_scaling_table(std::ostream& os, const NodeScaling& s) {
  if (s.rows.empty()) return;
  const auto& first = s.rows.front().search;
  os << "scaling: point \"" << first.point_label << "\": " << first.model << " on "
     << first.topology << ", global batch " << first.global_batch
     << " sequences per step; the fastest layout at each node count\n\n"
     << "nodes  accelerators  simulated  oom    samples/s    step (s)  speed-up  efficiency  "
        "acc-h/1M samples"
        "  point's layout  fastest layout\n";
  for (const auto& row : s.rows) {
    const auto& r = row.search;
    os << pad(std::to_string(r.nodes), 5) << pad(std::to_string(r.accelerators), 14)
       << pad(std::to_string(count(r, Outcome::simulated)), 11)
       << pad(std::to_string(count(r, Outcome::out_of_memory)), 5);
    if (!row.best) {
      os << "  " << why_none(r) << "\n";
      continue;
    }
    os << pad(fmt("%.2f", row.best->result->samples_per_s), 13)
       << pad(fmt("%.4f", row.best->result->step_time), 12) << pad(fmt("%.2fx", row.speedup), 10)
       << pad(fmt("%.0f%%", 100 * row.efficiency), 12)
       << pad(fmt("%.1f", row.accelerator_hours_per_million_samples), 18)
       << pad(original_text(row), 16) << "  " << row.best->candidate.label() << "\n";
  }
  if (s.fewest_nodes > 0)
    os << "\nfewest nodes that fit: " << s.fewest_nodes
       << "; fewest accelerator-hours per million samples: " << s.cheapest_nodes
       << (s.cheapest_nodes == 1 ? " node" : " nodes") << "; fastest: " << s.fastest_nodes
       << (s.fastest_nodes == 1 ? " node" : " nodes") << "\n";
  else
    os << "\nno node count searched has a layout that fits and simulates\n";
  os << "\n(speed-up and efficiency against the smallest node count with a layout; acc-h/1M "
        "samples: accelerator-hours per million samples at the fastest layout; point's layout: "
        "samples/s of the point's own layout (schedule, degrees, micro-batch, switches, shard "
        "group) at that count; every layout in --format json/csv)\n";
}

void write_scaling_json(std::ostream& os, const NodeScaling& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!s.rows.empty()) {
    j = searched_point_json(s.rows.front().search);
    j["global_batch"] = s.rows.front().search.global_batch;
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : s.rows) {
    nlohmann::ordered_json r;
    r["nodes"] = row.search.nodes;
    r["accelerators"] = row.search.accelerators;
    r["fastest"] = row.best ? trial_json(*row.best) : nlohmann::ordered_json(nullptr);
    r["original"] = row.original ? trial_json(*row.original) : nlohmann::ordered_json(nullptr);
    if (row.best) {
      r["speedup"] = row.speedup;
      r["efficiency"] = row.efficiency;
      r["accelerator_hours_per_million_samples"] = row.accelerator_hours_per_million_samples;
    } else {
      r["reason"] = why_none(row.search);
    }
    r["search"] = search_json(row.search);
    rows.push_back(std::move(r));
  }
  j["scaling"] = rows;
  auto nodes_or_null = [](int n) {
    return n > 0 ? nlohmann::ordered_json(n) : nlohmann::ordered_json(nullptr);
  };
  j["fewest_nodes"] = nodes_or_null(s.fewest_nodes);
  j["cheapest_nodes"] = nodes_or_null(s.cheapest_nodes);
  j["fastest_nodes"] = nodes_or_null(s.fastest_nodes);
  os << j.dump(1) << "\n";
}

void write_scaling_csv(std::ostream& os, const NodeScaling& s) {
  os << "nodes,accelerators," << search_csv_header() << "\n";
  for (const auto& row : s.rows)
    write_search_csv_rows(
        os, row.search,
        std::to_string(row.search.nodes) + "," + std::to_string(row.search.accelerators) + ",");
}

}  // namespace trainsim::search

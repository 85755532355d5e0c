#pragma once
// A layout search's results: the fastest layouts as a table (the point's own layout marked, with
// how much faster the best is), what did not fit and why others were invalid; the whole search as
// JSON or CSV for tools. Output depends only on the results: no wall times, byte-identical runs.
#include <nlohmann/json.hpp>
#include <ostream>

#include "search/layout_search.hpp"

namespace trainsim::search {

/// `top`: simulated layouts shown (0: all).
void write_search_table(std::ostream& os, const SearchResult& r, std::size_t top);
void write_search_json(std::ostream& os, const SearchResult& r);
/// The searched point: scenario, point, model and topology (the same at every node count).
[[nodiscard]] nlohmann::ordered_json searched_point_json(const SearchResult& r);
/// What write_search_json writes, as a value (node_scaling nests one per node count).
[[nodiscard]] nlohmann::ordered_json search_json(const SearchResult& r);
/// One trial as the JSON lists it.
[[nodiscard]] nlohmann::ordered_json trial_json(const Trial& t);
/// The CSV's rows without its header, each after `prefix` (node_scaling's "nodes,accelerators,").
void write_search_csv_rows(std::ostream& os, const SearchResult& r, const std::string& prefix);
/// The CSV's header line, without its newline.
[[nodiscard]] std::string search_csv_header();
void write_search_csv(std::ostream& os, const SearchResult& r);

}  // namespace trainsim::search

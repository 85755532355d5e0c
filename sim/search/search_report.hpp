#pragma once
// A layout search's results: the fastest layouts as a table (the point's own layout marked, with
// how much faster the best is), what did not fit and why others were invalid; the whole search as
// JSON or CSV for tools. Output depends only on the results: no wall times, byte-identical runs.
#include <ostream>

#include "search/layout_search.hpp"

namespace trainsim::search {

/// `top`: simulated layouts shown (0: all).
void write_search_table(std::ostream& os, const SearchResult& r, std::size_t top);
void write_search_json(std::ostream& os, const SearchResult& r);
void write_search_csv(std::ostream& os, const SearchResult& r);

}  // namespace trainsim::search

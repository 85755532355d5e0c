#include "core/rank_list.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <stdexcept>

namespace trainsim {

namespace {

const char* const kExpected = "expected ranks and ranges separated by commas, such as 0,8-15";

int parse_rank(const std::string& digits, const std::string& item) {
  if (digits.empty() || digits.size() > 9)
    throw std::invalid_argument("bad item \"" + item + "\": " + kExpected);
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      throw std::invalid_argument("bad item \"" + item + "\": " + kExpected);
  return std::stoi(digits);
}

}  // namespace

bool RankList::contains(int rank) const {
  if (all()) return true;
  for (const auto& [first, last] : ranges)
    if (rank >= first && rank <= last) return true;
  return false;
}

int RankList::first() const {
  int lowest = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    lowest = i == 0 ? ranges[i].first : std::min(lowest, ranges[i].first);
  return lowest;
}

std::vector<bool> RankList::mask(int world) const {
  std::vector<bool> keep(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) keep[static_cast<std::size_t>(r)] = contains(r);
  return keep;
}

RankList parse_rank_list(const std::string& text) {
  if (text.empty()) throw std::invalid_argument(std::string("empty list: ") + kExpected);
  RankList list;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const std::size_t dash = item.find('-');
    const int first = parse_rank(item.substr(0, dash), item);
    const int last = dash == std::string::npos ? first : parse_rank(item.substr(dash + 1), item);
    if (last < first)
      throw std::invalid_argument("bad range \"" + item + "\": its first rank is above its last");
    list.ranges.emplace_back(first, last);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return list;
}

}  // namespace trainsim

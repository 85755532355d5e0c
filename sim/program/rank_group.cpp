#include "program/rank_group.hpp"

#include <deque>
#include <mutex>
#include <ostream>
#include <unordered_map>

#include "core/error.hpp"

namespace trainsim::program {

namespace {

struct GroupHash {
  std::size_t operator()(const std::vector<int>* g) const {
    std::uint64_t h = g->size();
    for (int r : *g) h ^= static_cast<std::uint32_t>(r) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

struct GroupEqual {
  bool operator()(const std::vector<int>* a, const std::vector<int>* b) const { return *a == *b; }
};

struct GroupTable {
  std::mutex mutex;
  std::deque<RankGroup::Entry> entries;  // a deque never moves its elements: the pointers stay valid
  std::unordered_map<const std::vector<int>*, const RankGroup::Entry*, GroupHash, GroupEqual> index;

  GroupTable() { intern({}); }

  const RankGroup::Entry* intern(const std::vector<int>& ranks) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = index.find(&ranks); it != index.end()) return it->second;
    TRAINSIM_CHECK(entries.size() < UINT32_MAX, "too many distinct collective groups");
    entries.push_back({ranks, static_cast<std::uint32_t>(entries.size())});
    const auto* e = &entries.back();
    index.emplace(&e->ranks, e);
    return e;
  }
};

GroupTable& table() {
  // Never destroyed: groups may be read by destructors of other static objects.
  static auto* t = new GroupTable;
  return *t;
}

}  // namespace

RankGroup::RankGroup() : entry_(&table().entries.front()) {}

RankGroup::RankGroup(const std::vector<int>& ranks) : entry_(table().intern(ranks)) {}

RankGroup::RankGroup(std::initializer_list<int> ranks) : RankGroup(std::vector<int>(ranks)) {}

std::ostream& operator<<(std::ostream& os, const RankGroup& g) {
  os << '{';
  for (std::size_t i = 0; i < g.size(); ++i) os << (i ? ", " : "") << g[i];
  return os << '}';
}

}  // namespace trainsim::program

#include "program/alike_merged_calls.hpp"

#include <cstdint>
#include <cstring>
#include <tuple>
#include <unordered_map>

namespace trainsim::program {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

/// What one merged call's calls add up to, gathered in one pass over the calls.
struct Summary {
  std::uint64_t hash = 0;  ///< of the calls' (group, repeat), in order
  Bytes size = 0;          ///< its first call's
  std::uint32_t calls = 0;
  collective::Op op = collective::Op::all_reduce;  ///< its first call's
  bool mixed = false;      ///< its calls differ in op or size
};

struct Kind {
  int op;
  Bytes size;
  std::uint32_t calls;
  std::uint64_t hash;
  bool operator==(const Kind& o) const { return std::tie(op, size, calls, hash) == std::tie(o.op, o.size, o.calls, o.hash); }
};

struct KindHash {
  std::size_t operator()(const Kind& k) const {
    std::uint64_t size_bits = 0;
    std::memcpy(&size_bits, &k.size, sizeof size_bits);
    return static_cast<std::size_t>(mix(mix(mix(k.hash, static_cast<std::uint64_t>(k.op)), size_bits), k.calls));
  }
};

}  // namespace

std::vector<int> alike_merged_calls(const Program& p, const RankFolding& f) {
  const std::size_t merged = f.calls.size();
  std::vector<Summary> summary(merged);
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    const auto m = static_cast<std::size_t>(f.merged_of_call[c]);
    const auto& call = p.collectives[c];
    auto& s = summary[m];
    if (s.calls == 0) {  // its first call: the calls are listed ascending
      s.op = call.op;
      s.size = call.size;
    }
    s.mixed = s.mixed || call.op != s.op || call.size != s.size;
    s.hash = mix(mix(s.hash, call.group.id()), static_cast<std::uint64_t>(call.repeat));
    ++s.calls;
  }
  // A candidate per merged call: the first with its op, size, number of calls and hash.
  std::vector<int> alike(merged, -1);
  std::unordered_map<Kind, int, KindHash> first_of_kind;
  for (std::size_t m = 0; m < merged; ++m) {
    const auto& s = summary[m];
    if (s.mixed) continue;
    const auto [it, added] = first_of_kind.try_emplace(Kind{static_cast<int>(s.op), s.size, s.calls, s.hash},
                                                       static_cast<int>(m));
    if (!added) alike[m] = it->second;
  }
  // Each candidate's calls, kept compact (a few dozen merged calls), then every call checked
  // against the candidate's call at the same place, in order: a hash collision finds no twin.
  std::unordered_map<int, std::vector<std::pair<std::uint32_t, int>>> candidate_calls;
  for (std::size_t m = 0; m < merged; ++m) {
    if (alike[m] < 0) continue;
    auto& calls = candidate_calls[alike[m]];
    if (!calls.empty()) continue;
    for (int c : f.calls[static_cast<std::size_t>(alike[m])]) {
      const auto& call = p.collectives[static_cast<std::size_t>(c)];
      calls.emplace_back(call.group.id(), call.repeat);
    }
  }
  std::vector<const std::vector<std::pair<std::uint32_t, int>>*> expected(merged, nullptr);
  for (std::size_t m = 0; m < merged; ++m)
    if (alike[m] >= 0) expected[m] = &candidate_calls.at(alike[m]);
  std::vector<std::uint32_t> place(merged, 0);
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    const auto m = static_cast<std::size_t>(f.merged_of_call[c]);
    if (alike[m] < 0) continue;
    const auto& call = p.collectives[c];
    const auto& want = (*expected[m])[place[m]++];
    if (want.first != call.group.id() || want.second != call.repeat) alike[m] = -1;
  }
  return alike;
}

}  // namespace trainsim::program

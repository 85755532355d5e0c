#include "program/program.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"

namespace trainsim::program {

namespace {

/// A task's allocation sequence must add up to the totals the allocated counter follows.
void check_allocations(const Program& p, const Task& t) {
  TRAINSIM_CHECK(t.allocations < static_cast<int>(p.allocation_sequences.size()),
                 "task " + t.name + " names an unknown allocation sequence");
  const SequenceTotals s = totals_of(p.allocation_sequences[static_cast<std::size_t>(t.allocations)]);
  auto same = [](Bytes a, Bytes b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); };
  TRAINSIM_CHECK(s.balanced, "task " + t.name + "'s allocation sequence leaves a transient tensor live or frees one twice");
  TRAINSIM_CHECK(same(s.kept + (s.task_alloc ? t.alloc : 0), t.alloc),
                 "task " + t.name + "'s allocation sequence keeps other than its allocation");
  TRAINSIM_CHECK(same(s.freed_kept, t.release), "task " + t.name + "'s allocation sequence frees other than its release");
  TRAINSIM_CHECK(same(s.transient_peak, t.workspace), "task " + t.name + "'s allocation sequence's transient peak is not its workspace");
  TRAINSIM_CHECK(t.alloc_pool < 0, "task " + t.name + " has an allocation sequence from another stream's pool");
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    case Phase::gradient_sync: return "gradient_sync";
    case Phase::parameter_sync: return "parameter_sync";
    case Phase::offload: return "offload";
    case Phase::other: return "other";
  }
  return "?";
}

const RankProgram& tasks_of(const Program& p, int rank) {
  const auto& rp = p.ranks[static_cast<std::size_t>(rank)];
  return rp.body < 0 ? rp : p.ranks[static_cast<std::size_t>(rp.body)];
}

std::vector<int> calls_of(const Program& p, int rank) {
  const auto& rp = p.ranks[static_cast<std::size_t>(rank)];
  if (rp.body >= 0) {
    if (rp.calls_from < 0) return rp.calls;
    TRAINSIM_CHECK(rp.calls_from < rank, "rank " + std::to_string(rank) + " takes its calls from rank " +
                                             std::to_string(rp.calls_from) + ", which is not a lower rank");
    std::vector<int> calls = calls_of(p, rp.calls_from);
    for (const auto& patch : rp.call_patches) {
      TRAINSIM_CHECK(patch.place >= 0 && static_cast<std::size_t>(patch.place) < calls.size(),
                     "rank " + std::to_string(rank) + " patches call place " + std::to_string(patch.place) + " of " +
                         std::to_string(calls.size()));
      calls[static_cast<std::size_t>(patch.place)] = patch.call;
    }
    return calls;
  }
  std::vector<int> calls;
  for (const auto& s : rp.streams)
    for (const auto& t : s.tasks)
      if (t.kind == TaskKind::collective) calls.push_back(t.collective);
  return calls;
}

bool shares_bodies(const Program& p) {
  return std::any_of(p.ranks.begin(), p.ranks.end(), [](const RankProgram& rp) { return rp.body >= 0; });
}

Program materialise(const Program& p) {
  Program full = p;
  for (auto& rp : full.ranks) {
    if (rp.body < 0) continue;
    const auto calls = calls_of(p, rp.rank);
    rp.streams = p.ranks[static_cast<std::size_t>(rp.body)].streams;
    std::size_t k = 0;
    for (auto& s : rp.streams)
      for (auto& t : s.tasks)
        if (t.kind == TaskKind::collective) t.collective = calls[k++];
    rp.body = -1;
    rp.calls.clear();
    rp.calls_from = -1;
    rp.call_patches.clear();
  }
  return full;
}

void validate(const Program& p) {
  std::vector<std::map<int, int>> seen(p.collectives.size());  // rank -> count
  // Where each rank issues each collective: (stream, position on that stream).
  std::vector<std::map<int, std::pair<int, int>>> where(p.ranks.size());
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    TRAINSIM_CHECK(p.ranks[r].rank == static_cast<int>(r), "rank programs must be in rank order");
    const int body = p.ranks[r].body;
    std::vector<int> calls;  // a shared body's: this rank's call at each of its collective tasks
    if (body >= 0) {
      TRAINSIM_CHECK(body < static_cast<int>(r) && p.ranks[static_cast<std::size_t>(body)].body < 0,
                     "rank " + std::to_string(r) + " shares the body of rank " + std::to_string(body) +
                         ", which is not a lower rank with tasks of its own");
      TRAINSIM_CHECK(p.ranks[r].streams.empty(), "rank " + std::to_string(r) + " shares a body but has streams");
      TRAINSIM_CHECK(p.ranks[r].resident == p.ranks[static_cast<std::size_t>(body)].resident,
                     "rank " + std::to_string(r) + " shares a body but not its resident memory");
      calls = calls_of(p, body);
      const int from = p.ranks[r].calls_from;
      if (from >= 0) {
        TRAINSIM_CHECK(from < static_cast<int>(r) &&
                           (from == body || (p.ranks[static_cast<std::size_t>(from)].body == body &&
                                             p.ranks[static_cast<std::size_t>(from)].calls_from < 0)),
                       "rank " + std::to_string(r) + " takes its calls from rank " + std::to_string(from) +
                           ", which is neither its body's owner nor a lower rank sharing that body with calls of its own");
        TRAINSIM_CHECK(p.ranks[r].calls.empty(), "rank " + std::to_string(r) + " takes its calls from another rank but lists its own");
        const auto& patches = p.ranks[r].call_patches;
        for (std::size_t k = 1; k < patches.size(); ++k)
          TRAINSIM_CHECK(patches[k - 1].place < patches[k].place,
                         "rank " + std::to_string(r) + "'s call patches are not at ascending places");
      }
      const std::vector<int> own = from >= 0 ? calls_of(p, static_cast<int>(r)) : p.ranks[r].calls;
      TRAINSIM_CHECK(calls.size() == own.size(),
                     "rank " + std::to_string(r) + " has " + std::to_string(own.size()) +
                         " calls for the " + std::to_string(calls.size()) + " collective tasks of its body");
      for (std::size_t k = 0; k < calls.size(); ++k) {
        const int c = own[k];
        TRAINSIM_CHECK(c >= 0 && c < static_cast<int>(p.collectives.size()),
                       "unknown collective for rank " + std::to_string(r));
        const auto& mine = p.collectives[static_cast<std::size_t>(c)];
        const auto& owner = p.collectives[static_cast<std::size_t>(calls[k])];
        TRAINSIM_CHECK(mine.op == owner.op && mine.size == owner.size && mine.group.size() == owner.group.size() &&
                           mine.repeat == owner.repeat,
                       "rank " + std::to_string(r) + "'s call " + mine.name + " differs from call " + owner.name +
                           " of the body it shares (op, size, group size or repeat)");
        calls[k] = c;
      }
    }
    const auto& rp = tasks_of(p, static_cast<int>(r));
    std::size_t call = 0;
    for (std::size_t si = 0; si < rp.streams.size(); ++si) {
      const auto& s = rp.streams[si];
      int position = 0;
      for (const auto& t : s.tasks) {
        for (const auto& d : t.deps) {
          TRAINSIM_CHECK(d.stream >= 0 && d.stream < static_cast<int>(rp.streams.size()),
                         "dependency on an unknown stream in task " + t.name);
          TRAINSIM_CHECK(d.index >= 0 &&
                             d.index < static_cast<int>(rp.streams[d.stream].tasks.size()),
                         "dependency on an unknown task in task " + t.name);
        }
        if (t.host_after.stream >= 0)
          TRAINSIM_CHECK(t.host_after.stream < static_cast<int>(rp.streams.size()) && t.host_after.index >= 0 &&
                             t.host_after.index < static_cast<int>(rp.streams[t.host_after.stream].tasks.size()),
                         "task " + t.name + " is issued after an unknown task");
        TRAINSIM_CHECK(t.memory_bound >= 0 && t.memory_bound <= t.duration,
                       "task " + t.name + "'s memory-bound part is not within its duration");
        if (t.kind == TaskKind::host_copy)
          TRAINSIM_CHECK(t.copy_bytes > 0, "host copy " + t.name + " moves no bytes");
        if (t.allocations >= 0) check_allocations(p, t);
        if (t.kind == TaskKind::collective) {
          // A shared body's task stands for this rank's own call at that place.
          const int c = body >= 0 ? calls[call++] : t.collective;
          TRAINSIM_CHECK(c >= 0 && c < static_cast<int>(p.collectives.size()),
                         "unknown collective in task " + t.name);
          seen[static_cast<std::size_t>(c)][static_cast<int>(r)]++;
          where[r][c] = {static_cast<int>(si), position++};
        }
      }
    }
  }
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    TRAINSIM_CHECK(p.collectives[c].repeat >= 1, "collective " + p.collectives[c].name + " repeats fewer than once");
    for (int member : p.collectives[c].group)
      TRAINSIM_CHECK(seen[c][member] == 1,
                     "collective " + p.collectives[c].name + " must appear once on rank " +
                         std::to_string(member));
    TRAINSIM_CHECK(seen[c].size() == p.collectives[c].group.size(),
                   "collective " + p.collectives[c].name + " appears on a non-member rank");
  }
  // A stream runs its collectives in order, and a collective starts when every member reaches
  // it: two collectives that share a stream on two ranks must come in the same order on both, or
  // each rank waits for the other. Collectives on different streams of a rank impose no order.
  for (std::size_t c = 0; c + 1 < p.collectives.size(); ++c) {
    const auto& g = p.collectives[c].group;
    for (std::size_t d = c + 1; d < p.collectives.size(); ++d) {
      int sign = 0;
      for (int r : g) {
        const auto& at = where[static_cast<std::size_t>(r)];
        auto it = at.find(static_cast<int>(d));
        if (it == at.end()) continue;
        const auto& here = at.at(static_cast<int>(c));
        if (here.first != it->second.first) continue;
        const int s = here.second < it->second.second ? 1 : -1;
        TRAINSIM_CHECK(sign == 0 || sign == s, "collectives " + p.collectives[c].name + " and " +
                                                   p.collectives[d].name +
                                                   " are issued in different orders");
        sign = s;
      }
    }
  }
}

}  // namespace trainsim::program
